"""The same numbers before and after: summaries and report data against recorded goldens.

A speed-up or a restructure must not change what a user reads. For every bundled sample
and every file of ``../shared/realdata`` this computes the ``summary --json`` document and
the HTML report's data (tables decoded, details inflated) and compares each with the
digest recorded in ``tests/golden/numbers.json``; the bundled samples' summaries are also
kept whole (``tests/golden/summaries/``) so a difference is readable.

A change that alters the numbers *on purpose* re-records them, and the diff of the goldens
is part of the review::

    .venv/bin/python tests/core/test_same_numbers.py --update

Money depends on genai-prices' data: when the installed genai-prices is not the one the
goldens were recorded with, the comparison is skipped with both versions named.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import sys
import warnings
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
DIGESTS = GOLDEN / "numbers.json"
SUMMARIES = GOLDEN / "summaries"
SAMPLES = ROOT / "sample_sessions"
REALDATA = ROOT.parent / "shared" / "realdata"


def inputs() -> dict[str, Path]:
    """``{label: path}``: the samples, then every file of ../shared/realdata (if present)."""
    found = {f"samples/{p.name}": p for p in sorted(SAMPLES.glob("*.jsonl"))}
    if REALDATA.is_dir():
        for path in sorted(p for p in REALDATA.rglob("*") if p.is_file() and p.suffix != ".md"):
            found[f"realdata/{path.relative_to(REALDATA).as_posix()}"] = path
    return found


def _portable(doc: Any, path: Path, label: str) -> Any:
    """``doc`` with the input's path, and the folder it was loaded from, made portable.

    A folder format (Cline's task folder) names the folder, not the file: that spelling
    becomes the label's folder, so the goldens do not depend on where the checkout is.
    """
    text = json.dumps(doc, sort_keys=True, default=str, ensure_ascii=False)
    spellings = {str(path.resolve()): label, str(path): label}
    spellings |= {str(path.resolve().parent): str(Path(label).parent)}
    spellings |= {str(path.parent): str(Path(label).parent)}
    for spelling in sorted(spellings, key=len, reverse=True):
        text = text.replace(json.dumps(spelling)[1:-1], spellings[spelling])
    return json.loads(text)


def documents(label: str, path: Path) -> dict[str, Any] | None:
    """The summary and report documents of one input (None: it doesn't load)."""
    import polars as pl

    import cacheviz
    from cacheviz.errors import CacheVizError
    from cacheviz.ui.report import report_data

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            analysis = cacheviz.load(path).analyze()
        except (CacheVizError, ValueError, OSError):
            return None
        summary = analysis.summary()
        try:
            data = report_data(analysis)
        except CacheVizError as exc:
            report: Any = {"error": str(exc)}
        else:
            report = {"meta": data["meta"], "selected_call": data["selected_call"]}
            report["details"] = json.loads(gzip.decompress(base64.b64decode(data["details_gz"])))
            for name in ("timeline", "shape", "costs"):
                report[name] = pl.read_ipc_stream(base64.b64decode(data[name])).to_dicts()
    return {
        "summary": _portable(summary, path, label),
        "report": _portable(report, path, label),
    }


def digest(doc: Any) -> str:
    """A stable digest of a JSON-ready document."""
    text = json.dumps(doc, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _summary_file(label: str) -> Path:
    return SUMMARIES / f"{Path(label).name}.json"


def record() -> None:
    """Re-record every golden from this checkout."""
    SUMMARIES.mkdir(parents=True, exist_ok=True)
    entries: dict[str, Any] = {}
    for label, path in inputs().items():
        docs = documents(label, path)
        if docs is None:
            entries[label] = None
            continue
        entries[label] = {name: digest(doc) for name, doc in docs.items()}
        if label.startswith("samples/"):
            text = json.dumps(docs["summary"], indent=1, sort_keys=True, ensure_ascii=False)
            _summary_file(label).write_text(text + "\n")
    recorded = {"genai-prices": version("genai-prices"), "inputs": entries}
    DIGESTS.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    print(f"recorded {len(entries)} inputs in {DIGESTS.relative_to(ROOT)}")


def _goldens() -> dict[str, Any]:
    recorded = json.loads(DIGESTS.read_text())
    installed = version("genai-prices")
    if recorded["genai-prices"] != installed:
        pytest.skip(
            f"goldens recorded with genai-prices {recorded['genai-prices']}, "
            f"{installed} installed: its prices may differ; re-record with "
            "tests/core/test_same_numbers.py --update and review the diff"
        )
    return recorded["inputs"]


def _cases() -> list[Any]:
    cases = []
    for label, path in inputs().items():
        marks = [pytest.mark.realdata] if label.startswith("realdata/") else []
        cases.append(pytest.param(label, path, id=label, marks=marks))
    return cases


@pytest.mark.parametrize(("label", "path"), _cases())
def test_numbers_are_the_recorded_ones(label: str, path: Path) -> None:
    goldens = _goldens()
    if label not in goldens:
        pytest.skip(f"{label}: no golden recorded (a file added since); run --update")
    expected = goldens[label]
    docs = documents(label, path)
    if expected is None:
        assert docs is None, f"{label} did not load when recorded and loads now: re-record"
        return
    assert docs is not None, f"{label} loaded when recorded and does not now"
    if label.startswith("samples/"):
        whole = json.loads(_summary_file(label).read_text())
        assert docs["summary"] == whole, f"{label}: summary differs from its golden"
    for name, doc in docs.items():
        assert digest(doc) == expected[name], (
            f"{label}: the {name} data differs from the recorded golden; if on purpose, "
            "re-record with tests/core/test_same_numbers.py --update"
        )


def test_every_sample_has_a_golden() -> None:
    goldens = json.loads(DIGESTS.read_text())["inputs"]
    missing = [label for label in inputs() if label.startswith("samples/") and label not in goldens]
    assert not missing, f"samples without a golden: {missing}; run --update"


def test_portable_replaces_every_spelling_of_the_path(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    doc = {"path": str(path), "nested": [f"see {path.resolve()}"], "n": 1}
    assert _portable(doc, path, "samples/s.jsonl") == {
        "path": "samples/s.jsonl",
        "nested": ["see samples/s.jsonl"],
        "n": 1,
    }


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        raise SystemExit("usage: python tests/core/test_same_numbers.py --update")
    sys.path.insert(0, str(ROOT))
    record()
