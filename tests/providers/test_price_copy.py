"""The copy of genai-prices' records (cacheviz.money._price_copy): the same prices, or genai-prices'.

Each test uses a private cache folder and forgets the copy the process holds, so that
both the first look-up (from genai-prices) and the next (from the file) are exercised.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from cacheviz.errors import UnknownModelError
from cacheviz.money import _price_copy
from cacheviz.money.pricing import PriceBook, RateCache, tier_starts


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """A private cache folder, and no copy held by the process (before and after)."""
    monkeypatch.setenv("CACHEVIZ_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(_price_copy, "_copy", None)
    return tmp_path / "cache"


@pytest.fixture
def from_genai(monkeypatch) -> list[str]:
    """The look-ups answered by genai-prices itself (not the copy), in order."""
    calls: list[str] = []
    original = _price_copy._from_genai

    def counting(copy, provider, model, name):
        calls.append(name)
        return original(copy, provider, model, name)

    monkeypatch.setattr(_price_copy, "_from_genai", counting)
    return calls


def _forget(monkeypatch) -> None:
    monkeypatch.setattr(_price_copy, "_copy", None)  # as a new process would start


def _comparable(value):
    if value is None or isinstance(value, Decimal):
        return value
    return (value.base, [(int(t.start), t.price) for t in value.tiers])


def _moments(info) -> list[datetime]:
    """Times around every date and time of day the model's prices change at."""
    moments = [
        datetime(2023, 1, 1, tzinfo=UTC),
        datetime(2026, 6, 1, 12, 0),  # naive: UTC for genai-prices
        datetime(2026, 6, 1, 23, 30, tzinfo=timezone(timedelta(hours=-5))),  # next day in UTC
        datetime(2030, 1, 1, tzinfo=UTC),
    ]
    for conditional in info.prices if isinstance(info.prices, list) else []:
        constraint = conditional.constraint
        if getattr(constraint, "start_date", None) is not None:
            day = datetime.combine(constraint.start_date, datetime.min.time(), UTC)
            moments += [day - timedelta(seconds=1), day, day + timedelta(hours=1)]
            moments.append(day.astimezone(timezone(timedelta(hours=9))))
        for moment in (
            getattr(constraint, "start_time", None),
            getattr(constraint, "end_time", None),
        ):
            if moment is not None:
                at = datetime.combine(date(2026, 3, 2), moment.replace(tzinfo=None), UTC)
                moments += [at - timedelta(minutes=1), at, at + timedelta(minutes=1)]
    return moments


def test_every_copied_record_gives_genai_prices_own_prices():
    from genai_prices import data_snapshot

    checked = 0
    for provider in data_snapshot.get_snapshot().providers:
        for info in provider.models:
            try:
                record = _price_copy._record_json(info)
            except _price_copy._UncopyableError:
                continue  # read from genai-prices each time: nothing to compare
            copied = _price_copy._found("v", json.loads(json.dumps(record)))
            assert copied.model_id == info.id
            for at in _moments(info):
                theirs, ours = info.get_prices(at), copied.prices(at)
                for field in _price_copy.FIELDS:
                    assert _comparable(getattr(ours, field)) == _comparable(
                        getattr(theirs, field, None)
                    ), (provider.id, info.id, at, field)
            checked += 1
    assert checked > 2000  # the copy covers (nearly) the whole table


CASES = [
    ("anthropic", "claude-sonnet-4-5-20250929", datetime(2026, 3, 1, 10, tzinfo=UTC), 1000),
    ("anthropic", "claude-sonnet-4-5", datetime(2026, 3, 1, 10, tzinfo=UTC), 250_000),
    ("anthropic", "claude-opus-4-1", None, 0),
    ("openai", "gpt-4o", datetime(2025, 5, 1, tzinfo=UTC), 10),
    ("openai", "openai/gpt-4.1-mini", datetime(2025, 5, 1, tzinfo=UTC), 10),
    ("google", "gemini-2.5-pro", datetime(2026, 1, 1, tzinfo=UTC), 300_000),
    ("deepseek", "deepseek-chat", datetime(2025, 8, 1, 17, tzinfo=UTC), 10),
    ("deepseek", "deepseek-chat", datetime(2025, 8, 1, 3, tzinfo=UTC), 10),
]


def _resolve():
    book = PriceBook()
    out = []
    for provider, model, at, prompt in CASES:
        try:
            rates = book.rates(provider, model, at=at, prompt_tokens=prompt)
        except UnknownModelError as exc:
            rates = str(exc)
        out.append((rates, tier_starts(provider, model, at)))
    return out


def test_rates_from_the_copy_equal_rates_from_genai_prices(fresh, from_genai, monkeypatch):
    first = _resolve()  # genai-prices, copy written
    assert len(from_genai) == len({(p, m.rsplit("/", 1)[-1].lower()) for p, m, _, _ in CASES})
    assert _price_copy.cache_file().is_file()
    _forget(monkeypatch)
    from_genai.clear()
    assert _resolve() == first  # the copy: same rates, same sources, same tiers
    assert from_genai == []


