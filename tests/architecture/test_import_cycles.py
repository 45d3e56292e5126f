"""No import cycle in the package but the declared entry points.

A cycle is a set of modules that reach each other through imports, at module level or
inside a function (both run; an import under ``if TYPE_CHECKING:`` does not). The entry
points of docs/architecture.md reach up on purpose and are left out; any other cycle
fails, with the arrows that close it.
"""

from __future__ import annotations

from import_graph import ENTRY_POINTS, cycles, imports


def test_no_import_cycle_but_the_entry_points():
    arrows = [a for a in imports() if (a.module, a.target) not in ENTRY_POINTS]
    found = cycles(arrows)
    closing = [
        f"{a.module}:{a.line} imports {a.target}"
        for component in found
        for a in arrows
        if a.module in component and a.target in component
    ]
    assert not found, "import cycles:\n" + "\n".join(closing)


def test_the_entry_points_close_circles():
    # an Analysis shows its widget, which reads the analysis: declared, so left out above
    assert cycles(imports()) != []


def test_a_cycle_through_a_function_is_found(tmp_path):
    package = tmp_path / "cacheviz"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("import cacheviz.b\n")
    (package / "b.py").write_text("def f():\n    from cacheviz.a import x\n")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import cacheviz.d\n"
    )
    (package / "d.py").write_text("import cacheviz.c\n")
    assert cycles(imports(package)) == [["cacheviz.a", "cacheviz.b"]]
