"""The layers of docs/architecture.md, checked on every import in the package.

The provider registry (``cacheviz.providers``) holds facts, not pipeline stages: the
readers and the base modules may ask it (a cache directive's TTL, a provider's API).

Data flows one way: formats → tokenize → segment/shape → prefix → diagnose →
providers/pricing → analysis → ui / report / CLI. Each rule below names a layer and what
it may not import; an import inside a function counts like one at the top.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "cacheviz"

BASE = {
    "errors",
    "_schema",
    "model",
    "_seq",
    "_visible",
    "_jsonspan",
    "redact",
    "usage",
    "tokens",
    "_encodings",
    "_price_copy",
    "_usercache",
}
JUPYTER = ("anywidget", "ipywidgets", "traitlets", "IPython", "plotly", "marimo", "ipykernel")


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] == "__init__":
        return "package"
    if parts[1] in {"ui", "cli", "recording", "teach", "formats", "providers", "check", "fleet"}:
        return parts[1]
    if parts[1] in BASE:
        return "base"
    return "core"


def _imports() -> list[tuple[str, str, int]]:
    found = []
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found += [(module, alias.name, node.lineno) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.append((module, node.module, node.lineno))
                if node.module == "cacheviz":
                    found += [(module, f"cacheviz.{a.name}", node.lineno) for a in node.names]
    return found


IMPORTS = _imports()

# The entry points that reach up on purpose, each lazily inside one function: a notebook
# shows an Analysis / a scan as its widget, a Recorder opens its live view, Session.analyze
# is the convenience call, and ``python -m cacheviz`` runs the CLI.
ENTRY_POINTS = {
    ("cacheviz.analysis", "cacheviz.ui.widget"),
    ("cacheviz.fleet.result", "cacheviz.ui.fleet"),
    ("cacheviz.recording.recorder", "cacheviz.ui.live"),
    ("cacheviz.model", "cacheviz.analysis"),
    ("cacheviz.__main__", "cacheviz.cli"),
}

# (layer, forbidden target prefixes): what each layer may not import
RULES = {
    "base": (
        "cacheviz.formats",
        "cacheviz.ui",
        "cacheviz.cli",
        "cacheviz.recording",
        "cacheviz.teach",
        "cacheviz.analysis",
        "cacheviz.fleet",
        "cacheviz.check",
        "cacheviz.simulate",
        *JUPYTER,
    ),
    "formats": (
        "cacheviz.ui",
        "cacheviz.cli",
        "cacheviz.recording",
        "cacheviz.teach",
        "cacheviz.analysis",
        "cacheviz.diagnose",
        "cacheviz.costs",
        "cacheviz.simulate",
        "cacheviz.fleet",
        "cacheviz.check",
        *JUPYTER,
    ),
    "providers": (
        "cacheviz.ui",
        "cacheviz.cli",
        "cacheviz.recording",
        "cacheviz.teach",
        "cacheviz.analysis",
        "cacheviz.fleet",
        "cacheviz.check",
        *JUPYTER,
    ),
    "core": (
        "cacheviz.ui",
        "cacheviz.cli",
        "cacheviz.recording",
        "cacheviz.teach",
        "cacheviz.fleet",
        *JUPYTER,
    ),
    "check": ("cacheviz.ui", "cacheviz.cli", "cacheviz.recording", "cacheviz.teach", *JUPYTER),
    "fleet": ("cacheviz.ui", "cacheviz.cli", "cacheviz.recording", "cacheviz.teach", *JUPYTER),
    "recording": ("cacheviz.ui", "cacheviz.cli", "cacheviz.teach", *JUPYTER),
    "teach": ("cacheviz.ui", "cacheviz.cli", "cacheviz.recording", "anywidget", "ipywidgets"),
    "ui": ("cacheviz.cli",),
}


@pytest.mark.parametrize("layer", sorted(RULES))
def test_layer_imports_nothing_above_it(layer):
    bad = [
        f"{module}:{line} imports {target}"
        for module, target, line in IMPORTS
        if _layer(module) == layer
        and (module, target) not in ENTRY_POINTS
        and any(target == f or target.startswith(f + ".") for f in RULES[layer])
    ]
    assert not bad, "\n".join(bad)


def test_the_rules_see_every_layer():
    # a rule over an empty layer would pass for nothing
    seen = {_layer(module) for module, _, _ in IMPORTS}
    assert set(RULES) <= seen


def test_entry_points_reach_up_only_from_inside_a_function():
    for module, target in ENTRY_POINTS:
        path = PACKAGE.parent / (module.replace(".", "/") + ".py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = [n for n in tree.body if isinstance(n, ast.ImportFrom | ast.Import)]
        if module == "cacheviz.__main__":
            continue  # the module is the entry point
        names = {n.module for n in top if isinstance(n, ast.ImportFrom)}
        assert target not in names, f"{module} imports {target} at module level"
