"""The layers of docs/architecture.md, checked on every import in the package.

The folder is the layer: a module's layer is the row of its folder (or, at the root, the
row that names it) in the layer table of docs/architecture.md, read here, so the doc and
this test cannot disagree. A module imports only its own row and rows of a lower layer;
the table's "imports" column says exactly which rows each one imports. An import inside
a function counts like one at the top; one under ``if TYPE_CHECKING:`` does not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from import_graph import ENTRY_POINTS, PACKAGE, Import, imports, modules

DOC = PACKAGE.parent / "docs" / "architecture.md"
JUPYTER = ("anywidget", "ipywidgets", "traitlets", "IPython", "plotly", "marimo", "ipykernel")


@dataclass(frozen=True)
class Row:
    """One row of the layer table: its layer, what it names, and what it imports."""

    layer: int
    names: tuple[str, ...]
    imports: frozenset[str]
    jupyter: bool


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _section(title: str) -> list[str]:
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"## {title}"))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), None)
    return lines[start + 1 : end]


def _table(lines: list[str], first_header: str) -> list[list[str]]:
    """The body rows of the first table in ``lines`` whose first header is ``first_header``."""
    start = next(i for i, line in enumerate(lines) if _cells(line)[0] == first_header)
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(_cells(line))
    return rows


def layer_table() -> list[Row]:
    """The layer table of docs/architecture.md, from the ground up."""
    rows = []
    for cells in _table(_section("Layers"), "layer"):
        layer, names, _, imported = cells[:4]
        rows.append(
            Row(
                int(layer),
                tuple(re.findall(r"`([^`]+)`", names)),
                frozenset(re.findall(r"`([^`]+)`", imported)),
                "Jupyter" in imported,
            )
        )
    return rows


def _doc_entry_points() -> set[tuple[str, str]]:
    rows = _table(_section("Layers"), "from")
    return {(source.strip("`"), target.strip("`")) for source, target, *_ in rows}


MODULES = modules()
ROWS = layer_table()
IMPORTS = imports()


def place(module: str) -> str:
    """What the layer table calls ``module``: its folder (``prefix/``), or ``name.py``."""
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__.py"
    if len(parts) > 2 or MODULES[module].name == "__init__.py":
        return parts[1] + "/"
    return parts[1] + ".py"


def row_of(module: str) -> Row | None:
    return next((row for row in ROWS if place(module) in row.names), None)


def _counted(arrow: Import) -> bool:
    return (arrow.module, arrow.target) not in ENTRY_POINTS


def test_every_folder_and_root_module_has_a_row():
    unplaced = sorted({place(m) for m in MODULES if row_of(m) is None})
    assert not unplaced, f"in no row of the layer table of {DOC.name}: {unplaced}"
    named = {name for row in ROWS for name in row.names}
    assert named <= {place(m) for m in MODULES}, (
        f"a row names nothing: {named - {place(m) for m in MODULES}}"
    )
    assert [row.layer for row in ROWS] == sorted(row.layer for row in ROWS)


def test_a_layer_imports_only_its_own_row_and_the_layers_below():
    bad = []
    for arrow in filter(_counted, IMPORTS):
        if arrow.target.split(".")[0] != "cacheviz":
            continue
        source, target = row_of(arrow.module), row_of(arrow.target)
        if source is not target and target.layer >= source.layer:
            bad.append(
                f"{arrow.module}:{arrow.line} imports {arrow.target} "
                f"(layer {source.layer} {place(arrow.module)} → layer {target.layer} "
                f"{place(arrow.target)})"
            )
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.names[0])
def test_the_table_says_what_each_row_imports(row):
    imported, jupyter = set(), False
    for arrow in filter(_counted, IMPORTS):
        if row_of(arrow.module) is not row:
            continue
        top = arrow.target.split(".")[0]
        if top in JUPYTER:
            jupyter = True
        elif top == "cacheviz" and row_of(arrow.target) is not row:
            imported.add(place(arrow.target))
    assert (sorted(imported), jupyter) == (sorted(row.imports), row.jupyter), (
        f"{DOC.name}: the row of {', '.join(row.names)} should read: "
        + ", ".join(f"`{name}`" for name in sorted(imported))
        + (", Jupyter" if jupyter else "")
    )


def test_no_module_imports_the_package_face():
    bad = [
        f"{arrow.module}:{arrow.line} imports the package `cacheviz`; import the defining module"
        for arrow in IMPORTS
        if arrow.facade and arrow.module != "cacheviz"
    ]
    assert not bad, "\n".join(bad)


def test_the_entry_points_are_the_documented_ones():
    assert _doc_entry_points() == ENTRY_POINTS


@pytest.mark.parametrize(("module", "target"), sorted(ENTRY_POINTS))
def test_an_entry_point_reaches_up_only_from_inside_a_function(module, target):
    found = [a for a in IMPORTS if (a.module, a.target) == (module, target)]
    assert found, f"{module} no longer imports {target}: drop the entry point"
    assert all(a.in_function for a in found), f"{module} imports {target} at module level"
    assert row_of(target).layer > row_of(module).layer, "not up: no entry point needed"


def test_the_rules_can_fail(tmp_path):
    # the graph the rules read must see an import inside a function, and skip one that
    # only annotations use
    package = tmp_path / "cacheviz"
    (package / "low").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "low" / "__init__.py").write_text("")
    (package / "high.py").write_text("")
    (package / "low" / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from cacheviz.high import X\n"
        "def f():\n    import cacheviz.high\n    from cacheviz import load\n"
    )
    found = {(a.target, a.line, a.in_function, a.facade) for a in imports(package)}
    assert found == {("typing", 1, False, False), ("cacheviz.high", 5, True, False)} | {
        ("cacheviz", 6, True, True)
    }
