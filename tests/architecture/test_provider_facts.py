"""No provider fact outside its profile (``cacheviz/providers/<name>.py``).

A provider's id, its TTLs and its minimum cacheable prefix are written once, in its
profile; every other module asks :mod:`cacheviz.providers`. Readers (``formats/``), the
recorders and the sample generator name providers because the data they read or write
does; everything else may not. The scan is over the syntax tree, docstrings excluded.
"""

from __future__ import annotations

import ast
from pathlib import Path

from cacheviz import providers

PACKAGE = Path(__file__).resolve().parents[2] / "cacheviz"
EXEMPT = ("providers/", "formats/", "recording/", "teach/", "static/", "data/")
NAMES = {name for p in providers.profiles() for name in (p.id, *p.aliases)}
# the lifetimes and minimums of the profiles: a module restating one is a second copy
NUMBERS = {
    int(n)
    for p in providers.profiles()
    for n in (*p.ttls.values(), p.default_ttl_seconds or 0)
    if n
} | {1024, 2048, 4096}
# constants that merely share a value with a provider fact, each with its reason
ALLOWED = {
    ("_util/seq.py", "_CHUNK"): "bytes compared per step",
    ("money/_simulate.py", "MATERIAL_TOKENS"): "cacheviz's own threshold of a material shortfall",
    ("ui/_detail.py", "MAX_SEGMENTS"): "rows of the segment list",
    ("scanning/_walk.py", "claude"): "a folder name (~/.config/claude)",
    ("scanning/_walk.py", "grok"): "a format name (Grok Build's ~/.grok/sessions)",
    ("redact.py", "openai"): "the name of a detect-secrets plugin",
    ("_limits.py", "STREAM"): "MiB read from a stream at most",
    ("_limits.py", "UNIT_SECONDS"): "seconds a scan gives one session",
}


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, kinds)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def _allowed_constants(rel: str, tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            names = {t.id for t in node.targets if isinstance(t, ast.Name)}
            if any((rel, name) in ALLOWED for name in names):
                out |= {id(c) for c in ast.walk(node.value) if isinstance(c, ast.Constant)}
    return out


def _facts(package: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel.startswith(EXEMPT):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _docstrings(tree) | _allowed_constants(rel, tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant) or id(node) in skip:
                continue
            value = node.value
            if isinstance(value, str) and value in NAMES and (rel, value) not in ALLOWED:
                found.append(f"{rel}:{node.lineno}: provider name {value!r}")
            elif type(value) is int and value in NUMBERS:
                found.append(f"{rel}:{node.lineno}: provider number {value}")
    return found


def test_no_provider_fact_outside_the_profiles():
    assert _facts() == []


def test_the_check_sees_a_planted_fact(tmp_path):
    # the scan must be able to fail: a module that restates a TTL and branches on a name
    (tmp_path / "planted.py").write_text('TTL = 3600\nok = provider == "anthropic"\n')
    assert _facts(tmp_path) == [
        "planted.py:1: provider number 3600",
        "planted.py:2: provider name 'anthropic'",
    ]


def test_every_profile_is_complete():
    for profile in providers.profiles():
        assert providers.simulator_class(profile.id).__name__ == profile.simulator
        assert profile.self_hosted or profile.reference_model, profile.id
        assert profile.self_hosted or profile.default_ttl_seconds, profile.id
        assert providers.profile(profile.id) is profile
        for alias in profile.aliases:
            assert providers.profile(alias.upper()) is profile
