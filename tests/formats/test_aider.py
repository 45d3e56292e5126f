import re
import warnings
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cacheviz.analysis import analyze
from cacheviz.errors import CacheVizWarning, TranscriptError
from cacheviz.formats import aider

HISTORY = "aider/jkassemi__friendly_names__.aider.llm.history"
SAMPLE_DIR = Path(__file__).resolve().parents[2] / "sample_sessions"
SYSTEM = "Act as an expert code analyst.\nAnswer questions about the supplied code.\n\nAlways reply in the same language."
REPO = (
    "I am working with you on code in a git repository.\nHere are summaries of some files present in my git repo.\n\nsrc/main.py\n"
    * 8
)
OK = "Ok, I won't try and edit those files without asking first."


def _format(messages):
    """Render messages the way aider logs them: `-------`, then `ROLE line` per line."""
    out = []
    for role, content in messages:
        out.append("-------")
        out.extend(f"{role.upper()} {line}" for line in content.splitlines())
    return "\n".join(out)


def _entry(kind, ts, body):
    return f"{kind} {ts}\n{body}\n"


def _history(turns=2):
    """`turns` calls of a growing chat, each followed by the model's response."""
    messages = [("system", SYSTEM), ("user", REPO), ("assistant", OK)]
    text = ""
    for i in range(turns):
        messages.append(("user", f"What does step {i} do?"))
        text += _entry("TO LLM", f"2025-01-31T11:2{i}:00", _format(messages))
        answer = f"Step {i} prints hello.\n\n-------\nDone."
        text += _entry(
            "LLM RESPONSE", f"2025-01-31T11:2{i}:05", _format([("assistant", answer)])[8:]
        )
        messages.append(("assistant", answer))
    return text


def _write(tmp_path, text, name=".aider.llm.history"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _read(path, errors="raise"):
    assert aider.detect(path, path.read_bytes()[: 1 << 20])
    return aider.read(path, errors=errors)


def _contents(session, call):
    return [session.contents[h].value for h in call.hashes]


def test_each_to_llm_block_is_a_call_with_its_whole_prompt(tmp_path):
    text = _history()
    session = _read(_write(tmp_path, text))
    assert session.format == "aider"
    headers = [n for n, line in enumerate(text.splitlines(), 1) if line.startswith("TO LLM ")]
    assert [c.line for c in session.calls] == headers
    assert session.ignored == {"LLM response": 2}
    first, second = session.calls
    assert (first.model, first.provider, first.api) == ("unknown", "unknown", "chat.completions")
    assert first.usage is None and first.reconstructed and first.thread_hint is None
    assert first.ts == datetime(2025, 1, 31, 11, 20, tzinfo=UTC)
    assert _contents(session, first) == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": REPO.rstrip("\n")},  # trailing newlines are not logged
        {"role": "assistant", "content": OK},
        {"role": "user", "content": "What does step 0 do?"},
    ]
    assert [b.part for b in first.blocks] == ["system", "messages", "messages", "messages"]
    # the answer, with a `-------` line of its own, is part of the next prompt
    assert _contents(session, second)[4] == {
        "role": "assistant",
        "content": "Step 0 prints hello.\n\n-------\nDone.",
    }
    calls = analyze(session).calls
    assert calls["prefix_tokens"][1] == calls["input_tokens"][0]
    assert not calls["drift"].any()


def test_empty_messages_and_multi_line_list_values(tmp_path):
    body = "\n".join(
        [
            "-------",
            "SYSTEM be brief",
            "-------",
            "USER type: text",
            "USER text: first line",
            "second line of the same value",
            "",
            "-------",
            "",  # an assistant message logged with empty content
            "-------",
            "USER",  # an empty line whose trailing space was stripped
            "USER go on",
        ]
    )
    session = _read(_write(tmp_path, _entry("TO LLM", "2025-02-01T09:00:00", body)))
    assert _contents(session, session.calls[0]) == [
        {"role": "system", "content": "be brief"},
        {
            "role": "user",
            "content": "type: text\ntext: first line\nsecond line of the same value\n",
        },
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "\ngo on"},
    ]


