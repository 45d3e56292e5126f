import json
import re
import shutil
import warnings
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import event as note
from hypothesis import strategies as st

from cacheviz.analysis import analyze
from cacheviz.errors import CacheVizWarning, TranscriptError
from cacheviz.formats import cline

MODEL = {"providerId": "anthropic", "modelId": "claude-sonnet-4-5", "mode": "act"}
T0 = 1769053680000  # epoch ms


def _user(text):
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def _assistant(text, out=5):
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "modelInfo": {"modelId": "claude-sonnet-4-5", "providerId": "anthropic"},
        "metrics": {"tokens": {"prompt": 3, "completion": out, "cached": 0}},
    }


def _started(index, seconds, *, model=True, **info):
    event = {
        "ts": T0 + seconds * 1000,
        "type": "say",
        "say": "api_req_started",
        "text": json.dumps({"request": "...", **info}),
        "conversationHistoryIndex": index,
    }
    if model:
        event["modelInfo"] = MODEL
    return event


def _say(kind, seconds, index, **extra):
    return {
        "ts": T0 + seconds * 1000,
        "type": "say",
        "say": kind,
        "text": "x",
        "conversationHistoryIndex": index,
        **extra,
    }


USAGE = {"tokensIn": 3, "tokensOut": 5, "cacheWrites": 100, "cacheReads": 0, "cost": 0.01}


def _history(turns=3):
    messages = []
    for i in range(turns):
        messages += [_user(f"task {i}"), _assistant(f"answer {i}", out=10 + i)]
    return messages


def _events(turns=3):
    events = [_say("text", 0, -1)]
    for i in range(turns):
        usage = {**USAGE, "tokensOut": 10 + i, "cacheReads": 100 * i}
        events += [_started(2 * i - 1, 10 * i + 1, **usage), _say("reasoning", 10 * i + 2, 2 * i)]
    return events


def _task(folder, history=None, events=None, metadata=None):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / cline.HISTORY).write_text(json.dumps(_history() if history is None else history))
    (folder / cline.UI).write_text(json.dumps(_events() if events is None else events))
    if metadata is not None:
        (folder / cline.METADATA).write_text(json.dumps(metadata))
    return folder


def _labels(call):
    return [b.label for b in call.blocks]


