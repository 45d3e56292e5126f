"""The package's import graph, read from its syntax trees (nothing is imported).

An import at module level and one inside a function are both arrows: either runs. One
under ``if TYPE_CHECKING:`` is for annotations only, never runs, and is no arrow.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "cacheviz"

# The imports that reach up on purpose, each lazily inside one function (docs/architecture.md
# lists the same in its "Entry points" table): Session.analyze() is the convenience call,
# an Analysis and a scan result display as their widgets, a Recorder opens its live view.
# They are the only arrows up and the only circles the tests allow.
ENTRY_POINTS = {
    ("cacheviz.model", "cacheviz.analysis"),
    ("cacheviz.analysis", "cacheviz.ui.widget"),
    ("cacheviz.scanning._result", "cacheviz.ui._scan"),
    ("cacheviz.recording._recorder", "cacheviz.ui.live"),
}


@dataclass(frozen=True)
class Import:
    """One arrow: ``module`` imports ``target`` at ``line``."""

    module: str
    target: str
    line: int
    in_function: bool
    facade: bool = False
    """``import cacheviz`` or ``from cacheviz import NAME`` where NAME is no module."""


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of ``package`` by its dotted name (a folder's ``__init__`` by the folder's)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(tree: ast.AST, in_function: bool = False):
    """Every import statement that runs, with whether it sits inside a function."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _type_checking(node):
            for child in node.orelse:
                yield from _statements(ast.Module([child], []), in_function)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, in_function
        inner = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        yield from _statements(node, inner)


def imports(package: Path = PACKAGE) -> list[Import]:
    """Every import of another module of ``package`` (and of any other top-level name)."""
    known = modules(package)
    root = package.name

    def resolve(name: str) -> str:
        while name not in known and "." in name:
            name = name.rpartition(".")[0]
        return name

    found = []
    for module, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node, in_function in _statements(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name == root
                    target = resolve(alias.name) if alias.name.startswith(root) else alias.name
                    found.append(Import(module, target, node.lineno, in_function, facade=top))
            elif node.module and node.level == 0:
                if not (node.module == root or node.module.startswith(root + ".")):
                    found.append(Import(module, node.module, node.lineno, in_function))
                    continue
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    if full in known:
                        found.append(Import(module, full, node.lineno, in_function))
                    else:
                        facade = node.module == root
                        target = resolve(node.module)
                        found.append(Import(module, target, node.lineno, in_function, facade))
    return found


def cycles(arrows: list[Import], root: str = "cacheviz") -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    graph: dict[str, set[str]] = {}
    for arrow in arrows:
        if arrow.target.split(".")[0] == root and arrow.target != arrow.module:
            graph.setdefault(arrow.module, set()).add(arrow.target)
            graph.setdefault(arrow.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:  # recursion depth: the package's longest import chain
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)