def test_windows_line_ends(tmp_path):
    path = tmp_path / ".aider.llm.history"
    path.write_bytes(_history().replace("\n", "\r\n").encode())
    session = _read(path)
    assert len(session.calls) == 2
    assert _contents(session, session.calls[0])[0] == {"role": "system", "content": SYSTEM}


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("hello\n" + _history(1), 1, "unexpected text 'hello' before any header"),
        ("TO LLM yesterday\n-------\nUSER hi\n", 1, "time 'yesterday' is not ISO-8601"),
        (
            "TO LLM 2025-01-31T11:21:36\nUSER hi\n",
            2,
            "expected `-------` to open a message, found 'USER hi'",
        ),
        (
            "TO LLM 2025-01-31T11:21:36\n-------\nhi\n",
            3,
            "expected `ROLE text` after `-------`, found 'hi'",
        ),
        (
            "TO LLM 2025-01-31T11:21:36\n-------\nUSER hi\nASSISTANT ok\n",
            4,
            "a ASSISTANT line inside a USER message; expected `-------`",
        ),
        (
            "TO LLM 2025-01-31T11:21:36\nLLM RESPONSE 2025-01-31T11:21:39\nASSISTANT ok\n",
            1,
            "the `TO LLM` block has no messages",
        ),
    ],
)
def test_bad_lines_are_named_in_one_line(tmp_path, text, line, reason):
    path = _write(tmp_path, text)
    with pytest.raises(TranscriptError) as caught:
        aider.read(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: {reason}")
    assert "\n" not in message


def test_invalid_utf8_names_the_line_and_skip_drops_that_block(tmp_path):
    text = _history(3).encode()
    lines = text.split(b"\n")
    bad = next(n for n, line in enumerate(lines) if line.startswith(b"USER What does step 1"))
    lines[bad] = b"USER caf\xe9"
    path = tmp_path / ".aider.llm.history"
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(TranscriptError, match=rf"llm\.history:{bad + 1}: not valid UTF-8"):
        aider.read(path)
    with pytest.warns(CacheVizWarning, match="skipped 1 bad line"):
        session = aider.read(path, errors="skip")
    assert len(session.calls) == 2 and session.skipped[0].line == bad + 1


def test_empty_and_response_only_files(tmp_path):
    path = _write(tmp_path, "\n\n")
    with pytest.raises(TranscriptError, match="file is empty"):
        aider.read(path)
    path = _write(tmp_path, "LLM RESPONSE 2025-01-31T11:21:39\nASSISTANT ok\n")
    with pytest.raises(TranscriptError, match="no `TO LLM <time>` block"):
        aider.read(path)


def test_detect(tmp_path):
    assert aider.detect(Path("x"), _history().encode())
    for path in sorted(SAMPLE_DIR.glob("*.jsonl")):
        assert not aider.detect(path, path.read_bytes()[: 1 << 20]), path
    assert not aider.detect(Path("x"), b'{"trajectory": [], "history": []}')
    assert not aider.detect(Path("x"), b"# aider chat started at 2025-01-31 11:21:30\n")


def _mutations():
    good = _history(3).encode()
    lines = good.split(b"\n")
    return st.one_of(
        st.integers(0, len(good)).map(lambda n: good[:n]),  # truncated
        st.tuples(st.integers(0, len(good) - 1), st.binary(min_size=1, max_size=3)).map(
            lambda t: good[: t[0]] + t[1] + good[t[0] + 1 :]
        ),  # bytes replaced (invalid UTF-8 too)
        st.tuples(
            st.integers(0, len(lines) - 1),
            st.sampled_from(
                [
                    b"",
                    b"-------",
                    b"USER x",
                    b"ASSISTANT",
                    b"TO LLM 2025-13-01T00:00:00",
                    b"LLM RESPONSE 2025-01-31T11:21:36",
                    b"\xff\xfe",
                ]
            ),
        ).map(lambda t: b"\n".join([*lines[: t[0]], t[1], *lines[t[0] :]])),  # a line inserted
        st.integers(0, len(lines) - 1).map(
            lambda n: b"\n".join(lines[:n] + lines[n + 1 :])
        ),  # a line dropped
    )


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=_mutations())
@pytest.mark.slow
def test_fuzzed_histories_load_or_fail_with_one_clear_line(tmp_path, text):
    path = tmp_path / "fuzz.aider.llm.history"
    path.write_bytes(text)
    for errors in ("raise", "skip"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CacheVizWarning)
                session = aider.read(path, errors=errors)
        except TranscriptError as exc:
            assert "\n" not in str(exc)
            assert str(path) in str(exc)
            continue
        assert session.calls
        analyze(session)


def test_real_history(realdata):
    path = realdata / HISTORY
    lines = path.read_text(encoding="utf-8").split("\n")
    headers = [n for n, line in enumerate(lines, 1) if line.startswith("TO LLM ")]
    responses = [line for line in lines if line.startswith("LLM RESPONSE ")]
    # messages per call: the `-------` lines between a `TO LLM` header and the next header
    sizes = []
    for n in headers:
        end = next(
            (k for k in range(n, len(lines)) if re.match(r"(TO LLM|LLM RESPONSE) ", lines[k])),
            len(lines),
        )
        sizes.append(sum(line == "-------" for line in lines[n:end]))
    assert aider.detect(path, path.read_bytes()[: 1 << 20])
    session = aider.read(path)
    assert len(session.calls) == len(headers) == 33
    assert session.ignored == {"LLM response": len(responses)} == {"LLM response": 33}
    assert [c.line for c in session.calls] == headers
    assert [len(c.blocks) for c in session.calls] == sizes
    assert session.calls[0].ts == datetime(2025, 1, 31, 11, 21, 36, tzinfo=UTC)
    assert all(c.usage is None and c.model == "unknown" and c.reconstructed for c in session.calls)
    first = _contents(session, session.calls[0])[0]
    assert first["role"] == "system"
    assert first["content"] == "\n".join(line[7:] for line in lines[2:7])  # `SYSTEM ` lines 3-7

    calls = analyze(session).calls
    assert calls["prefix_tokens"][1] == calls["input_tokens"][0]  # the chat goes on
    assert (calls["prefix_tokens"] <= calls["input_tokens"]).all()
    # Aider alternates architect and editor prompts and rewrites its repo map and file
    # listings in place, so calls drift often; against every earlier call, most calls
    # still re-send a long prefix, and always at least a system prompt sent before
    whole = analyze(session, thread="model")
    prefix = whole.calls["prefix_tokens"].to_list()
    assert sum(p > 500 for p in prefix[1:]) == 25
    assert sum(prefix) > sum(whole.calls["input_tokens"]) / 3
    system = whole.segments.filter(pl.col("part") == "system")
    seen = set()
    for call, digest, tokens in system.select("call", "hash", "tokens").iter_rows():
        if digest in seen:
            assert prefix[call] >= tokens
        seen.add(digest)
    assert len(seen) == 5  # ask, architect, editor, and code with ``` or ```` fences


def test_detect_is_false_on_the_other_real_files(realdata):
    others = [p for p in sorted(realdata.rglob("*")) if p.is_file() and "/aider/" not in str(p)]
    assert others
    for path in others:
        assert not aider.detect(path, path.read_bytes()[: 1 << 20]), path
