"""Every column name and dtype of the analysis frames, in one place.

Token counts are ``Int64``; "not reported" is null, never 0. Times are UTC.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl
from polars._typing import PolarsDataType

_SURROGATE = re.compile("[\ud800-\udfff]")
_INT = pl.Int64
_STR = pl.String
_BOOL = pl.Boolean
_TS = pl.Datetime("us", "UTC")

REPORTED_USAGE: dict[str, PolarsDataType] = {
    "reported_input_tokens": _INT,  # inclusive: uncached + cache read + cache write
    "reported_cache_read_tokens": _INT,
    "reported_cache_write_tokens": _INT,
    "reported_cache_write_5m_tokens": _INT,
    "reported_cache_write_1h_tokens": _INT,
    "reported_output_tokens": _INT,
    "reported_reasoning_tokens": _INT,  # the reasoning (thinking) part of the output, if reported
    "usage_provenance": _STR,  # "reported" | "derived" | null (nothing reported)
    "provider_verdict": _STR,  # the provider's verdict: a reason's type, or a state (verdict.py)
    "provider_missed_tokens": _INT,  # the tokens the provider says missed, with a reason
    "verdict_agrees": _BOOL,  # cacheviz's own reading agrees with a comparable verdict
    "verdict_detail": _STR,  # the comparison, one line: the evidence either way (verdict.py)
}

CALLS: dict[str, PolarsDataType] = {
    "call": _INT,  # position in request-time order
    "line": _INT,  # line (or record) of the transcript it came from
    "source": _STR,  # the file of that line, relative to the session's folder (a sub-agent's)
    "ts": _TS,
    "thread": _STR,  # the conversation: messages continue from the thread's previous call
    "parent_thread": _STR,  # the thread a sub-agent or side call hangs under, when known
    "namespace": _STR,  # where the provider could serve a prefix from: provider/model
    "provider": _STR,
    "api": _STR,
    "model": _STR,
    "encoding": _STR,  # tiktoken encoding used to count
    "tokens_exact": _BOOL,  # False when the model's own tokenizer is not public
    "reconstructed": _BOOL,  # request rebuilt from a conversation log, not the bytes sent
    "unlogged_tokens": _INT,  # size of the unlogged prefix (system + tools), inferred
    "ttl_seconds": _INT,  # the TTL of the cache entries the call leaves (prefix._ttl); null: none
    "rebuild": _STR,  # an expected rebuild announced by the log ("compaction"), else null
    "n_segments": _INT,
    "input_tokens": _INT,  # the whole request, in provider tokens (calibrate.py)
    "local_tokens": _INT,  # the same request counted with the local encoding
    "token_basis": _STR,  # calibrated | rescaled | exact | estimated (calibrate.BASES)
    "prefix_tokens": _INT,  # longest prefix sent before by ANY earlier call of the namespace
    "new_tokens": _INT,  # input_tokens - prefix_tokens
    "prev_call": _INT,  # previous call of the same thread (null for its first call)
    "prev_common_tokens": _INT,  # common prefix with that previous call
    "drift": _BOOL,  # the prefix broke before the end of the thread's previous call
    "drift_cause": _STR,
    "drift_material": _BOOL,  # the break cost something under the provider's rules
    "expected_read_tokens": _INT,  # cache read the prefix line offers, in provider tokens
    "miss_cause": _STR,  # one of MISS_CAUSES; the provider's named reason wins (verdict.py)
    "own_cause": _STR,  # cacheviz's own cause for a material shortfall, beside the provider's
    "shortfall_tokens": _INT,  # a miss: expected - reported cache read (= MISSES')
    "billed_usd": pl.Float64,  # reported usage x dated prices (null: no usage or no price)
    "simulated_usd": pl.Float64,  # cost under the session's own provider's simulated rules
    "ideal_usd": pl.Float64,  # lower bound: every reusable prefix read, nothing written
    "waste_usd": pl.Float64,  # billed (else simulated) - ideal, never negative (metrics.py)
    "prefix_hash": _STR,  # Whale: hash over tools + system segment hashes
    "log_head_hash": _STR,  # Whale: messages except the last 8
    "log_tail_hash": _STR,  # Whale: the last 8 messages
    **REPORTED_USAGE,
    "hit_ratio": pl.Float64,  # reported cache read / reported inclusive input (null: either not)
}

SEGMENTS: dict[str, PolarsDataType] = {
    "call": _INT,
    "thread": _STR,
    "part": _STR,  # tools | system | messages
    "position": _INT,  # index within the part
    "label": _STR,  # tool name, "system[1]", "user#12", ...
    "hash": _STR,  # sha256 of the block's bytes as sent, 16 hex digits
    "bytes": _INT,
    "tokens": _INT,  # provider tokens (calibrated, like the calls' figures)
    "local_tokens": _INT,  # the local encoding's count of the segment
    "token_offset": _INT,  # tokens before this segment in its request
    "opaque": _BOOL,  # the unlogged prefix of a reconstructed request (size inferred)
    "stability": _STR,  # immutable | dynamic
    "status": _STR,  # same (inside the prefix) | changed | new
}

DRIFTS: dict[str, PolarsDataType] = {
    "call": _INT,
    "thread": _STR,
    "prev_call": _INT,
    "part": _STR,
    "position": _INT,
    "label": _STR,
    "prev_common_tokens": _INT,  # where the match with the previous call stopped (= CALLS')
    "block_token_offset": _INT,  # where the first differing segment starts
    "tokens_lost": _INT,  # tokens of the previous call past the break
    "cause": _STR,
    "detail": _STR,
    "cost_usd": pl.Float64,  # what the break cost: as sent minus had the prefix been kept
    "material": _BOOL,  # false: it cost nothing (below the minimum, nothing cached, ...)
    "hash": _STR,
    "prev_hash": _STR,
    "byte_offset": _INT,  # first differing byte inside the segment, when both exist
}

MISSES: dict[str, PolarsDataType] = {
    "call": _INT,
    "thread": _STR,
    "cause": _STR,  # one of MISS_CAUSES
    "own_cause": _STR,  # cacheviz's own reading, when the provider's reason took the cause
    "provider_verdict": _STR,  # the provider's own verdict on the call (CALLS')
    "shortfall_tokens": _INT,  # expected_read_tokens - reported_cache_read_tokens
    "expected_read_tokens": _INT,  # what the prefix line offered (provider tokens)
    "simulated_read_tokens": _INT,  # what the provider's rules predict (provider tokens)
    "reported_cache_read_tokens": _INT,
    "gap_seconds": pl.Float64,  # idle time since the call that left the prefix
    "cost_usd": pl.Float64,  # billed minus billed had the expected read happened
    "detail": _STR,
}

SIMULATION: dict[str, PolarsDataType] = {
    "call": _INT,
    "thread": _STR,
    "model": _STR,  # the model simulated and priced
    "ts": _TS,
    "input_tokens": _INT,  # = uncached + cache read + cache write
    "cache_read_tokens": _INT,
    "cache_write_tokens": _INT,  # all writes, 1h ones included
    "cache_write_1h_tokens": _INT,
    "uncached_tokens": _INT,
    "output_tokens": _INT,  # reported; null when not reported (then not priced)
    "cost_usd": pl.Float64,  # null for self-hosted engines
    "ideal_usd": pl.Float64,  # prefix read from cache, new tokens at the input price
    "prefill_tokens_saved": _INT,  # self-hosted engines only
    "prefill_ms": pl.Float64,  # self-hosted engines only: the estimated prefill time
    # self-hosted engines only: prefill_ms had a drift point's prefix been kept (the
    # previous call of its thread read whole); prefill_ms itself at every other call
    "prefill_ms_stable": pl.Float64,
    "prefill_factor": pl.Float64,  # self-hosted engines only: prefill_ms / prefill_ms_stable
    "reported_input_tokens": _INT,  # the provider's report, when simulating its own calls
    "reported_cache_read_tokens": _INT,
    "reported_cache_write_tokens": _INT,
    "reported_output_tokens": _INT,
    "verdict": _STR,  # match | unexplained_miss | unexplained_hit | not_reported
    # the simulated unlogged prefix was sized from this call's own reported read (circular:
    # left out of the score)
    "sized_from_usage": _BOOL,
    "detail": _STR,
}

COMPARE: dict[str, PolarsDataType] = {
    "target": _STR,
    "provider": _STR,
    "model": _STR,
    "input_tokens": _INT,
    "cache_read_tokens": _INT,
    "cache_write_tokens": _INT,
    "uncached_tokens": _INT,
    "output_tokens": _INT,
    "cost_usd": pl.Float64,
    "ideal_usd": pl.Float64,
    "price_source": _STR,
    "prefill_factor": pl.Float64,  # self-hosted engines only: Simulation.prefill_factor
    # null, or one line: why the row has no cost ("no price ...") or no numbers (a failure)
    "error": _STR,
}

# --- the `cacheviz summary --json` document (docs/format.md): which columns it shows ---

SUMMARY_CALL = (
    "call",
    "thread",
    "parent_thread",
    "namespace",
    "model",
    "ts",
    "input_tokens",
    "local_tokens",
    "token_basis",
    "prefix_tokens",
    "new_tokens",
    "tokens_exact",
    "reconstructed",
    "unlogged_tokens",
    "ttl_seconds",
    "hit_ratio",
    "billed_usd",
    "simulated_usd",
    "ideal_usd",
    "waste_usd",
    "rebuild",
    "provider_verdict",
    "provider_missed_tokens",
    "verdict_agrees",
    "verdict_detail",
)
"""The CALLS columns each call of the summary carries, as they are."""
SUMMARY_DRIFT = (
    "part",
    "position",
    "label",
    "prev_common_tokens",
    "tokens_lost",
    "cause",
    "detail",
    "cost_usd",
    "material",
)
"""The DRIFTS columns of a call's ``drift``."""
SUMMARY_MISS = (
    "cause",
    "own_cause",
    "shortfall_tokens",
    "expected_read_tokens",
    "reported_cache_read_tokens",
    "cost_usd",
    "detail",
)
"""The MISSES columns of a call's ``miss``."""
SUMMARY_REPORTED = (
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cache_write_5m_tokens",
    "cache_write_1h_tokens",
    "output_tokens",
)
"""The reported usage of a call's ``reported`` (CALLS' ``reported_<name>`` columns)."""
SUMMARY_CALL_ORDER = (
    *SUMMARY_CALL[:15],
    "drift",
    "miss",
    "reported",
    *SUMMARY_CALL[15:],
)
"""The keys of each call of the summary, in order."""

