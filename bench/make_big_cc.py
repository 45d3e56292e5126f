"""Write a big Claude Code session by repeating a real one with fresh ids.

    python bench/make_big_cc.py --mb 220                  # /tmp/cacheviz-bench/big_cc_220.jsonl
    python bench/make_big_cc.py --mb 300 --source FILE.jsonl --out OUT.jsonl

The source (by default the largest file of ``../shared/realdata/claude_code_jsonl``) is
written again and again. In every copy the record and message ids (UUIDs, ``msg_``,
``toolu_``, ``req_``) get a copy number, so every message is a distinct block, and the
timestamps are shifted past the copy before. A copy starts with a ``compact_boundary``
record, as a long real session compacts: each copy's requests start again from its own
messages (otherwise every request would re-send the whole file, which no real session
does). The session id stays, so the file is one session. Sub-agent files are not copied.
"""

from __future__ import annotations

import argparse
import json
import re
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REALDATA = ROOT.parent / "shared" / "realdata" / "claude_code_jsonl"
_UUID = re.compile(rb"\b[0-9a-f]{8}(-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b")
_IDS = re.compile(rb"\b(msg|toolu|req|srvtoolu)_([A-Za-z0-9]{6,})")
_TS = re.compile(rb'"timestamp":"([0-9T:.\-]+)Z"')


def default_source() -> Path:
    """The largest Claude Code session of the real data (not a sub-agent file)."""
    files = [p for p in REALDATA.glob("*.jsonl") if "agent-" not in p.name]
    if not files:
        msg = f"no Claude Code session in {REALDATA}; pass --source"
        raise SystemExit(msg)
    return max(files, key=lambda p: p.stat().st_size)


def _session_id(lines: list[bytes]) -> bytes | None:
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("sessionId"), str):
            return record["sessionId"].encode()
    return None


def _span(lines: list[bytes]) -> timedelta:
    stamps = [
        datetime.fromisoformat(m.group(1).decode()) for line in lines for m in _TS.finditer(line)
    ]
    return (max(stamps) - min(stamps) + timedelta(minutes=1)) if stamps else timedelta(hours=1)


def write(source: Path, out: Path, megabytes: float) -> Path:
    """Write copies of ``source`` to ``out`` until it holds ``megabytes`` MB."""
    lines = [line for line in source.read_bytes().splitlines() if line.strip()]
    session = _session_id(lines)
    span = _span(lines)
    target = int(megabytes * 1e6)
    out.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    copy = 0
    with out.open("wb") as handle:
        while written < target:

            def uuid(match: re.Match[bytes], copy: int = copy) -> bytes:
                if match.group(0) == session:
                    return match.group(0)
                return b"%08x" % (copy * 7919 + int(match.group(0)[:8], 16) % 7919) + match.group(1)

            def ident(match: re.Match[bytes], copy: int = copy) -> bytes:
                return match.group(1) + b"_c%d" % copy + match.group(2)

            def stamp(match: re.Match[bytes], copy: int = copy) -> bytes:
                moved = datetime.fromisoformat(match.group(1).decode()) + span * copy
                return b'"timestamp":"%sZ"' % moved.isoformat(timespec="milliseconds").encode()

            chunk = []
            if copy:
                boundary = {
                    "type": "system",
                    "subtype": "compact_boundary",
                    "content": "Conversation compacted",
                    "sessionId": session.decode() if session else "bench",
                    "uuid": f"{copy:08x}-0000-4000-8000-000000000000",
                    "parentUuid": None,
                    "isSidechain": False,
                    "compactMetadata": {"trigger": "auto", "preTokens": 150000},
                }
                chunk.append(json.dumps(boundary, separators=(",", ":")).encode())
            for line in lines:
                line = _TS.sub(stamp, _IDS.sub(ident, _UUID.sub(uuid, line)))
                chunk.append(line)
            data = b"\n".join(chunk) + b"\n"
            handle.write(data)
            written += len(data)
            copy += 1
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=220.0, help="size to reach (MB)")
    parser.add_argument("--source", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    source = args.source or default_source()
    out = args.out or Path(f"/tmp/cacheviz-bench/big_cc_{args.mb:g}.jsonl")
    write(source, out, args.mb)
    print(f"{out}: {out.stat().st_size / 1e6:,.0f} MB from {source.name}")


if __name__ == "__main__":
    main()
