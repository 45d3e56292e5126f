"""Google Gemini context caching, implicit and explicit (providers.md §4 and §7).

``implicit`` (on by default for 2.5 and newer): a prompt below the model's minimum gets
no hit. Otherwise ``hit`` = the token-exact longest common prefix with the live prompts
of the same model. Every prompt is cached at its start and lives
``implicit_ttl_seconds`` after the last prompt that re-sent it. There is no write fee
and no storage fee.

``explicit`` (``CachedContent``): the client keeps cache objects per model. A request
reads the longest live object whose content is a prefix of its prompt (``n_K`` tokens
at the cached rate). When none is live, the request creates one: the tools and system
part of its prompt (``explicit_prefix="system"``) or its whole prompt
(``"first_call"``). The object lives ``explicit_ttl_seconds`` from its creation.

Billing of the creating request: creation is billed at the ordinary input rate. It is
reported as ``cache_write_tokens = n_K`` so that the pricing stage bills it at the
input rate (Gemini has no write premium). Storage is ``n_K`` tokens for the object's
lifetime, reported as ``extra["storage_token_hours"]`` on the request that creates the
object (``n_K * ttl / 3600``). With ``explicit_extend``, each read pushes the expiry to
``now + ttl`` and its own result carries the added token-hours, so storage is prorated
to the real lifetime.

Approximations:

- The minimum prompt comes from the §4.1 table, stored by date. The default is the
  2026-10-13 row: Gemini 4 Argon, 3.8 / 3.6 Flash and 3.1 Pro Preview 4,096; 2.5 Flash
  and 2.5 Pro 2,048. A model missing from that row takes its value from the latest
  earlier row that names it (3.5 Flash 4,096 from 2026-07-07, 3 Pro Preview 4,096 and
  3 Flash Preview 1,024 from early 2026). Any other model gets 4,096, the value of
  every 3.x and 4 model in the latest row. Flash-Lite is taken as Flash.
- Implicit granularity and TTL are undocumented [U]: token-exact, 5 minutes after last
  use. Only the current prompt's size is checked against the minimum, as in §7. A hit
  shorter than the minimum is possible when the shared part is short.
- The creating request, in reality, also reads ``n_K`` at the cached rate once the
  object exists; that read (0.1x of ``n_K``, once per object) is not reported. The
  pricing stage can add it from ``cache_write_tokens``.
- The explicit object must reach the minimum, or the API refuses it. Explicit caching
  is refused on Gemini 4 (Argon) and later (§4.1): those requests are simulated
  uncached. Explicit mode models explicit caching only: no implicit hits beyond the
  object.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from cacheviz.providers._base import CallResult, SimCall
from cacheviz.providers._cache import EntryStore, LivePrompts
from cacheviz.providers._profile import ProviderProfile

MODES = ("implicit", "explicit")
PREFIXES = ("system", "first_call")
HOUR = 3600.0
# Minimum cacheable prompt by date of the stored copy (providers.md §4.1); in each row the
# first needle found in the model name wins.
MIN_TOKENS_BY_DATE: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = (
    (
        "2026-10-13",
        (
            ("argon", 4096),
            ("gemini-3.8-flash", 4096),
            ("gemini-3.6-flash", 4096),
            ("gemini-3.1-pro", 4096),
            ("gemini-2.5-flash", 2048),
            ("gemini-2.5-pro", 2048),
        ),
    ),
    (
        "2026-07-07",
        (
            ("gemini-3.5-flash", 4096),
            ("gemini-3.1-pro", 4096),
            ("gemini-2.5-flash", 2048),
            ("gemini-2.5-pro", 2048),
        ),
    ),
    (
        "2026-01",  # "about early 2026"
        (
            ("gemini-3-flash", 1024),
            ("gemini-3-pro", 4096),
            ("gemini-2.5-flash", 1024),
            ("gemini-2.5-pro", 4096),
        ),
    ),
    (
        "2025-09",  # "about Sept 2025"
        (
            ("gemini-2.5-flash", 1024),
            ("gemini-2.5-pro", 2048),
        ),
    ),
)
DEFAULT_MIN_TOKENS = 4096
DEFAULT_AS_OF = "2026-10-13"


def min_tokens_for(model: str, as_of: str = DEFAULT_AS_OF) -> int:
    """The minimum cacheable prompt for a Gemini model, per the table as of a date.

    Examples
    --------
    >>> min_tokens_for("gemini-2.5-pro"), min_tokens_for("gemini-2.5-pro", "2026-03-01")
    (2048, 4096)
    >>> min_tokens_for("models/gemini-3-flash-preview")
    1024
    """
    name = model.lower()
    for date, row in MIN_TOKENS_BY_DATE:
        if date > as_of:
            continue
        found = next((n for needle, n in row if needle in name), None)
        if found is not None:
            return found
    return DEFAULT_MIN_TOKENS


def explicit_supported(model: str) -> bool:
    """Whether ``cachedContents`` works on the model (not on Gemini 4 Argon or later).

    Examples
    --------
    >>> explicit_supported("gemini-2.5-flash"), explicit_supported("gemini-4-argon")
    (True, False)
    """
    name = model.lower()
    if "argon" in name:
        return False
    version = re.search(r"gemini-(\d+)", name)
    return version is None or int(version.group(1)) < 4


@dataclass
class GeminiSimulator:
    """Gemini's caching rules; every parameter defaults to the spec.

    Parameters
    ----------
    mode
        ``implicit`` or ``explicit``.
    min_tokens
        Override the model's minimum cacheable prompt.
    min_tokens_as_of
        Which dated row of the minimum-token table to use (``YYYY-MM-DD``).
    implicit_ttl_seconds
        Lifetime of an implicitly cached prompt after its last use [U].
    explicit_ttl_seconds
        TTL of an explicit cache object (the API default is 1 hour).
    explicit_prefix
        What a new explicit object holds: ``system`` (the tools and system part of the
        prompt) or ``first_call`` (the whole prompt of the request that creates it).
    explicit_extend
        Each read extends the object's expiry to ``now + explicit_ttl_seconds``.
    """

    mode: str = "implicit"
    min_tokens: int | None = None
    min_tokens_as_of: str = DEFAULT_AS_OF
    implicit_ttl_seconds: float = 300
    explicit_ttl_seconds: float = HOUR
    explicit_prefix: str = "system"
    explicit_extend: bool = False
    provider: str = "google"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            msg = f"mode={self.mode!r}; expected one of {', '.join(MODES)}"
            raise ValueError(msg)
        if self.explicit_prefix not in PREFIXES:
            msg = f"explicit_prefix={self.explicit_prefix!r}; expected one of {', '.join(PREFIXES)}"
            raise ValueError(msg)

    def _minimum(self, model: str) -> int:
        if self.min_tokens is not None:
            return self.min_tokens
        return min_tokens_for(model, self.min_tokens_as_of)

    def run(self, calls: Sequence[SimCall]) -> list[CallResult]:
        """Replay the calls; see the module docstring for the algorithm."""
        return list(self.stream(calls))

    def stream(self, calls: Iterable[SimCall]) -> Iterator[CallResult]:
        """Replay the calls one by one: each result as soon as its call is taken.

        The live inspector feeds the calls as they are logged (:mod:`cacheviz.live._incremental`).
        """
        if self.mode == "implicit":
            prompts: dict[str, LivePrompts] = {}
            for call in calls:
                yield self._implicit(call, prompts)
            return
        objects: dict[str, EntryStore] = {}
        for call in calls:
            yield self._explicit(call, objects)

    def _implicit(self, call: SimCall, prompts: dict[str, LivePrompts]) -> CallResult:
        live = prompts.get(call.model)
        if live is None:
            live = prompts[call.model] = LivePrompts(self.implicit_ttl_seconds)
        now = call.clock
        minimum = self._minimum(call.model)
        if call.total < minimum:
            hit, detail = 0, f"implicit: prompt {call.total} below the {minimum}-token minimum"
        else:
            hit = live.common(call, now)
            detail = f"implicit: {hit} tokens shared with a live prompt"
        live.record(call, now, 0.0)
        return CallResult(input_tokens=call.total, cache_read_tokens=hit, detail=detail)

    def _explicit(self, call: SimCall, objects: dict[str, EntryStore]) -> CallResult:
        store = objects.setdefault(call.model, EntryStore())
        now, ttl = call.clock, self.explicit_ttl_seconds
        if not explicit_supported(call.model):
            detail = f"explicit: cachedContents is not supported on {call.model}"
            return CallResult(input_tokens=call.total, detail=detail)
        for j in range(len(call.hashes), 0, -1):  # the longest live object first
            entry = store.get(call.chain[j - 1], now)
            if entry is None:
                continue
            extra = {}
            if self.explicit_extend:
                added = now + ttl - entry.expires_at
                store.touch(entry, now)
                extra["storage_token_hours"] = entry.tokens * added / HOUR
            return CallResult(
                input_tokens=call.total,
                cache_read_tokens=entry.tokens,
                detail=f"explicit: read the object created by call #{entry.written_by}",
                extra=extra,
            )
        if self.explicit_prefix == "system":
            blocks = 0
            while blocks < len(call.parts) and call.parts[blocks] in ("tools", "system"):
                blocks += 1
        else:
            blocks = len(call.hashes)
        size = call.offsets[blocks]
        minimum = self._minimum(call.model)
        if blocks == 0 or size < minimum:
            detail = (
                f"explicit: {self.explicit_prefix} prefix {size} below the {minimum}-token minimum"
            )
            return CallResult(input_tokens=call.total, detail=detail)
        store.put(call.chain[blocks - 1], size, now, ttl, written_by=call.index)
        return CallResult(
            input_tokens=call.total,
            cache_write_tokens=size,
            detail=f"explicit: created a {size}-token object for {ttl / HOUR:g} h",
            extra={"storage_token_hours": size * ttl / HOUR},
        )


def _min_tokens(model: str) -> int:
    return min_tokens_for(model)


PROFILE = ProviderProfile(
    id="google",
    label="Google Gemini",
    module="google",
    simulator="GeminiSimulator",
    aliases=("gemini",),
    model_prefixes=("gemini",),
    default_ttl_seconds=GeminiSimulator.implicit_ttl_seconds,
    min_tokens=_min_tokens,
    reference_model="gemini-2.5-pro",
)
