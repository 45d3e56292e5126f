"""Benchmark: redacting the content browser's texts, this checkout against another.

    python bench/bench_redact.py                          # against /work/ref-main
    python bench/bench_redact.py --root /path/to/checkout --calls 600 --repeat 7

Loads the ``--calls``-call log ``bench/bench_report.py`` generates (made when missing),
records every text the report's content browser (``content.all_contents``) hands to
``redact.secret_spans``, then in this one process times, in CPU seconds, best of
``--repeat``:

* ``secret_spans`` of each distinct text, with this checkout's ``cacheviz/redact.py``
  and with the other's (loaded from its file as a separate module), split into texts
  of at most 256 characters and longer ones;
* the whole content browser with either module's ``secret_spans``.

Both must give the same spans for every text (checked, and printed). Only ratios within
one run are quoted; the load average is printed.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

from _shared import best_seconds

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def _other(root: Path):
    spec = importlib.util.spec_from_file_location("other_redact", root / "cacheviz" / "redact.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("/work/ref-main"))
    parser.add_argument("--calls", type=int, default=600)
    parser.add_argument("--out", type=Path, default=Path("/tmp/cacheviz-bench"))
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from bench_analysis import generate

    import cacheviz
    from cacheviz import redact
    from cacheviz.ui import _content as content
    from cacheviz.ui import _segment_rows as segment_rows
    from cacheviz.ui.report import TEXT_CHARS, _shown

    path = args.out / f"long_session_{args.calls}.jsonl"
    if not path.exists():
        args.out.mkdir(parents=True, exist_ok=True)
        generate(path, args.calls)
    analysis = cacheviz.load(path).analyze()
    rows = segment_rows.report_rows(analysis)
    other = _other(args.root.resolve())
    own_spans = redact.secret_spans
    seen: list[str] = []

    def recording(text: str):
        seen.append(text)
        return own_spans(text)

    def browse() -> None:
        content.all_contents(analysis, {}, TEXT_CHARS, finish=_shown, rows=rows)

    redact.secret_spans = recording
    try:
        browse()
    finally:
        redact.secret_spans = own_spans
    texts = list(dict.fromkeys(seen))
    short = [t for t in texts if len(t) <= 256]
    long = [t for t in texts if len(t) > 256]
    same = [own_spans(t) for t in texts] == [other.secret_spans(t) for t in texts]
    load = " / ".join(f"{v:.1f}" for v in os.getloadavg())
    print(
        f"{args.calls} calls (load {load}): the content browser redacts {len(texts):,} "
        f"distinct texts ({len(short):,} of <= 256 characters, {len(long)} longer: "
        f"{sum(map(len, long)):,} of {sum(map(len, texts)):,} characters); "
        f"same spans as {args.root}: {same}"
    )
    for name, group in (("all", texts), ("<= 256", short), ("> 256", long)):
        mine = best_seconds(
            lambda group=group: [own_spans(t) for t in group], args.repeat, time.process_time
        )
        theirs = best_seconds(
            lambda group=group: [other.secret_spans(t) for t in group],
            args.repeat,
            time.process_time,
        )
        print(
            f"  secret_spans, {name} texts: {theirs:.4f} -> {mine:.4f} CPU-s ({mine / theirs:.2f}x)"
        )
    mine = best_seconds(browse, args.repeat, time.process_time)
    redact.secret_spans = other.secret_spans
    try:
        theirs = best_seconds(browse, args.repeat, time.process_time)
    finally:
        redact.secret_spans = own_spans
    print(f"  content browser: {theirs:.4f} -> {mine:.4f} CPU-s ({mine / theirs:.2f}x)")


if __name__ == "__main__":
    main()
