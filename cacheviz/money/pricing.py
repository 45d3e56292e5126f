"""Dated prices: genai-prices' bundled snapshot, a small dated overlay, and user files.

Resolution, later sources winning field by field:

1. **genai-prices** (its offline snapshot; date-dependent prices picked at the call's time);
2. **the overlay** ``cacheviz/data/prices_overlay.json``: what the snapshot lacks or has
   out of date (1h writes at 2x, Gemini storage per token-hour, DeepSeek's 2026 models
   with peak / off-peak windows, GPT-5.6 writes at 1.25x), each entry with its source
   and date; and its dated **aliases**: a model no source prices, priced as another
   (Codex's ``codex-auto-review`` as the GPT-5 model of its date, as ccusage does; a
   third-party model such as ``MiniMax-M2.1`` reached through an Anthropic- or
   OpenAI-compatible endpoint at its own vendor's price), each with its source; prices
   tiered by prompt size (``tiers``: DashScope's Qwen models); and the models no
   per-token price applies to, with the reason (``unpriced``: Kimi Code's membership
   model; :func:`unpriced_reason`);
3. **a user file** (``prices=`` / ``--prices FILE``): cacheviz's own JSON (the overlay's
   shape) or LiteLLM's ``model_prices_and_context_window.json`` (USD per token).

Every price is USD per token once resolved; :attr:`Rates.source` names where each came
from. A model found nowhere is an :class:`~cacheviz.errors.UnknownModelError` listing
close matches.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from cacheviz import providers
from cacheviz.errors import TranscriptError, UnknownModelError
from cacheviz.money import _price_copy
from cacheviz.money._price_copy import Found

_FIELDS = ("input", "cache_read", "cache_write", "cache_write_1h", "output", "storage_hour")
_MTOK = 1e-6
_LITELLM = {
    "input_cost_per_token": "input",
    "cache_read_input_token_cost": "cache_read",
    "cache_creation_input_token_cost": "cache_write",
    "cache_creation_input_token_cost_above_1hr": "cache_write_1h",
    "output_cost_per_token": "output",
}


@dataclass(frozen=True, slots=True)
class Rates:
    """USD per token for one model at one time (``None``: the provider has no such price)."""

    input: float
    cache_read: float | None = None
    cache_write: float | None = None  # the default (5m / 30m) TTL write
    cache_write_1h: float | None = None
    output: float | None = None
    storage_hour: float | None = None  # per token per hour (Gemini explicit caches)
    source: str = ""

    def cost(
        self,
        *,
        uncached: int,
        cache_read: int = 0,
        cache_write: int = 0,
        cache_write_1h: int = 0,
        output: int | None = None,
        storage_token_hours: float = 0.0,
    ) -> float:
        """USD for one call; ``cache_write`` includes ``cache_write_1h``.

        A cache price the model lacks is billed at the input price (no discount, no fee).
        """
        read_rate = self.input if self.cache_read is None else self.cache_read
        write_rate = self.input if self.cache_write is None else self.cache_write
        long_rate = write_rate if self.cache_write_1h is None else self.cache_write_1h
        total = (
            uncached * self.input
            + cache_read * read_rate
            + (cache_write - cache_write_1h) * write_rate
            + cache_write_1h * long_rate
            + (output or 0) * (self.output or 0.0)
        )
        if storage_token_hours and self.storage_hour is not None:
            total += storage_token_hours * self.storage_hour
        return total


def _parse_time(value: str | None) -> datetime | None:
    if value is None:
        return None
    moment = datetime.fromisoformat(value)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def _bare(model: str) -> str:
    return model.rsplit("/", 1)[-1].lower()


def _matches(entry: dict[str, Any], provider: str, model: str) -> bool:
    if entry.get("provider") not in (None, provider):
        return False
    name = _bare(model)
    names = [n.lower() for n in entry.get("model", [])]
    prefixes = [p.lower() for p in entry.get("model_prefix", [])]
    return name in names or any(name.startswith(p) for p in prefixes)


def _in_force(entry: dict[str, Any], at: datetime | None) -> bool:
    start, end = _parse_time(entry.get("from")), _parse_time(entry.get("until"))
    if at is None:  # no time: the prices in force now
        return end is None
    return (start is None or start <= at) and (end is None or at < end)


_USER_FIELDS = (
    "input_mtok",
    "cache_read_mtok",
    "cache_write_mtok",
    "cache_write_1h_mtok",
    "output_mtok",
    "storage_mtok_hour",
)


def _tier_fields(entry: dict[str, Any], prompt_tokens: int) -> dict[str, float]:
    """An overlay entry's per-token prices for a prompt of ``prompt_tokens``: its tiers applied.

    Each tier (``{"above": tokens, ...}``) whose start the prompt exceeds overrides the
    fields before it, as genai-prices' tiers do.
    """
    fields = _per_token(entry)
    for tier in entry.get("tiers", []):
        if prompt_tokens > tier["above"]:
            fields.update(_per_token(tier))
    return fields


def unpriced_reason(provider: str, model: str) -> str:
    """Why ``model`` has no price: the overlay's reason for it, else that no source has one.

    >>> unpriced_reason("anthropic", "claude-nonexistent")
    'no price in genai-prices or the overlay'
    """
    for entry in _overlay().get("unpriced", []):
        if _matches(entry, provider, model):
            return str(entry["reason"])
    found = _price_copy.lookup(provider, _bare(model))
    if found is not None and getattr(found.prices(datetime.now(UTC)), "input_mtok", None) is None:
        # listed (a Gemini API model free of charge, say) but with no per-token price
        return "genai-prices lists it with no per-token price"
    return "no price in genai-prices or the overlay"


def _per_token(entry: dict[str, Any]) -> dict[str, float]:
    fields = {
        "input": entry.get("input_mtok"),
        "cache_read": entry.get("cache_read_mtok"),
        "cache_write": entry.get("cache_write_mtok"),
        "cache_write_1h": entry.get("cache_write_1h_mtok"),
        "output": entry.get("output_mtok"),
        "storage_hour": entry.get("storage_mtok_hour"),
    }
    return {k: float(v) * _MTOK for k, v in fields.items() if v is not None}


@cache
def _overlay() -> dict[str, Any]:
    text = resources.files("cacheviz.data").joinpath("prices_overlay.json").read_text("utf-8")
    overlay: dict[str, Any] = json.loads(text)
    return overlay


def _alias(provider: str, model: str, at: datetime | None) -> tuple[tuple[str, str], str] | None:
    """What the overlay prices an unpriced ``model`` as, in force at ``at``, and the note.

    An alias never points back at the call's own provider and model (no loop).
    """
    for entry in _overlay().get("aliases", []):
        if not (_matches(entry, provider, model) and _in_force(entry, at)):
            continue
        target = (entry["as_provider"], entry.get("as_model") or _bare(model))
        if (target[0], target[1].lower()) == (provider, _bare(model)):
            continue
        where = f"{entry['source']}, as of {entry['as_of']}"
        note = f"{model} priced as {target[0]}/{target[1]} ({where})"
        return target, note
    return None


def _in_peak(provider: str, at: datetime | None) -> bool:
    window = _overlay().get("peak_windows", {}).get(provider)
    if window is None or at is None:
        return False
    moment = at.astimezone(UTC)
    hours = moment.hour + moment.minute / 60
    return moment.isoweekday() in window["weekdays"] and any(
        lo <= hours < hi for lo, hi in window["hours_utc"]
    )


def _tiered(value: Any, prompt_tokens: int) -> float | None:
    """A genai-prices price (a number or tiers by prompt size), per token."""
    if value is None:
        return None
    tiers = getattr(value, "tiers", None)
    if tiers is None:
        return float(value) * _MTOK
    price = value.base
    for tier in tiers:
        if prompt_tokens > tier.start:
            price = tier.price
    return float(price) * _MTOK


_PRICE_FIELDS = ("input_mtok", "cache_read_mtok", "cache_write_mtok", "cache_write_1h_mtok")


def _genai_prices(provider: str, model: str, at: datetime | None) -> tuple[Found, Any] | None:
    """genai-prices' (record, prices in force at ``at``) for ``model``, if it has them.

    The record comes from :mod:`cacheviz.money._price_copy` (a copy of genai-prices' data,
    read without importing genai-prices once the model was looked up before).
    """
    found = _price_copy.lookup(provider, _bare(model))
    if found is None:
        return None
    return found, found.prices(at or datetime.now(UTC))


def tier_starts(provider: str, model: str, at: datetime | None = None) -> tuple[int, ...]:
    """The prompt sizes above which ``model``'s input-side prices change (from the data).

    A prompt of ``n`` tokens is in tier ``sum(n > start for start in tier_starts(...))``.

    >>> tier_starts("anthropic", "claude-nonexistent")
    ()
    """
    found = _genai_prices(provider, model, at)
    starts = {
        int(tier.start)
        for name in _PRICE_FIELDS
        for tier in (getattr(getattr(found[1], name, None), "tiers", None) if found else None) or ()
    }
    for entry in _overlay()["models"]:
        if _matches(entry, provider, model) and _in_force(entry, at):
            starts |= {int(tier["above"]) for tier in entry.get("tiers", [])}
    return tuple(sorted(starts))


def _genai(provider: str, model: str, at: datetime | None, prompt_tokens: int) -> Rates | None:
    found = _genai_prices(provider, model, at)
    if found is None:
        return None
    record, prices = found
    values = {
        "input": _tiered(getattr(prices, "input_mtok", None), prompt_tokens),
        "cache_read": _tiered(getattr(prices, "cache_read_mtok", None), prompt_tokens),
        "cache_write": _tiered(getattr(prices, "cache_write_mtok", None), prompt_tokens),
        "cache_write_1h": _tiered(getattr(prices, "cache_write_1h_mtok", None), prompt_tokens),
        "output": _tiered(getattr(prices, "output_mtok", None), prompt_tokens),
    }
    first = values.pop("input")
    if first is None:
        return None
    source = f"genai-prices {record.version} ({record.model_id})"
    return Rates(input=first, **values, source=source)


def _known_models(provider: str, extra: list[dict[str, Any]]) -> list[str]:
    names = [model for model, _ in _price_copy.models(provider)]
    for entry in [*_overlay()["models"], *extra]:
        if entry.get("provider") in (None, provider):
            names += entry.get("model", [])
    return sorted(set(names))


def known_models(provider: str) -> list[str]:
    """Every model the bundled price data (genai-prices and the overlay) prices for ``provider``."""
    return _known_models(provider, [])


# version numbers in a model name: one or two digits (not a size such as 120b, not a date)
_NUMBERS = re.compile(r"(?<![\d.])\d{1,2}(?:\.\d+)?(?![\d.]|[bkmBKM])")


def recency(model: str) -> tuple[tuple[float, ...], str]:
    """A sort key putting newer model names first: their version numbers, descending.

    The version numbers in the name, in order (``claude-opus-4-5`` → 4, 5;
    ``gpt-5.6-terra`` → 5.6; sizes such as ``120b`` and dates are not versions); a name
    without one sorts last. Price data carries no release dates, so
    the version in the name stands for them.

    >>> sorted(["claude-2", "claude-opus-4-5", "claude-sonnet-5", "claude-3-haiku"], key=recency)
    ['claude-sonnet-5', 'claude-opus-4-5', 'claude-3-haiku', 'claude-2']
    """
    found = [-float(n) for n in _NUMBERS.findall(model.split("/")[-1])[:3]]
    if not found:
        return (float("inf"),), model
    return tuple(found + [0.0] * (3 - len(found))), model


def retired_models(provider: str) -> set[str]:
    """Models the vendor no longer serves: genai-prices' ``deprecated`` plus the overlay's."""
    names = {model for model, deprecated in _price_copy.models(provider) if deprecated}
    for entry in _overlay().get("retired", []):
        if entry.get("provider") == provider:
            names |= set(entry.get("model", []))
    return names


def priced_models(provider: str, *, retired: bool | list[str] = False) -> list[str]:
    """The models of ``provider``'s own families that have a price (the model picker).

    Newest first (:func:`recency`). Retired models are left out unless ``retired`` is
    True, or is a list of the ones to keep (the session's own models).
    """
    found = providers.find(provider)
    if found is None or found.self_hosted:
        return []
    models = known_models(provider)
    own = [m for m in models if found.owns_model(m)] or models
    if retired is not True:
        gone = retired_models(provider) - set(retired or [])
        own = [m for m in own if m not in gone]
    return sorted(own, key=recency)


@dataclass(frozen=True, slots=True)
class Comparable:
    """The model a provider prices a session as (:func:`comparable_model`), and why."""

    provider: str
    model: str | None  # None: each call's recorded model
    recorded: tuple[str, ...]  # the session's recorded models, first seen first
    reason: str  # "the recorded models", "the comparable model", "the closest priced model"

    def line(self) -> str:
        """``priced as google:gemini-2.5-pro, the comparable model of claude-opus-4-6``."""
        models = ", ".join(self.recorded)
        if self.model is None:
            return f"priced as recorded ({models}) under {self.provider}'s rules"
        return f"priced as {self.provider}:{self.model}, {self.reason} of {models}"


def comparable_model(provider: str, recorded: list[tuple[str, str]]) -> Comparable:
    """The model of ``provider`` a session's recorded models are priced as: the one rule.

    ``simulate`` without ``--model``, the default comparison and the inspector's model
    picker all use it. The recorded models themselves when ``provider`` is a self-hosted
    engine (it prices nothing) or it recorded them and prices every one; for another
    vendor, its comparable model (the provider's ``reference_model``, the default
    comparison's row) when priced; else the priced model closest to the recorded ones.

    Parameters
    ----------
    provider : str
        A provider id or alias (``gemini``).
    recorded : list of (str, str)
        The session's distinct ``(provider, model)`` pairs, first seen first.

    Returns
    -------
    Comparable
        The model (``None``: the recorded ones) and why, with :meth:`Comparable.line`.
    """
    name = providers.known(provider) or provider
    models = tuple(dict.fromkeys(str(m) for _, m in recorded))
    found = providers.find(name)
    as_recorded = Comparable(name, None, models, "the recorded models")
    if found is None or found.self_hosted:
        return as_recorded
    priced = priced_models(name, retired=list(models))
    same = any(providers.known(p) == name for p, _ in recorded)
    if same and all(m in priced for m in models):
        return as_recorded
    if not same and found.reference_model in priced:
        return Comparable(name, found.reference_model, models, "the comparable model")
    closest = _closest(list(models), priced)
    if closest is None or (same and closest in models):
        return as_recorded  # nothing priced to name: the recorded models (their rows say so)
    return Comparable(name, closest, models, "the closest priced model")


def _closest(recorded: list[str], models: list[str]) -> str | None:
    """The priced model closest to the recorded ones (None when there is none)."""
    for name in recorded:
        if name in models:
            return name
    for name in recorded:
        found = difflib.get_close_matches(name, models, 1, cutoff=0.0)
        if found:
            return found[0]
    return models[0] if models else None


class PriceBook:
    """Where prices come from; see the module docstring.

    Parameters
    ----------
    prices
        A user price file: cacheviz JSON ``{"models": [...]}`` (the overlay's entry shape,
        USD per million tokens) or LiteLLM's ``model_prices_and_context_window.json``.
    """

    def __init__(self, prices: str | Path | None = None) -> None:
        self.user_file = None if prices is None else Path(prices)
        self._user: list[dict[str, Any]] = [] if prices is None else _read_user(Path(prices))

    def rates(
        self, provider: str, model: str, *, at: datetime | None = None, prompt_tokens: int = 0
    ) -> Rates:
        """Resolve the rates of ``model`` at ``at`` for a prompt of ``prompt_tokens``.

        Raises
        ------
        UnknownModelError
            When no source prices the model.
        """
        found = _genai(provider, model, at, prompt_tokens)
        values: dict[str, float | None] = {f: getattr(found, f) for f in _FIELDS} if found else {}
        sources = [found.source] if found else []
        for entry in _overlay()["models"]:
            if _matches(entry, provider, model) and _in_force(entry, at):
                fields = _tier_fields(entry, prompt_tokens)
                if "peak" in entry and _in_peak(provider, at):
                    fields.update(_per_token(entry["peak"]))
                    sources.append(f"{entry['source']}, peak hours, as of {entry['as_of']}")
                else:
                    sources.append(f"{entry['source']} as of {entry['as_of']}")
                values.update(fields)
        for entry in self._user:
            if _matches(entry, provider, model) and _in_force(entry, at):
                values.update(entry["_rates"])
                sources.append(f"{self.user_file}")
        if values.get("input") is None:
            alias = _alias(provider, model, at)
            if alias is not None:
                target, note = alias
                rates = self.rates(*target, at=at, prompt_tokens=prompt_tokens)
                return replace(rates, source=f"{note}; {rates.source}")
            others = [m for m in _known_models(provider, self._user) if m != _bare(model)]
            close = difflib.get_close_matches(_bare(model), others, 5)
            hint = f" Close matches: {', '.join(close)}." if close else ""
            why = unpriced_reason(provider, model)
            msg = (
                f"no price for model {model!r} of provider {provider!r} ({why}).{hint} "
                "Pass --prices FILE (cacheviz price JSON or LiteLLM's "
                "model_prices_and_context_window.json), prices= in Python, or --model"
            )
            raise UnknownModelError(msg)
        for rule in _overlay()["multipliers"]:
            if _matches({**rule, "model_prefix": rule.get("model_prefix", [""])}, provider, model):
                for field in ("cache_write", "cache_write_1h"):
                    if values.get(field) is None and f"{field}_mtok" in rule:
                        values[field] = values["input"] * rule[f"{field}_mtok"]
                        sources.append(
                            f"{field} = {rule[f'{field}_mtok']}x input ({rule['source']})"
                        )
        rates = Rates(**{f: values.get(f) for f in _FIELDS})  # type: ignore[arg-type]  # input checked
        return replace(rates, source="; ".join(sources))


def day_changes(provider: str, model: str, book: PriceBook | None = None) -> tuple[float, ...]:
    """Minutes of the UTC day at which ``model``'s prices may change, from the data.

    genai-prices' time-of-day prices (DeepSeek's discount from 16:30 UTC), the overlay's
    peak windows, and any dated price (overlay or user file) that starts or ends off the
    hour. Prices also change at midnight (dated prices, weekdays), on an hour.

    >>> day_changes("anthropic", "claude-nonexistent")
    ()
    """
    changes: set[float] = set()
    found = _price_copy.lookup(provider, _bare(model))
    if found is not None:
        changes |= set(found.time_changes())
    window = _overlay().get("peak_windows", {}).get(provider)
    for low, high in window["hours_utc"] if window else ():
        changes |= {low * 60.0, high * 60.0}
    for entry in [*_overlay()["models"], *(book._user if book else [])]:
        for field in ("from", "until"):
            moment = _parse_time(entry.get(field))
            if moment is not None and _matches(entry, provider, model):
                utc = moment.astimezone(UTC)
                changes.add(utc.hour * 60 + utc.minute + utc.second / 60)
    return tuple(sorted(c % 1440 for c in changes if c % 60))


def _period(at: datetime | None, changes: tuple[float, ...]) -> tuple[datetime | None, int]:
    """The UTC hour of ``at`` and which stretch of it (cut at ``changes``) it falls in."""
    if at is None:
        return None, 0
    utc = at.astimezone(UTC) if at.tzinfo is not None else at
    hour = utc.replace(minute=0, second=0, microsecond=0)
    start = hour.hour * 60
    minute = start + utc.minute + (utc.second + utc.microsecond / 1e6) / 60
    return hour, sum(start < change <= minute for change in changes)


class RateCache:
    """A provider's rates per (model, price period, prompt-size tier), each resolved once.

    Rates change by the UTC hour at most (peak windows, dated prices) except at the
    minutes of the day the data names (:func:`day_changes`: DeepSeek's 16:30 UTC), and
    by prompt size only at the model's tier boundaries, which come from the price data
    (:func:`tier_starts`).

    Parameters
    ----------
    book
        Where the prices come from.
    provider
        The provider whose price list is read.
    """

    def __init__(self, book: PriceBook, provider: str) -> None:
        self.book, self.provider = book, provider
        self._seen: dict[tuple[str, datetime | None, int, int], Rates] = {}
        self._starts: dict[tuple[str, datetime | None, int], tuple[int, ...]] = {}
        self._changes: dict[str, tuple[float, ...]] = {}

    def __call__(self, model: str, at: datetime | None, prompt_tokens: int) -> Rates:
        """The rates of ``model`` at ``at`` for a prompt of ``prompt_tokens``.

        Raises
        ------
        UnknownModelError
            When no source prices the model.
        """
        changes = self._changes.get(model)
        if changes is None:
            changes = self._changes[model] = day_changes(self.provider, model, self.book)
        hour, stretch = _period(at, changes)
        starts = self._starts.get((model, hour, stretch))
        if starts is None:
            starts = self._starts[(model, hour, stretch)] = tier_starts(self.provider, model, at)
        key = (model, hour, stretch, sum(prompt_tokens > start for start in starts))
        if key not in self._seen:
            self._seen[key] = self.book.rates(
                self.provider, model, at=at, prompt_tokens=prompt_tokens
            )
        return self._seen[key]


# The plausibility bound of a user's price: the dearest models cost a few hundred USD per
# million tokens; a price of 10,000 USD per million (a cent a token) or more is a typo.
MAX_USD_PER_MTOK = 10_000.0


def _price(value: Any, path: Path, model: str, field: str, per_mtok: float) -> float | None:
    """A user price, in USD per million tokens times ``per_mtok``'s unit; one-line error if absurd.

    ``per_mtok`` is 1 for cacheviz's file (``*_mtok`` fields) and 1e-6 for LiteLLM's
    (per-token fields). ``None`` stays ``None``.
    """
    if value is None:
        return None
    bound = MAX_USD_PER_MTOK * per_mtok
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok and math.isfinite(value) and 0 <= value < bound:
        return float(value)
    unit = "USD per million tokens" if per_mtok == 1 else "USD per token"
    shown = repr(value) if len(repr(value)) <= 24 else f"{repr(value)[:21]}..."
    msg = (
        f"model {model!r}: field `{field}` is {shown}; expected a price from 0 to "
        f"{bound:g} {unit} (fix the price file)"
    )
    raise TranscriptError(msg, path=path)


def _read_user(path: Path) -> list[dict[str, Any]]:
    try:
        document = json.loads(path.read_text("utf-8"))
    except OSError as exc:
        msg = f"can't read the price file ({exc.strerror})"
        raise TranscriptError(msg, path=path) from None
    except (ValueError, UnicodeDecodeError) as exc:
        msg = f"the price file is not valid JSON ({exc})"
        raise TranscriptError(msg, path=path) from None
    if isinstance(document, dict) and isinstance(document.get("models"), list):
        entries = []
        for i, entry in enumerate(document["models"]):
            if not isinstance(entry, dict) or not isinstance(entry.get("input_mtok"), (int, float)):
                msg = f"models[{i}]: expected an object with `model` and `input_mtok` (USD/MTok)"
                raise TranscriptError(msg, path=path)
            names = entry.get("model", [])
            shown = names if isinstance(names, str) else ", ".join(map(str, names or []))
            for field in _USER_FIELDS:
                _price(entry.get(field), path, shown or f"models[{i}]", field, 1.0)
            entries.append(
                {
                    **entry,
                    "model": [names] if isinstance(names, str) else names,
                    "_rates": _per_token(entry),
                }
            )
        return entries
    if isinstance(document, dict):  # LiteLLM: model -> per-token costs
        entries = []
        for key, spec in document.items():
            if key == "sample_spec" or not isinstance(spec, dict):
                continue
            rates = {
                ours: float(spec[theirs])
                for theirs, ours in _LITELLM.items()
                if isinstance(spec.get(theirs), (int, float))
                and _price(spec[theirs], path, key, theirs, _MTOK) is not None
            }
            if "input" in rates:
                provider = providers.known(spec.get("litellm_provider"))
                entries.append(
                    {
                        "provider": provider if provider in providers.priced() else None,
                        "model": [key.lower(), _bare(key)],
                        "_rates": rates,
                    }
                )
        if entries:
            return entries
    msg = (
        'not a price file: expected {"models": [...]} (cacheviz) or LiteLLM\'s '
        "model_prices_and_context_window.json"
    )
    raise TranscriptError(msg, path=path)
