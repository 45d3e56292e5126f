"""The rule catalogue: ids, default severities, where each rule comes from, and the fix.

Rule ids are part of the contract (CLI, JSON, SARIF, JUnit, ``allow=`` lists). The
sources are the seeds: the KV-cache layout guide ("KV Cache 友好的上下文设计": three
rules, five anti-patterns, three consistency designs), KiloCode's context assembly and
Whale's prompt-cache memory layout.
"""

from __future__ import annotations

from dataclasses import dataclass

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True, slots=True)
class Rule:
    """One check: its id, default severity, title, source in the guide, and the fix."""

    id: str
    severity: str
    title: str
    source: str
    why: str
    fix: str


RULES: dict[str, Rule] = {
    rule.id: rule
    for rule in (
        Rule(
            "dynamic_system",
            "error",
            "The system prompt or tool definitions change between calls of a thread",
            "KV-cache guide, rule 1 (系统提示词和工具定义一旦确定就不要改) and anti-pattern "
            "'dynamic system prompt (timestamp)'; KiloCode's per-session pinned memory",
            "Every byte after the first changed one falls out of the cache, and the system "
            "prompt sits before the whole conversation, so each change re-processes almost "
            "the whole request (the guide's example: time to first token from 0.5 s to 3-5 s).",
            "Keep system and tools constant for the session: append the time or other "
            "changing facts to the end of the conversation as a message (or fetch them with "
            "a tool), and pin blocks such as project memory once per session, as KiloCode "
            "does.",
        ),
        Rule(
            "dynamic_profile",
            "error",
            "User state (balance, quota, counters) is placed before the conversation",
            "KV-cache guide, anti-pattern 'dynamic user profile (balance/quota)' and rule 2 "
            "(动态信息永远追加到末尾)",
            "A profile that changes every call rewrites the prefix every call: nothing after "
            "it is ever read from the cache.",
            "Keep user state out of the prefix: fetch it on demand with a tool or a state "
            "manager, or append it as a message at the end of the conversation.",
        ),
        Rule(
            "shuffled_tools",
            "error",
            "Tool definitions are sent in a different order",
            "KV-cache guide, anti-pattern 'tools sorted dynamically' (工具定义动态排序) and "
            "the checklist item on a deterministic tool order",
            "From the first tool out of place, everything is re-processed (each tool "
            "definition can be hundreds of tokens), and the order gains the model nothing.",
            "Send tools in a fixed order (registration order or by name), never by usage "
            "frequency or from an unordered set.",
        ),
        Rule(
            "key_order",
            "warning",
            "The same content is re-serialized with other bytes (key order, whitespace)",
            "KV-cache guide, pitfall 'rebuilding the whole message list every call' (序列化"
            "顺序); DESIGN: bytes are truth",
            "The provider caches bytes, not meaning: the same JSON with keys in another order "
            "or other whitespace is a different prefix.",
            "Serialize deterministically (fixed key order, fixed separators) or keep the "
            "bytes of what was sent and re-send them as they were.",
        ),
        Rule(
            "sliding_window",
            "error",
            "The history is cut from the front (a sliding window)",
            "KV-cache guide, anti-pattern 'sliding-window history' (滑动窗口历史)",
            "Dropping the oldest messages changes the start of the conversation, so every "
            "call re-processes the whole history, and the model loses early tool results "
            "(the guide reports agents looping on the same tool calls).",
            "Compact instead: summarize between two calls, without touching system and "
            "tools, and keep appending after the summary (or use a status bar message).",
        ),
        Rule(
            "text_format",
            "error",
            "The history is flattened into text (USER:/ASSISTANT:) or tool results are sent "
            "as plain user messages",
            "KV-cache guide, rule 3 (使用标准 API 格式，不要自行拼接消息) and anti-pattern "
            "'text formatting (USER:/ASSISTANT:)'",
            "Hand-made transcripts leave the chat template the model was trained on: it "
            "repeats finished actions, ignores tool results, and (Qwen3 and others) drops "
            "its reasoning when a tool result arrives as a user message. A transcript "
            "rewritten into one message also edits a cached message on every call.",
            "Send the structured messages of the API: one message per turn, tool calls and "
            "tool results in their own roles.",
        ),
        Rule(
            "history_rewrite",
            "warning",
            "An earlier message is edited, inserted or removed in place",
            "KV-cache guide, layout 'trajectory: append only, never modify' (只追加不修改); "
            "Whale's AppendOnlyLog (only compact/recovery may rewrite)",
            "A cached message that changes invalidates it and everything after it. A "
            "compaction (history replaced by a summary) is the one planned exception: it "
            "costs one re-write and then caches again.",
            "Only append to the history; if a message must change, make it a new message at "
            "the end. Replace the history only for a compaction, between two calls.",
        ),
        Rule(
            "env_details_stripped",
            "warning",
            "Per-turn environment details are added to the latest user message and stripped "
            "from it on the next turn",
            "KiloCode context assembly: `<environment_details>` is not persisted, so the "
            "cache of the previous turn is invalidated at each new turn",
            "The message the cache holds with the details is sent without them one turn "
            "later: the cache written during the previous turn is lost at every new turn.",
            "Send the details as their own trailing block (or message) and keep the user "
            "message byte-identical once sent; or keep them in the persisted history.",
        ),
        Rule(
            "thinking_config",
            "warning",
            "Thinking settings change within a thread",
            "KV-cache guide, consistency design 'freeze the thinking configuration with the "
            "prefix' (思考配置与前缀一起冻结)",
            "Whether reasoning is on, its budget, and which reasoning fields are sent back "
            "belong to the prefix: changing them mid-thread invalidates the cached messages.",
            "Fix the thinking settings for the whole thread and send earlier thinking blocks "
            "back the same way on every call.",
        ),
        Rule(
            "subagent_misaligned",
            "warning",
            "A sub-agent or side call almost shares its parent's prefix but differs",
            "KV-cache guide, consistency design 'sub-agent byte alignment' (子 Agent 字节级对齐)",
            "A child that uses the parent's model and nearly its system prompt and tools "
            "could read the parent's cached prefix; a few different bytes (a value, a tool, a "
            "parameter) make it pay for the whole prefix again.",
            "Give the child the parent's system prompt, tools, model and thinking settings "
            "byte for byte and put its own instructions in its first message; if the "
            "framework means the child to have another prompt, allow this rule.",
        ),
        Rule(
            "prefix_variants",
            "warning",
            "Runtime conditions before the cache boundary multiply the prefix variants",
            "KV-cache guide, layout: each runtime condition before the cache boundary "
            "doubles the cache keys (N binary conditions give 2^N)",
            "Each distinct system+tools prefix is a separate cache entry: threads that differ "
            "only in a mode, an OS name or a preference never share the cache.",
            "Keep one constant system+tools prefix and move the conditions after the cache "
            "boundary (a message at the start of the conversation, or the end).",
        ),
        Rule(
            "uncached_history",
            "warning",
            "No cache breakpoint covers the growing history",
            "Provider caching rules (providers.md: Anthropic 'cache writes happen only at "
            "your breakpoint', OpenAI GPT-5.6+ explicit mode 'with no breakpoint, nothing is "
            "cached'); KV-cache guide: the trajectory is the part that grows",
            "The provider writes the cache only at the request's breakpoints: everything "
            "after the last one, the conversation that grows with every call, is "
            "re-processed at the full input price each time although the previous call "
            "already sent it.",
            "Put a breakpoint on the latest message of every request (Anthropic: "
            "`cache_control` on the last content block, or the top-level automatic "
            "`cache_control`; OpenAI GPT-5.6+: `prompt_cache_breakpoint` on the last message, "
            "or implicit mode), keeping one on the end of system and tools.",
        ),
        Rule(
            "ttl_gaps",
            "warning",
            "Idle gaps longer than the cache TTL make the prefix be written again",
            "Provider caching rules (providers.md: Anthropic 5-minute / 1-hour TTL, OpenAI "
            "in-memory vs extended retention); KV-cache guide: cache is an architectural "
            "constraint",
            "After a pause longer than the cache lifetime the whole prefix is processed and "
            "written again at the write price.",
            "For sessions with long pauses use a longer TTL when it pays off (Anthropic "
            "`cache_control.ttl = '1h'`, OpenAI `prompt_cache_retention = '24h'`), or keep "
            "the cache warm.",
        ),
    )
}
