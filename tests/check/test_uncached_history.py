"""``uncached_history``: no breakpoint covers the growing history (issue 20 item 6).

Anthropic caches only at ``cache_control`` breakpoints, OpenAI GPT-5.6+ in explicit mode
only at ``prompt_cache_breakpoint`` ones (providers.md §1.1, §2.1): a breakpoint on the
system prompt alone leaves the conversation re-processed on every call.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cacheviz.check import check
from cacheviz.formats.native import record_line
from cacheviz.teach.lab import layout_session

SYSTEM = "You are a careful coding agent. " + " ".join(
    f"Rule {i}: keep the prefix stable and append whatever changes at the end." for i in range(90)
)
MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-5.6-terra"}


def _text(api: str, text: str, mark: bool) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "text", "text": text}
    if mark:
        key = "cache_control" if api == "anthropic" else "prompt_cache_breakpoint"
        part[key] = {"type": "ephemeral"} if api == "anthropic" else {"mode": "explicit"}
    return part


def session(tmp_path, api: str, *, history_breakpoint: bool, calls: int = 12) -> Any:
    """An agent loop whose tool results grow the history by ~400 tokens a call."""
    history: list[dict[str, Any]] = []
    lines = []
    clock = datetime(2026, 9, 2, 9, 0, tzinfo=UTC)
    for i in range(calls):
        result = f"File chunk {i}: " + " ".join(f"line {i}.{k} = value{k};" for k in range(80))
        history.append({"role": "user", "content": [{"type": "text", "text": result}]})
        messages = [{**m, "content": list(m["content"])} for m in history]
        if history_breakpoint:
            last = messages[-1]["content"][-1]
            messages[-1]["content"][-1] = _text(api, last["text"], mark=True)
        if api == "anthropic":
            request: dict[str, Any] = {
                "model": MODELS[api],
                "max_tokens": 1024,
                "system": [_text(api, SYSTEM, mark=True)],
                "messages": messages,
            }
        else:
            request = {
                "model": MODELS[api],
                "prompt_cache_options": {"mode": "explicit"},
                "messages": [
                    {"role": "system", "content": [_text(api, SYSTEM, mark=True)]},
                    *messages,
                ],
            }
        clock += timedelta(seconds=20)
        lines.append(
            record_line(
                request,
                provider=api,
                model=MODELS[api],
                api="messages" if api == "anthropic" else "chat.completions",
                ts=clock.isoformat().replace("+00:00", "Z"),
            )
        )
        history.append(
            {"role": "assistant", "content": [{"type": "text", "text": f"Read chunk {i}."}]}
        )
    path = tmp_path / f"{api}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_breakpoint_on_the_system_prompt_only(tmp_path, api):
    findings = [
        f
        for f in check(session(tmp_path, api, history_breakpoint=False)).findings
        if f.rule == "uncached_history"
    ]
    assert len(findings) == 1
    finding = findings[0]
    assert finding.severity == "warning"
    assert finding.cost_usd is not None and finding.cost_usd > 0
    assert finding.calls[0] >= 2 and finding.calls[-1] == 11
    assert "would cost" in finding.message and api in finding.message


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_breakpoint_on_the_latest_message_is_clean(tmp_path, api):
    result = check(session(tmp_path, api, history_breakpoint=True))
    assert "uncached_history" not in {f.rule for f in result.findings}


def test_openai_implicit_mode_caches_the_history(tmp_path):
    path = session(tmp_path, "openai", history_breakpoint=False)
    text = path.read_text().replace('"prompt_cache_options":{"mode":"explicit"},', "")
    path.write_text(text)
    assert "uncached_history" not in {f.rule for f in check(path).findings}


def test_the_cost_is_the_simulated_what_if(tmp_path):
    from cacheviz.formats import load

    analysis = load(session(tmp_path, "anthropic", history_breakpoint=False)).analyze()
    finding = next(f for f in check(analysis).findings if f.rule == "uncached_history")
    now = analysis.simulate("anthropic").total_cost_usd
    then = analysis.simulate("anthropic", breakpoints="auto").total_cost_usd
    assert finding.cost_usd == pytest.approx(now - then)


def test_lab_playground_without_breakpoints_shows_it():
    order = ["tools", "system", "history", "time", "profile"]
    off = check(layout_session(order, breakpoints=False).analyze())
    on = check(layout_session(order, breakpoints=True).analyze())
    assert "uncached_history" in {f.rule for f in off.findings}
    assert "uncached_history" not in {f.rule for f in on.findings}
