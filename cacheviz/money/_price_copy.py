"""A faster copy of the genai-prices records cacheviz reads, kept in the user cache folder.

Importing genai-prices costs 0.2-0.3 s (pydantic, httpx, its table of 2,000 models) and
a short command prices one or two models. Each (provider, model) looked up is kept in
``$CACHEVIZ_CACHE_DIR/prices/genai-prices.json``: genai-prices' model id and its prices
(the fields in :data:`FIELDS`, as exact decimal strings, tiers included) under each of
its conditions (none, a start date, a time of day). The prices in force at a time are
picked as genai-prices' ``ModelInfo.get_prices`` picks them. The prices stay
genai-prices' data: the copy belongs to one installed genai-prices (its dist-info name
and the size and mtime of its modules) and is rebuilt when any of them changes. A
model whose prices use something not copied here (another kind of condition, a custom
snapshot) is read from genai-prices each time.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import Any

from cacheviz._util import usercache as _usercache

FORMAT = 1  # bump when the file layout changes
# the ModelPrice fields pricing.py reads; part of the key, so adding one rebuilds the copy
FIELDS = ("input_mtok", "cache_read_mtok", "cache_write_mtok", "cache_write_1h_mtok", "output_mtok")


class _UncopyableError(Exception):
    """A price record holds something this copy does not represent."""


@dataclass(frozen=True, slots=True)
class Tier:
    """A price above a prompt size (genai-prices' ``Tier``)."""

    start: int
    price: Decimal


@dataclass(frozen=True, slots=True)
class Tiered:
    """A base price and its tiers by prompt size (genai-prices' ``TieredPrices``)."""

    base: Decimal
    tiers: tuple[Tier, ...]


@dataclass(frozen=True, slots=True)
class Prices:
    """The copied fields of one genai-prices ``ModelPrice`` (``None``: not priced)."""

    input_mtok: Decimal | Tiered | None = None
    cache_read_mtok: Decimal | Tiered | None = None
    cache_write_mtok: Decimal | Tiered | None = None
    cache_write_1h_mtok: Decimal | Tiered | None = None
    output_mtok: Decimal | Tiered | None = None


Condition = tuple[str, Any, Any] | None  # ("date", day, None) | ("time", start, end) | None


@dataclass(frozen=True)
class Found:
    """genai-prices' record of one model: its id and its prices by condition."""

    version: str  # genai-prices' version
    model_id: str
    schedule: tuple[tuple[Condition, Prices], ...] = ()
    info: Any = None  # genai-prices' ModelInfo itself, when it could not be copied

    def time_changes(self) -> list[float]:
        """The minutes of the UTC day at which a time-of-day condition starts or ends."""
        if self.info is not None:
            prices = self.info.prices if isinstance(self.info.prices, list) else []
            pairs = [
                (c.constraint.start_time, c.constraint.end_time)
                for c in prices
                if hasattr(c.constraint, "start_time") and hasattr(c.constraint, "end_time")
            ]
        else:
            pairs = [(c[1], c[2]) for c, _ in self.schedule if c is not None and c[0] == "time"]
        minutes = []
        for moment in (m for pair in pairs for m in pair):
            utc = _utc_time(moment)
            minutes.append(utc.hour * 60 + utc.minute + utc.second / 60)
        return minutes

    def prices(self, at: datetime) -> Any:
        """The prices in force at ``at``: the last condition met, else the first prices."""
        if self.info is not None:
            return self.info.get_prices(at)
        chosen = self.schedule[0][1]
        for condition, prices in reversed(self.schedule):
            if condition is None or _active(condition, at):
                chosen = prices
                break
        return chosen


def _utc_time(value: time) -> time:
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return datetime.combine(date(1970, 1, 1), value).astimezone(UTC).timetz()


def _active(condition: tuple[str, Any, Any], at: datetime) -> bool:
    """genai-prices' ``StartDateConstraint.active`` / ``TimeOfDateConstraint.active``."""
    kind, first, second = condition
    if kind == "date":
        if at.tzinfo is not None:
            at = at.astimezone(UTC)
        return bool(at.date() >= first)
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    now = at.astimezone(UTC).timetz()
    start, end = _utc_time(first), _utc_time(second)
    if end < start:
        return now >= start or now < end
    return start <= now < end


# --- genai-prices objects -> JSON ------------------------------------------------------


def _condition_json(constraint: Any) -> Any:
    if constraint is None:
        return None
    kind, fields = type(constraint).__name__, set(vars(constraint))
    if kind == "StartDateConstraint" and fields == {"start_date"}:
        day = constraint.start_date
        if type(day) is not date:
            raise _UncopyableError(kind)
        return {"start_date": day.isoformat()}
    if kind == "TimeOfDateConstraint" and fields == {"start_time", "end_time"}:
        start, end = constraint.start_time, constraint.end_time
        return {"start_time": start.isoformat(), "end_time": end.isoformat()}
    raise _UncopyableError(kind)


def _value_json(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if type(value).__name__ == "TieredPrices" and set(vars(value)) == {"base", "tiers"}:
        tiers = [[int(t.start), _value_json(t.price)] for t in value.tiers]
        if any(not isinstance(price, str) for _, price in tiers):
            raise _UncopyableError("tier")
        return {"base": _value_json(value.base), "tiers": tiers}
    raise _UncopyableError(type(value).__name__)


def _record_json(info: Any) -> dict[str, Any]:
    prices = info.prices
    items = (
        [(c.constraint, c.prices) for c in prices] if isinstance(prices, list) else [(None, prices)]
    )
    if not items:
        raise _UncopyableError("no prices")
    schedule = []
    for constraint, price in items:
        fields = {f: getattr(price, f, None) for f in FIELDS}
        copied = {f: _value_json(v) for f, v in fields.items() if v is not None}
        schedule.append([_condition_json(constraint), copied])
    return {"id": str(info.id), "prices": schedule}


# --- JSON -> records ----------------------------------------------------------------


def _value(value: Any) -> Decimal | Tiered:
    if isinstance(value, str):
        return Decimal(value)
    tiers = tuple(Tier(int(start), Decimal(price)) for start, price in value["tiers"])
    return Tiered(Decimal(value["base"]), tiers)


def _condition(value: Any) -> Condition:
    if value is None:
        return None
    if "start_date" in value:
        return ("date", date.fromisoformat(value["start_date"]), None)
    return ("time", time.fromisoformat(value["start_time"]), time.fromisoformat(value["end_time"]))


def _found(version: str, record: dict[str, Any]) -> Found:
    schedule = tuple(
        (_condition(c), Prices(**{f: _value(v) for f, v in fields.items()}))
        for c, fields in record["prices"]
    )
    return Found(version, record["id"], schedule)


# --- the file ---------------------------------------------------------------------


def cache_file() -> Path:
    """Where the copy is kept."""
    return _usercache.folder("prices") / "genai-prices.json"


def _key() -> list[Any] | None:
    """What the copy belongs to: the installed genai-prices' dist-info and module files."""
    from importlib.util import find_spec

    spec = find_spec("genai_prices")
    if spec is None or not spec.submodule_search_locations:
        return None
    package = Path(next(iter(spec.submodule_search_locations)))
    modules = []
    for path in sorted(package.glob("*.py")):
        info = path.stat()
        modules.append([path.name, info.st_size, info.st_mtime_ns])
    dist = sorted(p.name for p in package.parent.glob("genai_prices-*.dist-info"))
    return [FORMAT, list(FIELDS), str(package), dist, modules]


class _Copy:
    def __init__(self) -> None:
        self.key = _key()
        self.version: str | None = None
        self.records: dict[str, Any] = {}
        self.found: dict[str, Found | None] = {}
        try:
            document = json.loads(cache_file().read_text("utf-8"))
        except (OSError, ValueError):
            return
        if (
            isinstance(document, dict)
            and document.get("key") == self.key
            and isinstance(document.get("version"), str)
            and isinstance(document.get("models"), dict)
            and document.get("digest") == _digest(document["models"])
        ):
            self.version, self.records = document["version"], document["models"]

    def save(self) -> None:
        document = {
            "key": self.key,
            "version": self.version,
            "digest": _digest(self.records),
            "models": self.records,
        }
        text = json.dumps(document, separators=(",", ":"), sort_keys=True)
        _usercache.write_atomic(cache_file(), text.encode("utf-8"))


def _digest(records: dict[str, Any]) -> str:
    """A digest of the records: a copy edited or damaged on disk is not read."""
    text = json.dumps(records, separators=(",", ":"), sort_keys=True)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


_copy: _Copy | None = None


def _the_copy() -> _Copy:
    global _copy  # one copy per process, read on first use
    if _copy is None:
        _copy = _Copy()
    return _copy


def lookup(provider: str, model: str) -> Found | None:
    """genai-prices' record of ``model`` (a bare, lower-case name) for ``provider``.

    ``None`` when genai-prices does not know the model (or is not installed).
    """
    copy = _the_copy()
    name = f"{provider} {model}"
    if name in copy.found:
        return copy.found[name]
    if copy.key is not None and copy.version is not None and name in copy.records:
        try:
            record = copy.records[name]
            found = None if record is None else _found(copy.version, record)
        except (KeyError, TypeError, ValueError, ArithmeticError):  # a damaged entry
            found = _from_genai(copy, provider, model, name)
    else:
        found = _from_genai(copy, provider, model, name)
    copy.found[name] = found
    return found


def _from_genai(copy: _Copy, provider: str, model: str, name: str) -> Found | None:
    try:
        from genai_prices import __version__, data_snapshot
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    snapshot = data_snapshot.get_snapshot()
    try:
        _, info = snapshot.find_provider_model(model, None, provider, None)
    except LookupError:
        info = None
    except Exception:
        return None
    record: dict[str, Any] | None = None
    found: Found | None = None
    if info is not None:
        live = Found(__version__, info.id, info=info)
        if snapshot.from_auto_update or data_snapshot._custom_snapshot is not None:
            return live  # not the bundled data: not copied
        try:
            record = _record_json(info)
            found = _found(__version__, record)
        except (_UncopyableError, AttributeError, TypeError, ValueError):
            return live
    if copy.key is not None:
        if copy.version != __version__:
            copy.version, copy.records = __version__, {}
        copy.records[name] = record
        copy.save()
    return found


def models(provider: str) -> list[tuple[str, bool]]:
    """``(model id, deprecated)`` of every model genai-prices' bundled data lists for ``provider``.

    Kept in the copy beside the records, so that a report or an inspector lists the
    models it can price (and which are retired) without importing genai-prices (0.25 s);
    ``[]`` when genai-prices is not usable.
    """
    copy = _the_copy()
    name = f"#models {provider}"  # a record's name is "<provider> <model>": no clash
    kept = copy.records.get(name)
    if (
        copy.key is not None
        and copy.version is not None
        and isinstance(kept, list)
        and _model_list(kept)
    ):
        return [(model, deprecated) for model, deprecated in kept]
    try:
        from genai_prices import __version__, data_snapshot

        snapshot = data_snapshot.get_snapshot()
        # the provider as lookup() finds it: its id, or a name it matches (``xai``: ``x-ai``)
        item = data_snapshot.find_provider_by_id(snapshot.providers, provider)
        found = [] if item is None else [(m.id, bool(m.deprecated)) for m in item.models]
    except Exception:
        return []
    if snapshot.from_auto_update or data_snapshot._custom_snapshot is not None:
        return found  # not the bundled data: not copied
    if copy.key is not None:
        if copy.version != __version__:
            copy.version, copy.records = __version__, {}
        copy.records[name] = [[model, deprecated] for model, deprecated in found]
        copy.save()
    return found


def _model_list(kept: Any) -> bool:
    """Whether a kept value is a list of ``[id, deprecated]`` pairs."""
    return isinstance(kept, list) and all(
        isinstance(pair, list)
        and len(pair) == 2
        and isinstance(pair[0], str)
        and isinstance(pair[1], bool)
        for pair in kept
    )
