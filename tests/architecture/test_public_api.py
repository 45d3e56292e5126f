"""The declared public API (httpx's rule): a listed module, or a private one.

docs/architecture.md's "The public API" table lists what a user may import; every other
module says it is private with a leading underscore, in its own name or a folder's. The
package face (``cacheviz/__init__.py``) exports ``__all__``, eagerly or lazily through
``_LAZY``, whose ``TYPE_CHECKING`` imports give the same names from the same modules.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import re
import sys
import tomllib
from types import ModuleType

import pytest
from import_graph import PACKAGE, modules

import cacheviz
from cacheviz import _moved, _version, providers
from cacheviz.errors import CacheVizDeprecationWarning
from cacheviz.formats import _registry

ROOT = PACKAGE.parent
DOC = ROOT / "docs" / "architecture.md"
# folders of shipped files, not code a user calls: the price overlay, the built front end
RESOURCES = {"cacheviz.data", "cacheviz.static"}


def _documented() -> set[str]:
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = lines.index("## The public API")
    end = next(i for i, line in enumerate(lines[start + 1 :]) if line.startswith("## "))
    table = [line for line in lines[start : start + 1 + end] if line.startswith("| `")]
    return {name for line in table for name in re.findall(r"`([\w.]+)`", line.split("|")[1])}


def _plug_ins() -> set[str]:
    readers = {f"cacheviz.formats.{name}" for name in _registry._MODULES.values()}
    return readers | {f"cacheviz.providers.{name}" for name in providers.MODULES}


def _private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split("."))


def _folder_only(path) -> bool:
    """A folder's ``__init__`` that holds only its docstring: a place, not an API."""
    body = ast.parse(path.read_text(encoding="utf-8")).body
    return path.name == "__init__.py" and len(body) == 1 and isinstance(body[0], ast.Expr)


def test_every_module_is_documented_or_private():
    public = {m for m, path in modules().items() if not _private(m) and not _folder_only(path)}
    undeclared = public - _documented() - _plug_ins() - RESOURCES
    assert not undeclared, (
        f"public by name but in no row of {DOC.name}'s public API: {sorted(undeclared)}; "
        "name them with a leading underscore, or document them"
    )


def test_every_documented_module_imports():
    documented = _documented()
    assert "cacheviz.money.pricing" in documented  # the table was read
    for name in sorted(documented):
        assert not _private(name), name
        importlib.import_module(name)


def test_all_is_sorted_and_names_every_public_name():
    eager = {
        name
        for name, value in vars(cacheviz).items()
        if not name.startswith("_")
        and not isinstance(value, ModuleType)
        and name not in {"TYPE_CHECKING", "annotations"}
    }
    assert cacheviz.__all__ == sorted(cacheviz.__all__)
    assert set(cacheviz.__all__) == eager | set(cacheviz._LAZY) | {"__version__"}


def test_lazy_names_are_the_type_checking_imports():
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
    )
    typed = {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module.startswith("cacheviz")
        for alias in node.names
    }
    assert typed == cacheviz._LAZY


@pytest.mark.parametrize("name", sorted(cacheviz._LAZY))
def test_a_lazy_name_is_its_module_s(name):
    module = importlib.import_module(cacheviz._LAZY[name])
    assert getattr(cacheviz, name) is getattr(module, name)


@pytest.mark.parametrize(("old", "new"), sorted(_moved.MOVED.items()))
def test_an_old_path_still_imports_with_a_warning(old, new):
    assert old not in modules(), f"{old} is a module again: the alias would be shadowed"
    parent, _, leaf = old.rpartition(".")
    kept = sys.modules.pop(old, None)
    try:
        with pytest.warns(CacheVizDeprecationWarning, match=re.escape(new)):
            alias = importlib.import_module(old)
        assert alias is importlib.import_module(new)
    finally:
        sys.modules.pop(old, None)
        if kept is not None:
            sys.modules[old] = kept
        vars(sys.modules[parent]).pop(leaf, None)


def test_every_old_path_is_in_the_changelog():
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    moved = changelog[changelog.index("### Moved") :]
    for old, new in _moved.MOVED.items():
        assert f"`{old}`" in moved and f"`{new}`" in moved, old


def test_one_version_source():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"]
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["hatch"]["version"]["path"] == "cacheviz/_version.py"
    assert cacheviz.__version__ is _version.__version__
    assert importlib.metadata.version("cacheviz") == cacheviz.__version__
