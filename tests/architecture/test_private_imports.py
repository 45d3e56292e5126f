"""No module of the package reaches into another module's private names.

The rule, checked on every module of ``cacheviz`` (an import inside a function or under
``TYPE_CHECKING`` counts like one at the top):

* A private **name** (a leading underscore, not a dunder) belongs to the module that
  defines it. No other module imports it (``from cacheviz.money._costs import _cost``, also
  from a private module: ``from cacheviz.formats._body import _one_line``). A step two
  modules need is a public, documented function of the module that owns it, and both
  call it (issue 27: the live path calls the batch path's step functions, so a number
  is computed in one place). Reading a private name off an imported module
  (``native._EXPECTED``) is the same reach; the few left are listed in :data:`READS`.
* A private **module** (``cacheviz._schema``, ``cacheviz.request._blocks``) is internal to
  the package ``cacheviz`` as a whole, as in httpx: any module of the package may import
  it and its public names, in the direction the layers allow
  (``tests/architecture/test_import_rules.py``); code outside the package uses the public
  API (docs/architecture.md). So the check here is about names only.

:data:`READS` only shrinks: an entry no module needs any more fails
:func:`test_the_listed_exceptions_still_occur`, so it is struck off when fixed.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "cacheviz"

# private names read off an imported module, each with why it is still read
READS = {
    "cacheviz.formats.claude_trace._call": "mitm reads each flow as a claude-trace line",
    "cacheviz.formats.openai_log._call": "mitm reads each flow as an OpenAI capture line",
    "cacheviz.formats.cline._Task": "cline_ui's task reader extends cline's",
}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _is_module(dotted: str) -> bool:
    path = PACKAGE.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _module_of(path: Path) -> tuple[str, str]:
    """The dotted name of the module at ``path`` and its package."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
        return ".".join(parts), ".".join(parts)
    return ".".join(parts), ".".join(parts[:-1])


def _owner(dotted: str) -> str | None:
    """The package a dotted module path is private to (``None``: a public module).

    Every private module of cacheviz is the whole package's (see the module docstring).
    """
    if any(_private(part) for part in dotted.split(".")):
        return dotted.split(".")[0]
    return None


def violations(source: str, module: str, package: str) -> list[tuple[str, int, str]]:
    """``(kind, line, what)`` of each reach into a private name or module of another.

    ``kind`` is ``"name"`` (a private name imported), ``"read"`` (a private name read
    off an imported module) or ``"module"`` (a private module imported from outside its
    package).
    """
    tree = ast.parse(source)
    found: list[tuple[str, int, str]] = []
    bound: dict[str, str] = {}  # local name -> the cacheviz module it is bound to

    def inside(owner: str) -> bool:
        return module == owner or module.startswith(owner + ".")

    def imported(target: str, line: int) -> None:
        owner = _owner(target)
        if owner is not None and not inside(owner):
            found.append(("module", line, target))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "cacheviz":
                    imported(alias.name, node.lineno)
                    if alias.asname:
                        bound[alias.asname] = alias.name
                    else:
                        bound["cacheviz"] = "cacheviz"
        elif isinstance(node, ast.ImportFrom):
            source_module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source_module = ".".join([*base, *([node.module] if node.module else [])])
            if source_module.split(".")[0] != "cacheviz":
                continue
            imported(source_module, node.lineno)
            for alias in node.names:
                full = f"{source_module}.{alias.name}"
                if _is_module(full):
                    imported(full, node.lineno)
                    bound[alias.asname or alias.name] = full
                elif _private(alias.name) and source_module != module:
                    found.append(("name", node.lineno, full))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        chain = []
        base: ast.expr = node
        while isinstance(base, ast.Attribute):
            chain.append(base.attr)
            base = base.value
        if not isinstance(base, ast.Name) or base.id not in bound:
            continue
        dotted = bound[base.id]
        for attr in reversed(chain):  # the modules named, then the first other name
            if _is_module(f"{dotted}.{attr}"):
                dotted = f"{dotted}.{attr}"
                continue
            if _private(attr) and dotted != module and attr == node.attr:
                found.append(("read", node.lineno, f"{dotted}.{attr}"))
            break
    return found


def _all() -> list[tuple[str, str, int, str]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module, package = _module_of(path)
        shown = path.relative_to(PACKAGE.parent).as_posix()
        source = path.read_text(encoding="utf-8")
        out += [
            (kind, shown, line, what) for kind, line, what in violations(source, module, package)
        ]
    return out


FOUND = _all()


def _listed(kind: str, allowed: dict[str, str]) -> list[str]:
    return [
        f"{path}:{line}: {what}"
        for found_kind, path, line, what in FOUND
        if found_kind == kind and what not in allowed
    ]


def test_no_module_imports_another_modules_private_name():
    bad = _listed("name", {})
    assert not bad, (
        "private names imported from another module (make the step a public, documented "
        "function of its module and call that):\n" + "\n".join(bad)
    )


def test_no_module_reads_a_new_private_name_off_another():
    bad = _listed("read", READS)
    assert not bad, "private names read off another module:\n" + "\n".join(bad)


def test_the_listed_exceptions_still_occur():
    seen = {(kind, what) for kind, _, _, what in FOUND}
    stale = [f"READS: {w}" for w in READS if ("read", w) not in seen]
    assert not stale, "no longer needed, strike them off:\n" + "\n".join(stale)


def test_the_check_finds_each_kind_of_reach():
    source = """
from cacheviz import _schema
from cacheviz.money._costs import _cost, billed_cost
from cacheviz.formats._body import _one_line, body_calls
from cacheviz.formats import native
from cacheviz.providers._base import SimCall
import cacheviz.formats.native as nat

native._EXPECTED
nat._call_from_line(1).index
native.read
_schema.CALLS
"""
    assert sorted(violations(source, "cacheviz.live._incremental", "cacheviz")) == [
        ("name", 3, "cacheviz.money._costs._cost"),
        ("name", 4, "cacheviz.formats._body._one_line"),
        ("read", 9, "cacheviz.formats.native._EXPECTED"),
        ("read", 10, "cacheviz.formats.native._call_from_line"),
    ]
    # inside the formats package its private modules are its own, not their private names
    relative = """
from ._lines import _BLANK, LineFilter
from . import _lines, native
from .. import _schema

_lines.WINDOW
native._EXPECTED
"""
    assert sorted(violations(relative, "cacheviz.formats.mitm", "cacheviz.formats")) == [
        ("name", 2, "cacheviz.formats._lines._BLANK"),
        ("read", 7, "cacheviz.formats.native._EXPECTED"),
    ]
    # a module's own private names are its own
    assert (
        violations("from cacheviz.money._costs import _cost", "cacheviz.money._costs", "cacheviz")
        == []
    )
