"""Does a scan's output depend on the local token sizes? BPE sizes vs byte sizes, per session.

``cacheviz scan`` shows no local-axis number (no ``local_tokens``, no position inside a
block), and calibration maps the local sizes of a session every call of which reports
usage onto the provider's counts. Whether its shown columns then depend on the local
sizes at all is measured here: every file is analysed twice in this process, with BPE
sizes (``sizes="tokens"``, what scan uses) and with byte sizes (``sizes="bytes"``: one
pseudo-token per 4 bytes, no tokenizer), and the columns of the scan's calls, drifts and
misses tables and the warnings are compared value for value::

    python bench/same_sizes.py [FOLDER_OR_FILE ...]

Default inputs: the samples of this checkout, every file of ../shared/realdata and,
when set, the folder ``CACHEVIZ_VERDICT_EXAMPLES`` names. A session with a call that
reports no usage is tokenized in both runs (the option falls back), so it is counted
apart. Printed per session: ``same`` or ``moves`` with the columns that differ and on how
many rows; then the CPU seconds of the prefix stage (:func:`cacheviz.analysis.prefix_lists`)
each way. Exit status 1 when a column moves.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

_SUFFIXES = {".jsonl", ".json", ".traj", ".history"}


def inputs(args: list[Path]) -> list[Path]:
    """Every file to analyse: ``args``, else the samples, realdata and the examples."""
    roots = list(args)
    if not roots:
        roots = [ROOT / "sample_sessions", ROOT.parent / "shared" / "realdata"]
        if os.environ.get("CACHEVIZ_VERDICT_EXAMPLES"):
            roots.append(Path(os.environ["CACHEVIZ_VERDICT_EXAMPLES"]))
    out: list[Path] = []
    for root in roots:
        if root.is_file():
            out.append(root)
        elif root.is_dir():
            out += sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in _SUFFIXES)
    return out


def shown(columns: object) -> dict[str, list[object]]:
    """The columns of an analysis that a scan shows (its calls, drifts, misses tables)."""
    from cacheviz import _schema

    calls, drifts, misses = columns.calls, columns.drifts, columns.costs.misses  # type: ignore[attr-defined]
    out = {f"calls.{n}": calls[n] for n in _schema.SCAN_CALLS if n in calls}
    out |= {f"drifts.{n}": drifts[n] for n in _schema.SCAN_DRIFTS if n in drifts}
    out |= {f"misses.{n}": misses[n] for n in _schema.SCAN_MISSES if n in misses}
    return out


def analysed(
    path: Path, fmt: str, sizes: str
) -> tuple[dict[str, list[object]], list[str], float, int | None]:
    """The shown columns, the warnings, the prefix stage's CPU seconds of one way.

    The last value is the number of calls, ``None`` when one of them reports no usage.
    """
    from cacheviz.analysis import AnalysisColumns, prefix_lists
    from cacheviz.formats import READERS
    from cacheviz.money._costs import cost_lists

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reader's own, the same both ways
        session = READERS[fmt].read(path, errors="raise")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.process_time()
        lists = prefix_lists(session, sizes=sizes)
        spent = time.process_time() - start
        costs = cost_lists(lists)
    columns = AnalysisColumns(
        lists, costs, lists.call_cols | costs.calls, lists.drift_cols | costs.drifts
    )
    calls = session.calls
    reported = all(c.usage and c.usage.input_tokens is not None for c in calls)
    return shown(columns), [str(w.message) for w in caught], spent, len(calls) if reported else None


def _moved(name: str, bpe: list[object], own: list[object]) -> str:
    """``name(rows)``, with the largest relative change of a numeric column's values."""
    if len(bpe) != len(own):
        return f"{name}({len(bpe)} rows -> {len(own)})"
    pairs = [(a, b) for a, b in zip(bpe, own, strict=True) if a != b]
    numbers = [
        abs(b - a) / abs(a)
        for a, b in pairs
        if isinstance(a, int | float) and isinstance(b, int | float) and a
    ]
    most = f", up to {max(numbers):.2%}" if numbers else ""
    return f"{name}({len(pairs)}{most})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", type=Path, nargs="*", help="files or folders (default: see above)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from cacheviz.errors import CacheVizError
    from cacheviz.formats import detect
    from cacheviz.request._tokens import get_encoding

    get_encoding("o200k_base")  # loaded before any timing
    moved = same = fallback = 0
    cpu = {"tokens": 0.0, "bytes": 0.0}
    for path in inputs(args.paths):
        try:
            fmt = detect(path)
            bpe, bpe_warned, bpe_cpu, n = analysed(path, fmt, "tokens")
            own, own_warned, own_cpu, _ = analysed(path, fmt, "bytes")
        except (CacheVizError, OSError, ValueError):
            continue
        if n is None:
            fallback += 1
            continue
        cpu["tokens"] += bpe_cpu
        cpu["bytes"] += own_cpu
        differ = [
            _moved(name, values, own[name]) for name, values in bpe.items() if values != own[name]
        ]
        if bpe_warned != own_warned:
            differ.append("warnings")
        label = f"{fmt} {n} calls {path.name}"
        if differ:
            moved += 1
            print(f"moves {label}: {' '.join(differ)}")
        else:
            same += 1
            print(f"same  {label}")
    print(
        f"{same} sessions the same, {moved} moved; {fallback} with a call without usage "
        f"(tokenized both ways). Prefix stage, CPU s: BPE {cpu['tokens']:.2f}, "
        f"bytes {cpu['bytes']:.2f}"
    )
    return 1 if moved else 0


if __name__ == "__main__":
    sys.exit(main())
