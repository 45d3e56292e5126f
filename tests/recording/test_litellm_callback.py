"""The LiteLLM callback writes the cacheviz request log (real litellm, fake provider on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import time

import pytest
from fake_provider import ANTHROPIC_USAGE, OPENAI_CHAT_USAGE, TEXT, FakeProvider


def run_async(coro):
    """``asyncio.run`` in a thread of its own: another test (Playwright's sync API) may
    have left an event loop running in this one."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


# litellm's own models trip a pydantic warning (not ours to fix)
pytestmark = [
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]
KEY = "sk-ant-api03-LITELLMKEYdoNotLogMe01234567"
MESSAGES = [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "hi ✓"}]


@pytest.fixture(scope="module")
def litellm():
    """litellm, imported by the tests that use it (its import costs seconds of collection).

    Importing litellm points ``TIKTOKEN_CACHE_DIR`` at its own bundled folder for the rest
    of the process; the run's folder is put back so later tests tokenize as before.
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download at import
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")  # nor later (its catalogs, tokenizers)
    saved = os.environ.get("TIKTOKEN_CACHE_DIR")
    module = pytest.importorskip("litellm", reason="the litellm extra is not installed")
    if saved is None:
        os.environ.pop("TIKTOKEN_CACHE_DIR", None)
    else:
        os.environ["TIKTOKEN_CACHE_DIR"] = saved
    return module


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, litellm):
    from cacheviz.recording.litellm_callback import CacheVizLogger  # needs litellm

    # one logger for the module: litellm keeps the callbacks it has seen in its own lists
    with FakeProvider() as fake:
        logger = CacheVizLogger(tmp_path_factory.mktemp("litellm") / "run.jsonl", thread="main")
        saved = litellm.callbacks
        litellm.callbacks = [logger]
        try:
            yield fake, logger
        finally:
            litellm.callbacks = saved
            logger.close()


def _lines(logger, count, after=0):
    """Lines ``after:`` of the log once ``count`` are there (LiteLLM logs from a worker thread)."""
    deadline = time.monotonic() + 20
    while True:
        text = logger.writer.path.read_text(encoding="utf-8")
        lines = [json.loads(t) for t in text.splitlines()][after:]
        if len(lines) >= count or time.monotonic() > deadline:
            return lines
        time.sleep(0.05)


def _count(logger):
    return len(logger.writer.path.read_text(encoding="utf-8").splitlines())


def test_anthropic_and_openai_calls_are_recorded(recorded, litellm):
    fake, logger = recorded
    fake.received.clear()
    before = _count(logger)
    answer = litellm.completion(
        model="anthropic/claude-sonnet-4-5",
        messages=MESSAGES,
        api_base=fake.url,
        api_key=KEY,
        max_tokens=16,
    )
    assert answer.choices[0].message.content == TEXT
    chunks = litellm.completion(
        model="openai/gpt-4o",
        messages=MESSAGES,
        api_base=f"{fake.url}/v1",
        api_key=KEY,
        stream=True,
        stream_options={"include_usage": True},
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == TEXT
    first, second = _lines(logger, 2, before)
    assert [r.path for r in fake.received] == ["/v1/messages", "/v1/chat/completions"]
    assert first["request"] == json.loads(fake.received[0].body)
    assert second["request"] == json.loads(fake.received[1].body)
    assert (first["provider"], first["api"]) == ("anthropic", "messages")
    assert (second["provider"], second["api"]) == ("openai", "chat.completions")
    assert (
        first["response"]["usage"]["cache_read_input_tokens"]
        == ANTHROPIC_USAGE["cache_read_input_tokens"]
    )
    assert second["response"]["usage"]["prompt_tokens"] == OPENAI_CHAT_USAGE["prompt_tokens"]
    assert first["meta"] == {"thread": "main"}
    assert KEY not in logger.writer.path.read_text(encoding="utf-8")


def test_async_calls_and_failures_are_recorded(recorded, litellm):
    fake, logger = recorded
    fake.received.clear()
    before = _count(logger)

    async def run():
        await litellm.acompletion(
            model="anthropic/claude-sonnet-4-5",
            messages=MESSAGES,
            api_base=fake.url,
            api_key=KEY,
            max_tokens=16,
        )
        with pytest.raises(litellm.RateLimitError):
            await litellm.acompletion(
                model="anthropic/error-429",
                messages=MESSAGES,
                api_base=fake.url,
                api_key=KEY,
                max_tokens=16,
                num_retries=0,
            )
        # LiteLLM runs async callbacks as tasks: poll until both calls are logged
        deadline = time.monotonic() + 20
        while _count(logger) - before < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)

    run_async(run())
    lines = _lines(logger, 2, before)
    assert sorted(line["response"]["status"] for line in lines) == [200, 429]
    by_status = {line["response"]["status"]: line for line in lines}
    assert by_status[429]["response"]["usage"] is None
    assert "fake 429" in by_status[429]["response"]["error"]
    assert by_status[200]["request"] == json.loads(fake.received[0].body)


def test_a_body_holding_bytes_datetimes_or_sets_is_recorded_visibly(tmp_path, litellm):
    """Issue 29 item 5: such a body was dropped (json.dumps raised); it is written, each
    value visible: bytes as base64, a datetime in ISO 8601, a set as a sorted list."""
    import base64
    import datetime
    import warnings

    from cacheviz.errors import CacheVizWarning
    from cacheviz.recording.litellm_callback import CacheVizLogger

    logger = CacheVizLogger(tmp_path / "run.jsonl")
    start = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    body = {
        "model": "claude-sonnet-4-5",
        "messages": [{"role": "user", "content": "hi"}],
        "metadata": {"blob": b"\x00\xffdata", "at": start, "tags": {"b", "a"}},
    }
    kwargs = {
        "litellm_call_id": "c1",
        "custom_llm_provider": "anthropic",
        "additional_args": {"complete_input_dict": body},
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheVizWarning)
        logger.log_success_event(kwargs, None, start, start + datetime.timedelta(seconds=1))
    logger.close()
    [line] = [json.loads(t) for t in (tmp_path / "run.jsonl").read_text().splitlines()]
    metadata = line["request"]["metadata"]
    assert metadata == {
        "blob": "base64:" + base64.b64encode(b"\x00\xffdata").decode(),
        "at": "2026-01-02T03:04:05+00:00",
        "tags": ["a", "b"],
    }
    assert line["request"]["messages"] == body["messages"]