SIMULATE_CALL = tuple(
    name for name in SIMULATION if not name.startswith("reported_") and name != "ts"
)
"""The SIMULATION columns each call of ``cacheviz simulate --json`` carries."""
SIMULATE_REPORTED = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
"""Its ``reported`` usage (SIMULATION's ``reported_<name>`` columns)."""

CAUSES = (
    "volatile_value",
    "reorder",
    "block_added",
    "block_removed",
    "serialization_only",
    "content_edited",
    "truncated_front",
    "history_replaced",
    "env_details_stripped",
    "params_changed",
    "model_switch",
    "unknown",
)

PROVIDER_REASONS = (
    "model_changed",
    "system_changed",
    "tools_changed",
    "messages_changed",
    "prompt_cache_key_changed",
    "service_tier_changed",
    "text_format_changed",
    "reasoning_effort_changed",
    "verbosity_changed",
    "context_compacted",
    "input_changed",
)
"""The providers' own named miss reasons (verdicts.md) a miss takes as its cause."""

MISS_CAUSES = (
    "ttl_expired",
    "ttl_tier_switch",  # the call writes the other TTL tier than the entries it could read
    "below_minimum",
    "no_breakpoint",
    "provider_side",
    "deferred_tools_changed",  # the log shows the deferred tools changed (Claude Code)
    "unknown",  # no rules for the provider, or a partial read: "the change lies after token N"
    *PROVIDER_REASONS,  # the provider's own named reason, taken as the cause
    "agent_switch",  # the client's agent/mode changed: its own system prompt (OpenCode agents)
)


