"""The reader registry: every reader listed by its NAME, imported only when asked for."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from cacheviz import formats
from cacheviz.formats import _registry

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "cacheviz" / "formats"


def _reader_modules() -> set[str]:
    """Every module of cacheviz/formats that defines NAME, detect and read."""
    found = set()
    for path in FOLDER.glob("[!_]*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        names |= {
            t.id
            for n in tree.body
            if isinstance(n, ast.Assign)
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        if {"NAME", "detect", "read"} <= names:
            found.add(path.stem)
    return found


def test_every_reader_is_registered_under_its_name():
    assert set(_registry._MODULES.values()) == _reader_modules()
    for name in formats.READERS:
        assert name == formats.READERS[name].NAME
    assert len(formats.READERS) == len(_reader_modules())
    assert "claude-code" in formats.READERS
    assert "claude_code" not in formats.READERS


def test_detection_imports_only_the_readers_it_tries():
    code = (
        "import sys\n"
        "from cacheviz.formats import detect\n"
        "from pathlib import Path\n"
        "print(detect(Path('sample_sessions/append_only.jsonl')))\n"
        "print(' '.join(m for m in sys.modules if m.startswith('cacheviz.formats.')"
        " and not m.rsplit('.', 1)[1].startswith('_')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    ).stdout.split("\n")
    assert out[0] == "cacheviz"
    order = list(_registry._MODULES.values())
    tried = order[: order.index("native") + 1]  # the readers before the one that claimed it
    assert sorted(out[1].split()) == sorted(f"cacheviz.formats.{m}" for m in tried)


def test_the_typed_list_mypy_checks_is_the_registry():
    # mypy holds each module of _registered.MODULES to the Reader protocol; a reader
    # registered in _MODULES but missing there would go unchecked
    from cacheviz.formats import _registered

    listed = [module.__name__ for module in _registered.MODULES]
    assert listed == [f"cacheviz.formats.{m}" for m in _registry._MODULES.values()]


def test_every_reader_has_the_members_of_the_protocol():
    from cacheviz.formats._reader import Reader

    for name in formats.READERS:
        module = formats.READERS[name]
        assert isinstance(module, Reader), name
        assert isinstance(module.DESCRIPTION, str), name
        assert module.DESCRIPTION, name
