r"""A self-contained HTML report: the inspector's views for a reader without a kernel.

One file: the data (Arrow IPC tables as base64, drift details precomputed for every
drift call, the provider comparison) in a ``<script type="application/json">`` element,
and the front end (``static/report.js``) inlined. A Content-Security-Policy forbids any
network request, so the report opens offline and cannot leak. Transcript text is
untrusted: it is only ever data (the JSON is escaped so ``</script>`` and ``<!--`` inside
strings stay text; the front end builds the DOM with ``textContent``; control and bidi
characters are shown as ``\uXXXX``), and secrets are redacted (:mod:`cacheviz.redact`).
The CSP lets only the inlined script run (by its SHA-256), with no base URI and no forms.
"""

from __future__ import annotations

import base64
import gc
import gzip
import hashlib
import html
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from cacheviz._util.visible import visible, visible_all
from cacheviz.errors import CacheVizError
from cacheviz.redact import redact, redact_all
from cacheviz.static import STATIC, bundle
from cacheviz.ui import _segment_rows as segment_rows
from cacheviz.ui import _state as state
from cacheviz.ui._content import all_contents
from cacheviz.ui._detail import drift_detail, miss_of
from cacheviz.ui._shared import ipc

if TYPE_CHECKING:
    from cacheviz._writing import Inputs
    from cacheviz.analysis import Analysis

_CSP = (
    "default-src 'none'; script-src '{script}'; style-src 'unsafe-inline'; "
    "img-src data:; font-src data:; base-uri 'none'; form-action 'none'"
)


def content_security_policy(script: str) -> str:
    """The report's CSP: no network, and only the one inline script (by its SHA-256) runs."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    return _CSP.format(script=f"sha256-{digest}")


_JSON_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def embed_json(value: Any) -> str:
    """JSON safe to place inside a ``<script>`` element (no ``</script>``, no ``<!--``).

    Examples
    --------
    >>> text = embed_json({"text": "</script><!-- <script>alert(1)</script>"})
    >>> "<" in text, json.loads(text)["text"]
    (False, '</script><!-- <script>alert(1)</script>')
    """
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, default=str)
    for char, escape in _JSON_ESCAPES.items():
        text = text.replace(char, escape)
    return text


def inline_script(code: str) -> str:
    """JavaScript safe to inline in a ``<script>`` element."""
    return code.replace("</script", "<\\/script").replace("<!--", "<\\!--")


def report_data(
    analysis: Analysis,
    *,
    provider: str | None = None,
    model: str | None = None,
    targets: tuple[str, ...] | None = None,
) -> dict[str, Any]:
    """Everything the report shows, redacted, as a JSON-ready dict.

    The numbers are the inspector's (:func:`cacheviz.ui._state.build`): the same target,
    comparison and tables as the notebook shows for the same choices.
    """
    rows = segment_rows.report_rows(analysis)  # the shape and the content browser read them
    target = state.resolve_target(analysis, provider, model)
    shown = state.build(analysis, target, targets=targets, rows=rows)
    if shown.simulation is None:
        raise CacheVizError(shown.status)
    details = report_details(analysis, shown.simulation, rows)
    timeline = shown.timeline.with_columns(
        pl.col("label").map_elements(lambda t: visible(redact(t)), return_dtype=pl.String)
    )
    tables = {"timeline": timeline, "shape": shown.shape, "costs": shown.costs}
    return {
        # the tables hold numbers and segment labels only; text is redacted, not base64
        **{name: base64.b64encode(ipc(frame)).decode() for name, frame in tables.items()},
        "meta": visible_all(redact_all(shown.meta)),
        # every call's detail and content, gzip-compressed (the page inflates it on load)
        "details_gz": base64.b64encode(
            gzip.compress(embed_json(details).encode(), 6, mtime=0)
        ).decode(),
        "selected_call": state.opening_call(analysis),
    }


TEXT_CHARS = 1500  # of each segment's text in the report (the widget shows more)


def read_details(data: dict[str, Any]) -> dict[str, Any]:
    """The call details of :func:`report_data` (``details_gz``), inflated."""
    return json.loads(gzip.decompress(base64.b64decode(data["details_gz"])))


def _shown(text: str) -> str:
    """A string as the report shows it: redacted, control and bidi characters escaped."""
    return visible(redact(text))


def report_details(
    analysis: Analysis, simulation: Any, rows: segment_rows.SegmentRows | None = None
) -> dict[str, Any]:
    """The detail of every call: its drift detail, what it sent, its segments.

    Segment texts are stored once (``texts``); every string is redacted and its control
    and bidi characters escaped. The content lists (most of the document) are built
    that way, each distinct string once; the rest is walked by ``redact_all``. ``rows``
    are the segment rows the content lists are read from (:func:`segment_rows.report_rows`).
    """
    texts: dict[str, str] = {}
    contents = all_contents(analysis, texts, TEXT_CHARS, finish=_shown, rows=rows)
    drifts = {
        call: drift_detail(analysis, call, simulation=simulation, content=False)
        for call in analysis.drifts["call"].to_list()
    }
    calls: dict[str, Any] = {}
    for call in range(analysis.calls.height):
        detail = drifts.get(call)
        if detail is None:
            detail = {"call": call, "drift": False, "miss": miss_of(analysis, call)}
        calls[str(call)] = detail
    calls = visible_all(redact_all(calls))
    for call in range(analysis.calls.height):
        calls[str(call)]["content"] = contents.get(call, {"sent": [], "context": []})
    return {"calls": calls, "texts": visible_all(texts)}


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while the report's data is built.

    The data is hundreds of thousands of small dicts, lists and strings (no cycles); each
    full collection meanwhile walked every object of the analysis too (a tenth of the
    report's time). Memory is still freed by reference counting; the collector runs
    again, as it was, when the data is built.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def write_report(
    analysis: Analysis,
    path: str | Path,
    *,
    provider: str | None = None,
    model: str | None = None,
    targets: tuple[str, ...] | None = None,
    option: str | None = None,
    inputs: Inputs | None = None,
) -> Path:
    """Write the self-contained HTML report of ``analysis`` to ``path``.

    Written whole or not at all, and never over a file being read: ``inputs`` (default:
    the analysed transcript; see :mod:`cacheviz._writing`). ``option`` names the
    command-line option that chose ``path`` in an error.

    Raises
    ------
    CacheVizError
        When the front end was not built (``static/report.js`` is missing), when ``path``
        would overwrite an input, or when it cannot be written (one line; no partial file).
    """
    from cacheviz._writing import Inputs, guard, write

    if inputs is None and analysis.session.path is not None:
        inputs = Inputs.transcript(analysis.session.path)
    guard(path, inputs, option=option)  # before the work
    script = bundle("report.js")
    if script is None:
        msg = f"{STATIC} lacks report.js or plotly.js; build the front end with `make widgets`"
        raise CacheVizError(msg)
    with _collector_paused():
        data = report_data(analysis, provider=provider, model=model, targets=targets)
    title = html.escape(f"cacheviz: {data['meta']['path'] or 'session'}")
    code = inline_script(script)
    csp = content_security_policy(code)
    document = (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        f"<title>{title}</title>\n</head>\n<body>\n"
        '<div id="cacheviz-root"></div>\n'
        f'<script type="application/json" id="cacheviz-data">{embed_json(data)}</script>\n'
        f"<script>{code}</script>\n"
        "</body>\n</html>\n"
    )
    return write(path, document, what="report", option=option, inputs=inputs)