def _one_line_error(folder, match, **kwargs):
    with pytest.raises(TranscriptError) as info:
        cline.read(folder, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    assert re.search(match, message), message
    return message


# -- reading -------------------------------------------------------------------------


def test_one_call_per_api_request_with_the_messages_up_to_its_user_turn(tmp_path):
    session = cline.read(_task(tmp_path / "task"))
    assert session.format == "cline"
    assert session.path == tmp_path / "task"
    assert len(session.calls) == 3
    assert [_labels(c) for c in session.calls] == [
        ["unlogged prefix", "user#0"],
        ["unlogged prefix", "user#0", "assistant#1", "user#2"],
        ["unlogged prefix", "user#0", "assistant#1", "user#2", "assistant#3", "user#4"],
    ]
    first, second, _ = session.calls
    assert (first.model, first.provider, first.api) == (
        "claude-sonnet-4-5",
        "anthropic",
        "messages",
    )
    assert first.ts == datetime.fromtimestamp((T0 + 1000) / 1000, UTC)
    assert first.line == 1  # the event's index in ui_messages.json
    assert first.reconstructed
    assert second.blocks[:3] == [*first.blocks, second.blocks[2]]  # shared block objects
    assert [c.thread_hint for c in session.calls] == ["main"] * 3


def test_usage_is_anthropic_style_and_cost_is_kept(tmp_path):
    calls = cline.read(_task(tmp_path)).calls
    usage = calls[1].usage
    # tokensIn excludes cache reads and writes: the inclusive input adds them
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (
        203,
        100,
        100,
    )
    assert usage.output_tokens == 11
    assert usage.provenance == "derived"
    assert calls[1].meta == {"reported_cost_usd": 0.01}


def test_clines_own_message_fields_are_not_part_of_the_request(tmp_path):
    session = cline.read(_task(tmp_path))
    answer = session.calls[1].blocks[2]
    assert session.contents[answer.hash].value == {
        "role": "assistant",
        "content": [{"type": "text", "text": "answer 0"}],
    }


def test_detect_a_task_folder_or_its_files(tmp_path):
    folder = _task(tmp_path / "task")
    history = folder / cline.HISTORY
    assert cline.detect(folder, b"")
    assert cline.detect(history, history.read_bytes())
    assert cline.detect(folder / cline.UI, (folder / cline.UI).read_bytes())
    assert not cline.detect(tmp_path, b"")
    assert not cline.detect(history, b'{"role": "user"}')
    (folder / cline.UI).unlink()
    assert not cline.detect(folder, b"")
    assert not cline.detect(history, history.read_bytes())


def test_reading_through_the_history_file_reads_its_folder(tmp_path):
    folder = _task(tmp_path / "task")
    session = cline.read(folder / cline.HISTORY)
    assert session.path == folder
    assert len(session.calls) == 3


def test_detect_is_false_for_the_sample_sessions_and_other_real_formats():
    root = Path(__file__).resolve().parents[2]
    paths = sorted((root / "sample_sessions").glob("*.jsonl"))
    shared = root.parent / "shared" / "realdata"
    paths += sorted(p for p in shared.rglob("*") if p.is_file()) if shared.is_dir() else []
    for path in paths:
        if path.parent.name == "cline_task":  # Cline's own exported files
            continue
        assert not cline.detect(path, path.read_bytes()[: 1 << 20]), path


def test_exported_files_with_a_name_prefix_are_one_task(realdata):
    folder = realdata / "cline_task"
    files = sorted(p for p in folder.iterdir() if p.suffix == ".json")
    assert len(files) == 3
    for path in [folder, *files]:
        assert cline.detect(path, b"" if path.is_dir() else path.read_bytes()[:4096]), path
        assert len(cline.read(path).calls) == 47


# -- failed requests, retries -------------------------------------------------------


def test_a_cancelled_request_is_a_call_and_an_unanswered_one_is_not(tmp_path):
    history = [
        _user("task"),
        {"role": "assistant", "content": "partial\n\n[Response interrupted by user]"},
        _user("[TASK RESUMPTION] go on"),
        _assistant("done"),
    ]
    events = [
        _say("text", 0, -1),
        _started(-1, 1, tokensIn=3, cacheWrites=50, cost=0.001, cancelReason="user_cancelled"),
        _say("text", 2, 0),
        _started(1, 3),  # the first chunk failed: no usage, no cost, no cancelReason
        {"ts": T0 + 4000, "type": "ask", "ask": "api_req_failed", "text": "529 overloaded"},
        {"ts": T0 + 5000, "type": "say", "say": "api_req_retried"},
        _started(1, 6, **USAGE),  # the resumed task: same history index
        {"ts": T0 + 7000, "type": "say", "say": "api_req_retried"},
    ]
    session = cline.read(_task(tmp_path, history, events))
    cancelled, answered = session.calls
    assert cancelled.meta == {"reported_cost_usd": 0.001, "cancel_reason": "user_cancelled"}
    assert cancelled.usage.input_tokens == 53
    assert cancelled.usage.output_tokens is None  # not reported, not 0
    assert _labels(answered)[-1] == "user#2"
    assert answered.meta["retries"] == 1
    assert session.ignored["api_req_started without a response (not sent or failed)"] == 1
    assert session.ignored["api_req_failed event"] == 1


def test_requests_before_cline_stamped_history_indexes_align_by_order(tmp_path):
    events = _events()
    for event in events:
        event.pop("conversationHistoryIndex")
    calls = cline.read(_task(tmp_path, events=events)).calls
    assert [len(c.blocks) for c in calls] == [2, 4, 6]


# -- truncation -----------------------------------------------------------------------


def test_the_deleted_range_stamped_after_a_request_applies_to_it(tmp_path):
    events = _events(4)
    # Cline truncates while preparing the 4th request, after writing its api_req_started
    for event in events[events.index(_find(events, 5)) + 1 :]:
        event[cline._RANGE] = [1, 2]
    session = cline.read(_task(tmp_path, history=_history(4), events=events))
    third, fourth = session.calls[2:]
    assert len(third.blocks) == 1 + 5
    contents = [session.contents[b.hash].value for b in fourth.blocks[1:]]
    assert [m["content"][0]["text"] for m in contents] == [
        "task 0",
        "answer 1",
        "task 2",
        "answer 2",
        "task 3",
    ]
    assert _labels(fourth)[1:3] == ["user#0", "assistant#1"]
    drift = analyze(session).drifts.row(0, named=True)
    assert drift["call"] == 3
    assert drift["position"] == 1


def _find(events, history_index):
    return next(
        e
        for e in events
        if e.get("say") == "api_req_started" and e["conversationHistoryIndex"] == history_index
    )


def test_the_last_range_seen_carries_on(tmp_path):
    events = _events(4)
    after_third = events.index(_find(events, 3)) + 1
    events[after_third][cline._RANGE] = [1, 2]  # later events do not repeat it
    calls = cline.read(_task(tmp_path, history=_history(4), events=events)).calls
    assert [len(c.blocks) for c in calls] == [2, 4, 1 + 3, 1 + 5]


# -- model ----------------------------------------------------------------------------


def test_model_from_the_event_then_the_answer_then_task_metadata(tmp_path):
    events = _events()
    for event in events:
        event.pop("modelInfo", None)
    history = _history()
    history[3].pop("modelInfo")
    history[5].pop("modelInfo")
    metadata = {
        "model_usage": [
            {"ts": T0, "model_id": "claude-a", "model_provider_id": "anthropic"},
            {"ts": T0 + 15000, "model_id": "gpt-b", "model_provider_id": "openrouter"},
        ]
    }
    calls = cline.read(_task(tmp_path, history, events, metadata)).calls
    assert [(c.model, c.provider) for c in calls] == [
        ("claude-sonnet-4-5", "anthropic"),  # its answer's modelInfo
        ("claude-a", "anthropic"),  # metadata in force at 11 s
        ("gpt-b", "openrouter"),  # metadata in force at 21 s
    ]
    (tmp_path / cline.METADATA).unlink()
    assert cline.read(tmp_path).calls[2].model == "unknown"


# -- bad input ------------------------------------------------------------------------


def test_missing_files_and_broken_documents(tmp_path):
    folder = _task(tmp_path / "task")
    (folder / cline.UI).write_text('[{"say": "api_req_started", "text": "{}"')
    _one_line_error(folder, r"ui_messages\.json:1: not valid JSON: .*truncated")
    (folder / cline.UI).write_bytes(b'[{"text": "\xff"}]')
    _one_line_error(folder, r"ui_messages\.json:1: not valid UTF-8 at byte 12")
    (folder / cline.UI).write_text('{"messages": []}')
    _one_line_error(
        folder, r"task: ui_messages\.json: the document is an object; expected an array"
    )
    (folder / cline.UI).unlink()
    _one_line_error(folder, r"task: no ui_messages\.json here; expected a Cline task folder")


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda h, e: e[1].update(text="{oops"), r"ui_messages\.json: item 1: `text` is not JSON"),
        (
            lambda h, e: e[1].update(text="[1]"),
            r"item 1: `text` holds an array; expected an object",
        ),
        (lambda h, e: e[1].update(text=7), r"item 1: `text` is a number; expected a JSON string"),
        (
            lambda h, e: e[1].update(text=json.dumps({"tokensIn": "3"})),
            r"item 1: `text\.tokensIn` is a string; expected a number",
        ),
        (
            lambda h, e: e[1].update(conversationHistoryIndex="1"),
            r"item 1: `conversationHistoryIndex` is a string; expected an integer",
        ),
        (lambda h, e: e[1].update(ts="now"), r"item 1: `ts` is a string; expected a number"),
        (  # beyond the float range: an OverflowError before
            lambda h, e: e[1].update(text=json.dumps({"tokensIn": 10**400})),
            r"item 1: `text\.tokensIn` is an integer of 401 digits; expected a finite number",
        ),
        (
            lambda h, e: e[1].update(ts=10**400),
            r"item 1: `ts` is an integer of 401 digits; expected a finite number",
        ),
        (
            lambda h, e: e[3].update({cline._RANGE: [4, 2]}),
            r"item 3: `conversationHistoryDeletedRange` is \[4, 2\]; expected \[start, end\]",
        ),
        (lambda h, e: e.insert(1, "hello"), r"item 1 is a string; expected an object"),
        (
            lambda h, e: h[2].update(role="system"),
            r"api_conversation_history\.json: item 2: `role` is 'system'; expected 'user' or 'assistant'",
        ),
        (
            lambda h, e: h[1].update(content=None),
            r"api_conversation_history\.json: item 1: `content` is null; expected a string or an array",
        ),
    ],
)
def test_a_bad_item_is_named_in_one_line(tmp_path, mutate, expected):
    history, events = _history(), _events()
    mutate(history, events)
    message = _one_line_error(_task(tmp_path / "task", history, events), expected)
    assert message.startswith(str(tmp_path / "task") + ": ")
    assert "--errors skip" in message


