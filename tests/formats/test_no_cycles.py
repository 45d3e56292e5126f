"""Readers and the analysis make no reference cycles: both pause the cyclic collector.

``formats.load`` and ``Session.analyze`` turn the garbage collector off while they run
(its passes over a big session's objects found nothing to free and took a quarter of
the load). That is safe only while reference counting frees whatever they drop: a cycle
made per line (a closure that refers to itself held each line's text, 480 KB on a
961 MB log) would keep every line alive until the load ends. Each file is loaded (and
analysed) with the collector off and the garbage a collection then finds is counted.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
import warnings
import weakref
from pathlib import Path

import pytest

import cacheviz
from cacheviz.model import paused_gc
from tests.conftest import REALDATA, SAMPLES


def _files() -> list[Path]:
    files = sorted(SAMPLES.glob("*.jsonl"))
    if REALDATA.is_dir():
        for folder in sorted(p for p in REALDATA.iterdir() if p.is_dir()):
            files += sorted(p for p in folder.iterdir() if p.is_file())[:2]
    return files


def _garbage_of_load(path: Path, *, analyze: bool = False) -> list[str]:
    """Type names of the objects only the cyclic collector frees after loading ``path``.

    Other threads may make garbage while the collector is off (a scan test's event loop
    or pool left running): when a collection finds any, the load is measured again with
    each object's allocation traced, and only the garbage allocated by cacheviz's code
    (or this test's) counts.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session = cacheviz.load(path)  # imports and first-use caches happen here
        if analyze:
            session.analyze().summary()
        names = _collected(path, analyze=analyze, own=False)
        if names:
            tracemalloc.start(_FRAMES)
            try:
                names = _collected(path, analyze=analyze, own=True)
            finally:
                tracemalloc.stop()
    return names


_FRAMES = 64  # frames kept per allocation: enough to reach cacheviz from any library call
_OURS = (str(Path(cacheviz.__file__).parent), __file__)


def _collected(path: Path, *, analyze: bool, own: bool) -> list[str]:
    """One load of ``path`` with the collector off, then the garbage a collection finds.

    ``own``: only the objects whose allocation traceback passes through cacheviz or
    this file (tracemalloc must be tracing).
    """
    gc.collect()
    gc.disable()
    try:
        session = cacheviz.load(path)
        if analyze:
            assert session.analyze().summary()
        assert session.calls
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        return [type(o).__name__ for o in gc.garbage if not own or _allocated_by_us(o)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def _allocated_by_us(obj: object) -> bool:
    """Whether ``obj`` was allocated (while tracing) under a frame of cacheviz or this file."""
    trace = tracemalloc.get_object_traceback(obj)
    return trace is not None and any(frame.filename.startswith(_OURS) for frame in trace)


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.name[:40])
@pytest.mark.slow
def test_a_load_leaves_no_cycles(path: Path) -> None:
    try:
        assert _garbage_of_load(path) == []
    except cacheviz.errors.TranscriptError:
        pytest.skip(f"{path.name} is not a loadable transcript")


@pytest.mark.parametrize("name", ["compaction.jsonl", "side_calls.jsonl", "reported_usage.jsonl"])
@pytest.mark.slow
def test_an_analysis_leaves_no_cycles(name: str) -> None:
    assert _garbage_of_load(SAMPLES / name, analyze=True) == []


@pytest.mark.slow
def test_a_request_log_leaves_no_cycles(tmp_path: Path) -> None:
    lines = []
    messages: list[dict] = []
    for turn in range(30):
        messages += [{"role": "user", "content": f"question {turn}"}]
        request = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": messages}
        record = {"provider": "anthropic", "model": "claude-sonnet-4-5", "request": request}
        lines.append(json.dumps(record))
        messages.append({"role": "assistant", "content": f"answer {turn}"})
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(lines) + "\n")
    assert _garbage_of_load(log, analyze=True) == []


def test_the_collector_is_paused_during_a_load_and_restored(monkeypatch) -> None:
    seen = []
    real = cacheviz.formats.READERS["cacheviz"].read

    def spy(path, **kwargs):
        seen.append(gc.isenabled())
        return real(path, **kwargs)

    monkeypatch.setattr(cacheviz.formats.READERS["cacheviz"], "read", spy)
    cacheviz.load(SAMPLES / "append_only.jsonl", "cacheviz")
    assert seen == [False]
    assert gc.isenabled()
    monkeypatch.setattr(
        "cacheviz.analysis.analyze", lambda *a, **k: seen.append(gc.isenabled()) or "done"
    )
    assert cacheviz.load(SAMPLES / "append_only.jsonl").analyze() == "done"
    assert seen == [False, False, False]
    assert gc.isenabled()
    with pytest.raises(cacheviz.errors.TranscriptError):
        cacheviz.load(SAMPLES / "README.md", "cacheviz")
    assert gc.isenabled()
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()  # a collector the caller turned off stays off
    finally:
        gc.enable()


def test_what_a_pause_kept_is_still_collected_by_a_full_collection() -> None:
    class Node:
        pass

    with paused_gc():
        node = Node()
        node.self = node  # a cycle made during the pause
        probe = weakref.ref(node)
        del node
    assert probe() is not None  # the pause collected nothing
    gc.collect()
    assert probe() is None
