"""Start-up: parsing the arguments imports neither polars nor the analysis nor the readers.

The names the parser offers are spelled in the CLI (so that ``cacheviz --version`` answers
without importing the registries); each is checked here against the registry it mirrors.
Start-up *time* is measured by bench/bench_startup.py, never asserted here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import cacheviz
from cacheviz.cli import _app as app
from cacheviz.cli import _scan as scan

ROOT = Path(__file__).resolve().parents[2]
HEAVY = (
    "polars",
    "tiktoken",
    "genai_prices",
    "cacheviz.analysis",
    "cacheviz.formats",
    "cacheviz.providers",
)


def test_parser_names_are_the_registries() -> None:
    from cacheviz import providers
    from cacheviz.formats import READERS
    from cacheviz.prefix._thread import THREAD_MODES
    from cacheviz.scanning._rollup import BY

    assert list(app.FORMATS) == sorted(READERS)
    assert "claude-code" in app.FORMATS
    assert "no-such-format" not in app.FORMATS
    assert app.THREAD_MODES == THREAD_MODES
    assert providers.rule_choices("ttl") == app.TTL_CHOICES
    assert tuple(app.BREAKPOINT_STRATEGIES) == providers.rule_choices("breakpoints")
    assert scan.BY == BY


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys; print('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    ).stdout
    return set(out.split())


def test_version_and_parsing_import_nothing_heavy() -> None:
    code = (
        "from cacheviz.cli._app import _parser\n"
        "_parser().parse_args(['summary', 'x.jsonl', '--thread', 'model'])\n"
        "import cacheviz"
    )
    loaded = _modules_after(code)
    assert "cacheviz.cli._app" in loaded
    heavy = sorted(m for m in loaded if m.startswith(HEAVY))
    assert heavy == []


def test_version_prints() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "cacheviz", "--version"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )
    assert out.stdout.strip() == f"cacheviz {cacheviz.__version__}"


def test_public_names_load_on_first_use() -> None:
    from cacheviz.analysis import Analysis, analyze
    from cacheviz.formats import load
    from cacheviz.model import Session
    from cacheviz.recording import Recorder, record
    from cacheviz.scanning import ScanResult
    from cacheviz.scanning import scan as scanning_scan

    assert cacheviz.Analysis is Analysis
    assert cacheviz.analyze is analyze
    assert cacheviz.ScanResult is ScanResult
    assert cacheviz.scan is scanning_scan
    assert cacheviz.load is load
    assert cacheviz.Session is Session
    assert cacheviz.Recorder is Recorder
    assert cacheviz.record is record
    assert set(cacheviz.__all__) <= set(dir(cacheviz))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        cacheviz.no_such_name  # noqa: B018 - the access is the test
