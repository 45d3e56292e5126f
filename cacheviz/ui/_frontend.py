"""The front end shipped once per kernel and once per page, whatever the widgets shown.

Every widget's ``_esm`` is the loader (``widgets/src/loader.js``, built into
``static/loader.js``: ~2 kB). The front end itself (plotly and the inspector,
:func:`cacheviz.static.bundle`, ~1.3 MB) travels at most:

* once per kernel with a widget's state: the first widget a kernel makes carries it in
  ``_shared_esm`` (bytes, a binary buffer); the loader evaluates it and keeps it on the
  page (``globalThis``) under ``_shared_esm_id``, the digest of its text;
* once per page that lacks it: a widget without the text, in a page without the module
  (a page opened or reloaded later, another browser tab, a marimo session sharing the
  process), asks with the custom message ``{"type": "shared_esm"}`` and is answered
  ``{"type": "shared_esm", "id": ...}`` with the text as the one buffer.

Only the anywidget protocol is used (synced traits and custom messages), nothing is
fetched from elsewhere, and the text sent is the package's own build: a transcript's
text never reaches it. Imports Jupyter code: not part of the core.
"""

from __future__ import annotations

import hashlib
import threading
from functools import cache
from typing import Any

import anywidget
import traitlets

from cacheviz.static import STATIC, bundle

LOADER = STATIC / "loader.js"
MISSING = """
export default { render({ el }) {
  el.textContent = "cacheviz: the inspector's front end is not built (static/inspector.js). "
    + "Run `make widgets` in the cacheviz checkout.";
} };
"""
"""The module shown when the front end was not built: it says how to build it."""


def shared_esm() -> tuple[str, bytes]:
    """The front end's id (a digest of its text) and its text.

    Read again only when a built file changed (``npm run dev`` rebuilds them while a
    kernel runs: the next widget then has a new id, and pages ask for the new text).

    Returns
    -------
    tuple of str and bytes
        The id, and the ES module (plotly and the inspector, or :data:`MISSING` when the
        front end was not built) as UTF-8.
    """
    stamps: list[tuple[int, int] | None] = []
    for name in ("plotly.js", "inspector.js"):
        try:
            stat = (STATIC / name).stat()
        except OSError:
            stamps.append(None)
        else:
            stamps.append((stat.st_mtime_ns, stat.st_size))
    return read_shared_esm(tuple(stamps))


@cache
def read_shared_esm(stamps: tuple[object, ...]) -> tuple[str, bytes]:
    """:func:`shared_esm` for the built files' ``stamps`` (modification time and size)."""
    text = (bundle("inspector.js") or MISSING).encode("utf-8")
    return hashlib.blake2b(text, digest_size=16).hexdigest(), text


def loader() -> str:
    """Every widget's ``_esm``: the built loader, or :data:`MISSING` when it was not built."""
    try:
        return LOADER.read_text("utf-8")
    except OSError:
        return MISSING


class Once:
    """A flag that the first caller of :meth:`take` gets.

    Thread-safe: live inspectors are made on a thread of their own.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.taken = False

    def take(self) -> bool:
        """True for the first call only."""
        with self._lock:
            first, self.taken = not self.taken, True
        return first


CARRIED = Once()
"""Taken by the first widget of the process: it carries the front end in its state."""


class SharedEsmWidget(anywidget.AnyWidget):
    """An anywidget whose front end is shipped once per kernel and per page (module doc).

    Subclasses get ``_esm`` (the loader), ``_shared_esm_id``, ``_shared_esm`` (the text,
    on the first widget of the process only) and the answer to ``{"type": "shared_esm"}``.
    """

    _esm = loader()
    _shared_esm_id = traitlets.Unicode("").tag(sync=True)
    _shared_esm = traitlets.Bytes(b"").tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        key, text = shared_esm()
        kwargs.setdefault("_shared_esm_id", key)
        if "_shared_esm" not in kwargs and CARRIED.take():
            kwargs["_shared_esm"] = text
        super().__init__(**kwargs)
        self.on_msg(self._send_shared_esm)

    def _send_shared_esm(self, _: Any, content: Any, buffers: Any = None) -> None:
        """Answer a page that does not have the front end yet."""
        if not (isinstance(content, dict) and content.get("type") == "shared_esm"):
            return
        key, text = shared_esm()
        self.send({"type": "shared_esm", "id": key}, buffers=[text])


__all__ = [
    "CARRIED",
    "LOADER",
    "MISSING",
    "Once",
    "SharedEsmWidget",
    "loader",
    "read_shared_esm",
    "shared_esm",
]
