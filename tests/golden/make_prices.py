"""Write tests/golden/prices.json: the frozen price book of the same-numbers goldens.

It runs the goldens' inputs (the samples and every file of ../shared/realdata) through the
summary and the report with the installed genai-prices, notes every model name cacheviz
looks up and every provider whose model list it reads, and writes genai-prices' records
of them in the form :mod:`cacheviz.money._price_copy` keeps (the model id, its prices by start
date and time of day, with their prompt-size tiers; ``null`` for a name genai-prices does
not price) and each of those providers' model lists with their retired flags.

Run it on purpose, with the genai-prices version to freeze (the goldens: 0.2.3)::

    pip install --no-deps --target /tmp/gp023 genai-prices==0.2.3
    PYTHONPATH=/tmp/gp023 .venv/bin/python tests/golden/make_prices.py

then re-record (``tests/core/test_same_numbers.py --update``) and review both diffs.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "tests" / "golden" / "prices.json"
ABOUT = (
    "genai-prices' data, frozen for tests/core/test_same_numbers.py (which serves it in "
    "place of the installed genai-prices): models[provider][name] is the record "
    "cacheviz.money._price_copy keeps for a looked-up name (null: not priced), catalog[provider] "
    "the [model id, deprecated] list. Written by tests/golden/make_prices.py; do not edit."
)


def _goldens() -> Any:
    """The same-numbers test module (its inputs and documents)."""
    path = ROOT / "tests" / "core" / "test_same_numbers.py"
    spec = importlib.util.spec_from_file_location("same_numbers", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def looked_up() -> tuple[set[tuple[str, str]], set[str]]:
    """Every (provider, model name) priced and every provider listed, over the inputs."""
    from cacheviz.money import _price_copy

    goldens = _goldens()
    if not goldens.REALDATA.is_dir():
        msg = f"{goldens.REALDATA} is absent: the book would lack the models its inputs use"
        raise SystemExit(msg)
    names: set[tuple[str, str]] = set()
    listed: set[str] = set()
    lookup, models = _price_copy.lookup, _price_copy.models

    def noting_lookup(provider: str, model: str) -> Any:
        names.add((provider, model))
        return lookup(provider, model)

    def noting_models(provider: str) -> list[tuple[str, bool]]:
        listed.add(provider)
        return models(provider)

    _price_copy.lookup, _price_copy.models = noting_lookup, noting_models
    try:
        for label, path in goldens.inputs().items():
            goldens.documents(label, path)
    finally:
        _price_copy.lookup, _price_copy.models = lookup, models
    return names, listed


def book(names: set[tuple[str, str]], listed: set[str]) -> dict[str, Any]:
    """genai-prices' records of ``names`` and model lists of ``listed``."""
    from genai_prices import __version__, data_snapshot

    from cacheviz.money import _price_copy

    snapshot = data_snapshot.get_snapshot()
    if snapshot.from_auto_update or data_snapshot._custom_snapshot is not None:
        raise SystemExit("genai-prices is not using its bundled data: nothing to freeze")
    models: dict[str, dict[str, Any]] = {}
    for provider, name in sorted(names):
        try:
            _, info = snapshot.find_provider_model(name, None, provider, None)
        except LookupError:
            info = None
        try:
            record = None if info is None else _price_copy._record_json(info)
        except _price_copy._UncopyableError as exc:
            msg = f"{provider} {name}: its genai-prices record has a {exc} the book can't hold"
            raise SystemExit(msg) from None
        models.setdefault(provider, {})[name] = record
    catalog = {
        provider: [
            [m.id, bool(m.deprecated)]
            for item in snapshot.providers
            if item.id == provider
            for m in item.models
        ]
        for provider in sorted(listed)
    }
    return {"about": ABOUT, "genai_prices": __version__, "models": models, "catalog": catalog}


def text(written: dict[str, Any]) -> str:
    """The book as JSON, one model record or model-list entry a line (a readable diff)."""

    def one(value: Any) -> str:
        return json.dumps(value, sort_keys=True)

    def block(groups: dict[str, Any], entry: Any) -> str:
        inner = []
        for provider, items in sorted(groups.items()):
            lines = ",\n".join(f"   {entry(item, items)}" for item in items)
            opening, closing = ("{", "}") if isinstance(items, dict) else ("[", "]")
            inner.append(f"  {one(provider)}: {opening}\n{lines}\n  {closing}")
        return "{\n" + ",\n".join(inner) + "\n }"

    models = block(written["models"], lambda name, records: f"{one(name)}: {one(records[name])}")
    catalog = block(written["catalog"], lambda pair, _: one(pair))
    head = f' "about": {one(written["about"])},\n "genai_prices": {one(written["genai_prices"])}'
    return f'{{\n{head},\n "models": {models},\n "catalog": {catalog}\n}}\n'


def main() -> None:
    sys.path.insert(0, str(ROOT))
    names, listed = looked_up()
    written = book(names, listed)
    BOOK.write_text(text(written))
    assert json.loads(BOOK.read_text()) == written
    count = sum(len(records) for records in written["models"].values())
    print(
        f"wrote {BOOK.relative_to(ROOT)}: genai-prices {written['genai_prices']}, "
        f"{count} model names, model lists of {', '.join(sorted(listed))}"
    )


if __name__ == "__main__":
    main()
