"""A request log on a full disk: whole lines only, nothing lost once space is back.

Issue 29, item 4. The full disk is real: a file-size limit (``RLIMIT_FSIZE``) set in a
child process makes the kernel write part of a line and then refuse the rest with
``EFBIG``, as a disk that fills up does (``ENOSPC``); raising the limit again is space
coming back.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

resource = pytest.importorskip("resource")

_CHILD = """
import json, resource, signal, sys, warnings
from cacheviz.recording._log import LogWriter

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a kill
warnings.simplefilter("always")
warnings.showwarning = lambda m, *a, **k: print(f"warning: {m}", file=sys.stderr)
log, limit, back = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
writer = LogWriter(log)
writer.open()
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
for i in range(20):
    writer.write(json.dumps({"call": i, "body": "x" * 90}))
if back:
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    writer.write(json.dumps({"call": 20, "body": "x" * 90}))
writer.close()
print(writer.written)
"""


def _run(tmp_path, *, back: bool):
    log = tmp_path / "calls.jsonl"
    log.write_text('{"call": -1}\n')
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(log), "450", "1" if back else "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return log, done.stderr.splitlines()


def test_every_call_is_written_once_space_is_back(tmp_path):
    log, err = _run(tmp_path, back=True)
    raw = log.read_text()
    assert raw.endswith("\n")
    calls = [json.loads(line)["call"] for line in raw.splitlines()]  # every line whole
    assert calls == list(range(-1, 21))  # none lost, none doubled, in order
    failed = [e for e in err if "can't write the request log" in e]
    assert len(failed) == 1  # said once, in one line: the path, why, what to do
    assert str(log) in failed[0] and "file-size limit" in failed[0]
    assert "free space or pick another path" in failed[0]
    assert any("can be written again" in e for e in err)
    assert not any("never written" in e for e in err)


def test_calls_never_written_are_counted_at_the_end_and_no_line_is_cut(tmp_path):
    log, err = _run(tmp_path, back=False)
    raw = log.read_text()
    assert raw.endswith("\n")
    calls = [json.loads(line)["call"] for line in raw.splitlines()]
    assert calls == list(range(-1, len(calls) - 1))  # the lines that fit, whole
    assert len(raw) <= 450
    [lost] = [e for e in err if "never written" in e]
    assert f"{20 - (len(calls) - 1)} recorded call(s) were never written" in lost


def test_kept_lines_are_bounded(tmp_path):
    """Past ``keep`` bytes waiting, the oldest are dropped and counted."""
    from cacheviz.recording._log import LogWriter

    writer = LogWriter(tmp_path / "no-folder" / "calls.jsonl", keep=100)
    with pytest.warns(Warning) as caught:
        for i in range(10):
            writer.write(json.dumps({"call": i, "body": "x" * 20}))
        assert writer.unwritten == 10 and len(writer._waiting) == 2
        writer.close()
    assert any("10 recorded call(s) were never written" in str(w.message) for w in caught)