def test_an_unknown_model_is_remembered_and_still_explained(fresh, from_genai, monkeypatch):
    for _ in range(2):
        _forget(monkeypatch)
        with pytest.raises(UnknownModelError, match="Close matches: claude-sonnet-4"):
            PriceBook().rates("anthropic", "claude-sonnet-4-9-nonexistent")
    assert from_genai == ["anthropic claude-sonnet-4-9-nonexistent"]
    assert tier_starts("anthropic", "claude-sonnet-4-9-nonexistent") == ()


def test_another_genai_prices_rebuilds_the_copy(fresh, from_genai, monkeypatch):
    PriceBook().rates("anthropic", "claude-sonnet-4-5")
    _forget(monkeypatch)
    real_key = _price_copy._key
    monkeypatch.setattr(_price_copy, "_key", lambda: [*real_key(), "another install"])
    PriceBook().rates("anthropic", "claude-sonnet-4-5")
    assert len(from_genai) == 2
    document = json.loads(_price_copy.cache_file().read_text("utf-8"))
    assert document["key"][-1] == "another install"


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],
        lambda text: "[]",
        lambda text: text.replace('"base":"3"', '"base":"not a number"'),
        lambda text: text.replace('"prices":[[null', '"prices":[[{"start_date":"soon"}'),
        lambda text: text.replace('"base":"3"', '"base":"4"'),  # a plausible wrong price
    ],
    ids=["truncated", "not-an-object", "bad-decimal", "bad-date", "edited-price"],
)
def test_a_damaged_copy_falls_back_to_genai_prices(fresh, from_genai, monkeypatch, damage):
    at = datetime(2026, 3, 1, tzinfo=UTC)
    good = PriceBook().rates("anthropic", "claude-sonnet-4-5", at=at)
    path = _price_copy.cache_file()
    text = path.read_text("utf-8")
    damaged = damage(text)
    assert damaged != text
    path.write_text(damaged, "utf-8")
    _forget(monkeypatch)
    assert PriceBook().rates("anthropic", "claude-sonnet-4-5", at=at) == good
    assert len(from_genai) == 2


def test_an_unwritable_cache_folder_prices_from_genai_prices(tmp_path, monkeypatch, from_genai):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("CACHEVIZ_CACHE_DIR", str(blocker))
    monkeypatch.setattr(_price_copy, "_copy", None)
    cache = RateCache(PriceBook(), "anthropic")
    rates = cache("claude-sonnet-4-5", datetime(2026, 3, 1, tzinfo=UTC), 1000)
    assert rates.source.startswith("genai-prices ")
    _forget(monkeypatch)
    PriceBook().rates("anthropic", "claude-sonnet-4-5")
    assert len(from_genai) == 2  # nothing could be kept


def _imports_genai_prices(cache, code: str) -> list[str]:
    """Whether each of two fresh processes running ``code`` imported genai-prices."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = f"import sys\n{code}\nprint('genai_prices' in sys.modules)\n"
    env = {**os.environ, "PYTHONPATH": str(root), "CACHEVIZ_CACHE_DIR": str(cache)}
    return [
        subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(2)
    ]


def test_a_warm_summary_does_not_import_genai_prices(fresh):
    code = "from cacheviz.money.pricing import PriceBook\nPriceBook().rates('anthropic', 'claude-sonnet-4-5')"
    assert _imports_genai_prices(fresh, code) == ["True", "False"]


def test_the_model_list_is_genai_prices_own_and_kept_in_the_copy(fresh, monkeypatch):
    from genai_prices import data_snapshot

    snapshot = data_snapshot.get_snapshot()
    for provider in ("anthropic", "openai", "google", "deepseek", "nobody"):
        expected = [
            (m.id, bool(m.deprecated))
            for p in snapshot.providers
            if p.id == provider
            for m in p.models
        ]
        assert _price_copy.models(provider) == expected
        _forget(monkeypatch)
        monkeypatch.setattr(data_snapshot, "get_snapshot", _no_snapshot)  # the copy alone
        assert _price_copy.models(provider) == expected
        monkeypatch.undo()
        monkeypatch.setenv("CACHEVIZ_CACHE_DIR", str(fresh))
        _forget(monkeypatch)
    assert _price_copy.models("anthropic")  # the data does list Anthropic's models
    assert any(deprecated for _, deprecated in _price_copy.models("google"))  # and retired ones


def test_a_provider_named_as_genai_prices_matches_it_lists_that_providers_models(
    fresh, monkeypatch
):
    # genai-prices' xAI is ``x-ai``, matched by the name ``xai`` (cacheviz's profile id):
    # the list is found as lookup() finds a price, also from the copy alone
    from genai_prices import data_snapshot

    snapshot = data_snapshot.get_snapshot()
    expected = [
        (m.id, bool(m.deprecated)) for p in snapshot.providers if p.id == "x-ai" for m in p.models
    ]
    assert ("grok-4.5", False) in expected
    assert _price_copy.models("xai") == expected
    _forget(monkeypatch)
    monkeypatch.setattr(data_snapshot, "get_snapshot", _no_snapshot)
    assert _price_copy.models("xai") == expected


def _no_snapshot():
    raise AssertionError("genai-prices was read although the copy holds the answer")


def test_a_warm_report_lists_priced_models_without_genai_prices(fresh):
    code = (
        "from cacheviz.money.pricing import known_models, retired_models\n"
        "assert known_models('google') and retired_models('google')"
    )
    assert _imports_genai_prices(fresh, code) == ["True", "False"]