def test_errors_name_the_files_as_exported(tmp_path):
    prefix = "exported_conversation_1__"
    history = _history()
    history[2]["role"] = "system"
    metadata = {"model_usage": [{"ts": 10**400, "model_id": "claude-a"}]}
    for name, value in (
        (cline.HISTORY, history),
        (cline.UI, _events()),
        (cline.METADATA, metadata),
    ):
        (tmp_path / f"{prefix}{name}").write_text(json.dumps(value))
    ui = tmp_path / f"{prefix}{cline.UI}"
    _one_line_error(ui, rf"{prefix}api_conversation_history\.json: item 2: `role` is 'system'")
    with pytest.warns(CacheVizWarning, match=r"skipped 2 bad line\(s\)"):
        session = cline.read(ui, errors="skip")
    assert [s.reason for s in session.skipped] == [
        f"{prefix}api_conversation_history.json: item 2: `role` is 'system'; "
        "expected 'user' or 'assistant'",
        f"{prefix}task_metadata.json: `model_usage[0].ts` is an integer of 401 digits; "
        "expected a finite number",
    ]


def test_skip_leaves_out_bad_items_and_keeps_history_indexes(tmp_path):
    history, events = _history(), _events()
    events[3]["text"] = "{oops"
    history[2] = "not a message"
    folder = _task(tmp_path, history, events)
    with pytest.warns(CacheVizWarning, match=r"skipped 2 bad line\(s\)"):
        session = cline.read(folder, errors="skip")
    assert [s.reason for s in session.skipped] == [
        "api_conversation_history.json: item 2 is a string; expected a message",
        "ui_messages.json: item 3: `text` is not JSON; expected Cline's API request info {tokensIn, tokensOut, ...}",
    ]
    assert [s.line for s in session.skipped] == [None, None]
    assert [len(c.blocks) for c in session.calls] == [2, 6]


