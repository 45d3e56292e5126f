"""``cacheviz scan`` answers an unchanged tree from its kept answer, and only then."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest

import cacheviz
from cacheviz.cli import main
from cacheviz.scanning import _child
from cacheviz.scanning import _pool as pool_module
from cacheviz.scanning import _scanner as scanner_module

ROOT = Path(__file__).resolve().parents[2]
SONNET = "claude-sonnet-4-5-20250929"


def _usage(uncached, read, write, out):
    return {
        "input_tokens": uncached,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
        "output_tokens": out,
    }


def _records(session, n=2, day=1):
    """``n`` calls of a Claude Code session ``session`` (its own message ids)."""
    out = []
    for i in range(n):
        ts = f"2026-03-0{day}T10:0{i}:00Z"
        out.append(
            {
                "type": "user",
                "uuid": f"{session}-u{i}",
                "sessionId": session,
                "timestamp": ts,
                "isSidechain": False,
                "message": {"role": "user", "content": f"question {i} of {session}"},
            }
        )
        out.append(
            {
                "type": "assistant",
                "uuid": f"{session}-a{i}",
                "sessionId": session,
                "timestamp": ts,
                "isSidechain": False,
                "requestId": f"req_{session}_{i}",
                "message": {
                    "id": f"msg_{session}_{i}",
                    "role": "assistant",
                    "model": SONNET,
                    "content": [{"type": "text", "text": f"answer {i}"}],
                    "usage": _usage(3, 1000 * i, 2000, 20 + i),
                },
            }
        )
    return out


def _write(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture
def projects(tmp_path, monkeypatch):
    monkeypatch.setenv("CACHEVIZ_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "projects"
    _write(root / "app" / "s1.jsonl", _records("s1"))
    _write(root / "app" / "s2.jsonl", _records("s2", 3, day=2))
    _write(root / "lib" / "s3.jsonl", _records("s3", 1, day=3))
    return root


@pytest.fixture
def scans(monkeypatch):
    """How many times the CLI ran the scan itself (rather than answering from a kept answer)."""
    calls = []
    original = scanner_module.scan

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(scanner_module, "scan", counted)
    return calls


def _cli(capsys, *args):
    status = main(["scan", *map(str, args)])
    out = capsys.readouterr()
    return status, out.out, out.err


@pytest.mark.parametrize(
    "options",
    [["--json"], [], ["--by", "session"], ["--by", "week", "--json"], ["--since", "2026-03-02"]],
)
def test_an_unchanged_tree_is_answered_from_the_kept_answer(projects, capsys, scans, options):
    first = _cli(capsys, projects, *options)
    assert len(scans) == 1
    again = _cli(capsys, projects, *options)
    assert len(scans) == 1  # answered from the kept answer
    assert again == first
    fresh = _cli(capsys, projects, "--no-cache", *options)
    assert fresh == first


def _grow(root):
    path = root / "app" / "s1.jsonl"
    with path.open("a") as handle:
        handle.write("".join(json.dumps(r) + "\n" for r in _records("s1", 3)[4:]))


def _touch(root):
    path = root / "app" / "s1.jsonl"
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 7_000_000_000))


def _add(root):
    _write(root / "lib" / "s4.jsonl", _records("s4", 2, day=4))


def _remove(root):
    (root / "app" / "s2.jsonl").unlink()


def _new_folder(root):
    _write(root / "new" / "s5.jsonl", _records("s5", 1, day=5))


def _replace_keeping_size_and_mtime(root):
    """Another file at the same path, same size and mtime, other content (a new inode)."""
    path = root / "app" / "s1.jsonl"
    info = path.stat()
    text = path.read_text().replace('"output_tokens": 20', '"output_tokens": 29')
    assert len(text) == info.st_size
    temp = path.with_name("s1.tmp")
    temp.write_text(text)
    os.utime(temp, ns=(info.st_atime_ns, info.st_mtime_ns))
    temp.replace(path)


def _sub_agent(root):
    agent = _records("s1", 1, day=6)
    for record in agent:
        record["uuid"] += "-agent"
        if record["type"] == "assistant":
            record["message"]["id"] += "_agent"
    _write(root / "app" / "s1" / "subagents" / "agent-x.jsonl", agent)


@pytest.mark.parametrize(
    "change",
    [_grow, _touch, _add, _remove, _new_folder, _replace_keeping_size_and_mtime, _sub_agent],
)
def test_any_change_in_the_tree_scans_again(projects, capsys, scans, change):
    before = _cli(capsys, projects, "--json")
    change(projects)
    after = _cli(capsys, projects, "--json")
    assert len(scans) == 2
    assert after == _cli(capsys, projects, "--json", "--no-cache")
    if change not in (_touch,):
        assert after != before
    assert _cli(capsys, projects, "--json") == after  # and the new answer is kept
    assert len(scans) == 3  # (the --no-cache run)


def test_a_file_given_as_a_path_sees_a_new_sub_agent_beside_it(projects, capsys, scans):
    session = projects / "app" / "s1.jsonl"
    before = _cli(capsys, session, "--json")
    assert _cli(capsys, session, "--json") == before
    assert len(scans) == 1
    _sub_agent(projects)
    after = _cli(capsys, session, "--json")
    assert len(scans) == 2
    assert json.loads(after[1])["totals"]["calls"] == json.loads(before[1])["totals"]["calls"] + 1


def test_a_damaged_kept_answer_is_ignored(projects, capsys, scans):
    first = _cli(capsys, projects, "--json")
    (kept,) = (Path(os.environ["CACHEVIZ_CACHE_DIR"])).rglob("answers/*.json")
    kept.write_bytes(kept.read_bytes()[:-40])
    assert _cli(capsys, projects, "--json") == first
    assert len(scans) == 2


def test_no_answer_is_kept_of_a_tree_that_changed_while_it_was_scanned(
    projects, capsys, scans, monkeypatch
):
    original = pool_module.execute

    def then_grow(*args, **kwargs):
        results = original(*args, **kwargs)
        _grow(projects)  # after the files were read, before the answer is kept
        return results

    monkeypatch.setattr(pool_module, "execute", then_grow)
    stale = _cli(capsys, projects, "--json")
    monkeypatch.setattr(pool_module, "execute", original)
    now = _cli(capsys, projects, "--json")
    assert len(scans) == 2  # scanned again: the first answer was not kept
    assert now != stale
    assert now == _cli(capsys, projects, "--json", "--no-cache")


def test_parquet_report_and_no_cache_always_scan(projects, capsys, scans, tmp_path):
    _cli(capsys, projects, "--json")
    _cli(capsys, projects, "--json", "--parquet", tmp_path / "pq")
    _cli(capsys, projects, "--report", tmp_path / "scan.html")
    _cli(capsys, projects, "--no-cache")
    assert len(scans) == 4
    assert (tmp_path / "pq" / "sessions.parquet").is_file()


@pytest.mark.slow
def test_the_kept_answer_imports_neither_polars_nor_the_readers(projects, tokenizer_copies):
    tokenizer_copies.seed()  # the first process reads the tokenizer copy, not tiktoken's file
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "cacheviz", "scan", str(projects), "--json"]
    first = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    probe = (
        "import sys; from cacheviz.cli import main; status = main(sys.argv[1:]); "
        "heavy = [m for m in ('polars', 'tiktoken', 'cacheviz.formats', 'cacheviz.analysis') "
        "if m in sys.modules]; sys.stderr.write(repr(heavy)); sys.exit(status)"
    )
    again = subprocess.run(
        [sys.executable, "-c", probe, "scan", str(projects), "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert again.stdout == first.stdout
    assert again.stderr.endswith("[]")


def test_a_replaced_file_of_the_same_size_and_mtime_is_analysed_again(tmp_path):
    """The cache signature holds the inode: a file replaced by a rename is read again."""
    root = tmp_path / "projects"
    _write(root / "app" / "s1.jsonl", _records("s1"))
    first = cacheviz.scan([root], cache=tmp_path / "cache", progress=False)
    _replace_keeping_size_and_mtime(root)
    again = cacheviz.scan([root], cache=tmp_path / "cache", progress=False)
    assert first.calls["reported_output_tokens"].to_list() == [20, 21]
    assert again.calls["reported_output_tokens"].to_list() == [29, 21]


@pytest.mark.skipif(
    "forkserver" not in multiprocessing.get_all_start_methods(), reason="no fork server here"
)
def test_pool_workers_start_warm_on_one_polars_thread_and_their_server_stops(monkeypatch):
    """Workers fork from a server that loaded tiktoken and genai-prices once."""
    from multiprocessing import forkserver

    monkeypatch.syspath_prepend(os.path.dirname(__file__))  # the workers import it too
    import _probe

    server = forkserver._forkserver
    before = server._forkserver_pid
    with _child.stopped():
        workers = pool_module._spawned(2)
        try:
            seen = [workers.submit(_probe.probe).result() for _ in range(4)]
        finally:
            workers.shutdown()
        assert {s[:3] for s in seen} == {("1", True, True)}
        assert all(pid != os.getpid() for *_, pid in seen)
    assert "POLARS_MAX_THREADS" not in os.environ
    if before is None:  # the server this started is stopped (and waited for)
        assert server._forkserver_pid is None


@pytest.mark.slow
def test_a_fork_server_that_cannot_start_leaves_spawned_workers(
    projects, monkeypatch, tokenizer_copies
):
    from multiprocessing import forkserver

    tokenizer_copies.seed()  # each spawned worker reads the tokenizer copy, not tiktoken's file
    local = cacheviz.scan([projects], cache=False, jobs=1)

    def no_socket():
        raise OSError(97, "Address family not supported by protocol")

    monkeypatch.setattr(forkserver, "ensure_running", no_socket)
    monkeypatch.setattr(pool_module, "POOL_BYTES", 0)  # a pool even for this little work
    with _child.stopped():
        workers = pool_module._spawned(1)
        assert workers._mp_context.get_start_method() == "spawn"
        workers.shutdown()
    pooled = cacheviz.scan([projects], cache=False, jobs=2)
    assert pooled.calls.sort(["path", "call"]).equals(local.calls.sort(["path", "call"]))


def test_the_walk_lists_folders_as_os_walk_does(tmp_path):
    """The recorded walk visits what ``os.walk(followlinks=True)`` visits, in its order."""
    from cacheviz.scanning._walk import Tree, _folders

    root = tmp_path / "t"
    for folder in ("a/b/c", "a/d", "e", "z/y"):
        (root / folder).mkdir(parents=True)
    for file in ("a/x.jsonl", "a/b/c/y.json", "e/f", "top.txt", "z/y/w"):
        (root / file).write_text("x")
    (root / "link-to-a").symlink_to(root / "a", target_is_directory=True)
    (root / "broken").symlink_to(root / "nowhere")
    (root / "e" / "fifo").unlink(missing_ok=True)
    os.mkfifo(root / "e" / "fifo")
    tree = Tree()
    ours = list(_folders(str(root), tree))
    assert ours == list(os.walk(root, followlinks=True))
    assert tree.folders == [top for top, _, _ in ours]