def hit_ratio(cache_read: int | None, inclusive_input: int | None) -> float | None:
    """The share of a request's input read from the cache, token-weighted.

    ``cache_read / inclusive_input`` where both were reported (and the input is not 0);
    ``None`` otherwise (not reported is never 0). Sums of both give a range's ratio.

    >>> hit_ratio(900, 1000), hit_ratio(None, 1000), hit_ratio(0, 0)
    (0.9, None, None)
    """
    if cache_read is None or not inclusive_input:
        return None
    return cache_read / inclusive_input


def hit_ratio_expr(cache_read: str, inclusive_input: str, alias: str = "hit_ratio") -> pl.Expr:
    """:func:`hit_ratio` over a group: sums over the rows where both are reported."""
    both = pl.col(cache_read).is_not_null() & pl.col(inclusive_input).is_not_null()
    read = pl.when(both).then(pl.col(cache_read)).sum()
    total = pl.when(both).then(pl.col(inclusive_input)).sum()
    return pl.when(total > 0).then(read / total).alias(alias)


def clean(text: Any) -> Any:
    """A string polars can hold: lone surrogates (from JSON escapes) become U+FFFD."""
    if isinstance(text, str) and not text.isascii():
        return _SURROGATE.sub("\ufffd", text)
    return text


def frame(
    schema: Mapping[str, PolarsDataType], columns: Mapping[str, Sequence[Any]]
) -> pl.DataFrame:
    """Build a frame with exactly ``schema``'s columns, in its order and dtypes."""
    if not columns:
        return pl.DataFrame(schema=dict(schema))
    missing = set(schema) - set(columns)
    extra = set(columns) - set(schema)
    if missing or extra:
        msg = f"columns differ from the schema: missing {sorted(missing)}, extra {sorted(extra)}"
        raise AssertionError(msg)
    data = {
        name: [clean(v) for v in columns[name]] if dtype == pl.String else columns[name]
        for name, dtype in schema.items()
    }
    return pl.DataFrame(data, schema=dict(schema))