def test_no_answered_request_is_an_error(tmp_path):
    events = [_say("text", 0, -1), _started(-1, 1)]
    _one_line_error(
        _task(tmp_path, events=events), r"ui_messages\.json: no answered `api_req_started`"
    )


# -- fuzz -----------------------------------------------------------------------------

GOOD_HISTORY_ITEMS = _history(2)
GOOD_EVENT_ITEMS = _events(2)
GOOD_HISTORY = json.dumps(GOOD_HISTORY_ITEMS).encode()
GOOD_EVENTS = json.dumps(GOOD_EVENT_ITEMS).encode()
KEYS = [
    "role",
    "content",
    "say",
    "text",
    "ts",
    "type",
    "conversationHistoryIndex",
    "modelInfo",
    cline._RANGE,
    "tokensIn",
    "cacheReads",
    "cost",
    "cancelReason",
]
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(KEYS), c, max_size=4),
    max_leaves=10,
)


def _edited(items):
    """One field of one item set to a random value (the request info too, as JSON text)."""

    def edit(t):
        index, key, value, as_text = t
        copy = json.loads(json.dumps(items))
        target = copy[index % len(copy)]
        if as_text and isinstance(target, dict):
            info = (
                json.loads(target.get("text") or "{}")
                if target.get("say") == "api_req_started"
                else {}
            )
            info[key] = value
            target["text"] = json.dumps(info)
        elif isinstance(target, dict):
            target[key] = value
        return json.dumps(copy).encode()

    return st.tuples(st.integers(0, 50), st.sampled_from(KEYS), VALUES, st.booleans()).map(edit)


