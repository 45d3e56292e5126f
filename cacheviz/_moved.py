"""Import paths that moved in 0.2, kept working for one release with a deprecation warning.

``import cacheviz.widget`` still gives the inspector module (now ``cacheviz.ui.widget``):
the old name is an alias of the new module object, so attributes, monkeypatching and
``isinstance`` checks behave as before. Each use warns once with the new path.

Only the paths that the README, the docs or the notebooks told users to import are kept
here; the internals that moved (every other row of CHANGELOG.md's "Moved" table) were
never documented and have no alias. ``tests/architecture/test_public_api.py`` imports
each alias.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import TYPE_CHECKING

from cacheviz.errors import CacheVizDeprecationWarning

MOVED: dict[str, str] = {
    "cacheviz.widget": "cacheviz.ui.widget",
    "cacheviz.report": "cacheviz.ui.report",
    "cacheviz.samples": "cacheviz.teach.samples",
    "cacheviz.lab": "cacheviz.teach.lab",
    "cacheviz.recorder_litellm": "cacheviz.recording.litellm_callback",
    "cacheviz.pricing": "cacheviz.money.pricing",
}
"""Old module path → new module path."""

if TYPE_CHECKING:  # the type checker holds _Alias to the Loader protocol; nothing at run time
    from importlib.abc import Loader as _Loader
else:
    _Loader = object


class _Alias(_Loader):
    """Loads an old path as the module now at its new path.

    A loader by protocol (``create_module``/``exec_module``), not a subclass of
    ``importlib.abc.Loader``: importing ``importlib.abc`` costs ~35 ms of start-up.
    """

    def __init__(self, new: str) -> None:
        self.new = new
        self._spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(
            f"{spec.name} moved to {self.new}; the old path goes away in the next release",
            CacheVizDeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(self.new)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # the import system set the alias's spec on the shared module: give it back its own
        module.__spec__ = self._spec
        module.__loader__ = self._spec.loader if self._spec else None


class _MovedFinder:
    """Finds the old paths of :data:`MOVED` (and nothing else); a meta path finder by protocol."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))


def install() -> None:
    """Put the finder on ``sys.meta_path`` once."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