# --- cacheviz scan (many sessions; see cacheviz.scanning) -------------------------------

SCAN_CALLS: dict[str, PolarsDataType] = {
    "path": _STR,  # the file (or Cline task file) the session was read from
    "session": _STR,  # the path, or path#id for ledgers holding several sessions (Whale)
    "format": _STR,
    "project": _STR,  # the folder the session sits in (Claude Code: projects/<project>)
    "usage_only": _BOOL,  # read from a usage ledger: no request bytes
    "call": _INT,  # the call's index in its session's analysis
    "line": _INT,
    "source": _STR,  # the file of that line, relative to the session's folder
    "title": _STR,  # what the session was about (its first call's row only; scanning/_title)
    "ts": _TS,
    "thread": _STR,
    "parent_thread": _STR,  # the thread a sub-agent hangs under, when known
    "provider": _STR,
    "model": _STR,
    "response_id": _STR,  # the provider's response / message id, when logged
    **{k: v for k, v in REPORTED_USAGE.items() if k.startswith("reported_")},
    "billed_usd": pl.Float64,  # reported usage x dated prices (null: no usage or no price)
    "ideal_usd": pl.Float64,  # lower bound: every reusable prefix read (null until known)
    "waste_usd": pl.Float64,  # billed (else simulated) - ideal, never negative (metrics.py)
    "reported_cost_usd": pl.Float64,  # the agent's own cost figure (Whale, Cline), as logged
    "drift": _BOOL,
    "provider_verdict": _STR,  # the provider's own verdict (null: not requested; CALLS)
    "verdict_agrees": _BOOL,  # cacheviz's reading agrees with it (null: not comparable)
    "prefix_hash": _STR,  # system + tools (Whale: prefix_fingerprint); null when unlogged
}

SCAN_DRIFTS: dict[str, PolarsDataType] = {
    "path": _STR,
    "call": _INT,
    "thread": _STR,
    "part": _STR,
    "label": _STR,
    "cause": _STR,
    "tokens_lost": _INT,
    "cost_usd": pl.Float64,
    "material": _BOOL,
    "detail": _STR,
}

SCAN_MISSES: dict[str, PolarsDataType] = {
    "path": _STR,
    "call": _INT,
    "thread": _STR,
    "cause": _STR,
    "shortfall_tokens": _INT,
    "cost_usd": pl.Float64,
    "detail": _STR,
}