def _mutations(good, items):
    return st.one_of(
        st.integers(0, len(good)).map(lambda n: good[:n]),  # truncated
        st.tuples(st.integers(0, len(good) - 1), st.binary(min_size=1, max_size=3)).map(
            lambda t: good[: t[0]] + t[1] + good[t[0] + 1 :]
        ),  # byte flips, invalid UTF-8
        VALUES.map(lambda v: json.dumps([v]).encode()),  # well-formed JSON, wrong shapes
        _edited(items),  # one field of one item of the wrong type or value
    )


@settings(
    max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    history=st.one_of(st.just(GOOD_HISTORY), _mutations(GOOD_HISTORY, GOOD_HISTORY_ITEMS)),
    events=st.one_of(st.just(GOOD_EVENTS), _mutations(GOOD_EVENTS, GOOD_EVENT_ITEMS)),
)
@pytest.mark.slow
def test_fuzzed_tasks_load_or_fail_with_one_clear_line(tmp_path, history, events):
    (tmp_path / cline.HISTORY).write_bytes(history)
    (tmp_path / cline.UI).write_bytes(events)
    for errors in ("raise", "skip"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CacheVizWarning)
                session = cline.read(tmp_path, errors=errors)
        except TranscriptError as exc:
            assert "\n" not in str(exc)
            assert str(tmp_path) in str(exc)
            note(f"{errors}: error")
            continue
        assert len(session.calls) >= 1
        analyze(session)
        note(f"{errors}: loaded")


# -- real data ------------------------------------------------------------------------

PREFIX = "gmfstu__Online-Card-Architecture__exported_conversation_1769053680585__"


def test_real_cline_task(realdata, tmp_path):
    source = realdata / "cline_task"
    for name in (cline.HISTORY, cline.UI, cline.METADATA):
        shutil.copy(source / f"{PREFIX}{name}", tmp_path / name)
    history = json.loads((tmp_path / cline.HISTORY).read_text())
    started = [
        json.loads(e["text"])
        for e in json.loads((tmp_path / cline.UI).read_text())
        if e.get("say") == "api_req_started"
    ]
    assert cline.detect(tmp_path, b"")
    session = cline.read(tmp_path)

    assert len(session.calls) == len(started) == 47
    sums = {
        k: sum(s[k] for s in started)
        for k in ("tokensIn", "tokensOut", "cacheReads", "cacheWrites")
    }
    assert sums == {
        "tokensIn": 470,
        "tokensOut": 23389,
        "cacheReads": 1514932,
        "cacheWrites": 66105,
    }
    usages = [c.usage for c in session.calls]
    assert sum(u.input_tokens for u in usages) == 470 + 1514932 + 66105 == 1581507
    assert sum(u.cache_read_tokens for u in usages) == sums["cacheReads"]
    assert sum(u.cache_write_tokens for u in usages) == sums["cacheWrites"]
    assert sum(u.output_tokens for u in usages) == sums["tokensOut"]
    costs = sum(c.meta["reported_cost_usd"] for c in session.calls)
    assert costs == pytest.approx(sum(s["cost"] for s in started)) == pytest.approx(1.05461835)
    assert {c.model for c in session.calls} == {"claude-sonnet-4-5-20250929"}

    # call k sends 2k+1 messages; the next message is its answer, whose own metrics agree
    for k, call in enumerate(session.calls):
        assert len(call.blocks) == 1 + 2 * k + 1
        assert _labels(call)[-1] == f"user#{2 * k}"
        answer = history[2 * k + 1]["metrics"]["tokens"]
        assert answer["completion"] == call.usage.output_tokens
        assert answer["cached"] == call.usage.cache_read_tokens + call.usage.cache_write_tokens

    analysis = analyze(session)
    assert analysis.calls.height == 47
    assert not analysis.calls["drift"].any()  # Cline only appends here
