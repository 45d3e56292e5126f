"""The same numbers before and after: summaries and report data against recorded goldens.

A speed-up or a restructure must not change what a user reads. For every bundled sample
and every file of ``../shared/realdata`` this computes the ``summary --json`` document and
the HTML report's data (tables decoded, details inflated) and compares them with the
goldens in ``tests/golden/``:

- ``numbers.json``: per input, a digest of each document and of each of its tables
  (summary, summary calls, report meta, timeline, shape, costs, details, texts ...), and
  the digest of the price book they were computed with;
- ``tables/<input>.json.gz``: the tables themselves, so that a failure names the table,
  the rows and their values before and after. A realdata input's text is kept as a
  digest (numbers and short identifiers only: the transcripts stay out of the repo);
- ``summaries/``: the samples' summaries whole, readable in a review.

Nothing here skips but the realdata inputs when ``../shared/realdata`` is absent: an
input without a golden, a golden without its input, or a model missing from the price
book fails.

**Frozen prices.** The numbers do not depend on the installed genai-prices: while they are
computed, ``tests/golden/prices.json`` answers in its place (genai-prices is not even
importable then). The book is genai-prices 0.2.3's data (the goldens were recorded with
it) for every model name the inputs look up, in the form cacheviz keeps its copy of
genai-prices' records (:mod:`cacheviz.money._price_copy`): each model's id (named in the
report's price source), its prices by start date and time of day, with their prompt-size
tiers; and each provider's model list with its retired models (the report's model
picker). cacheviz's own overlay (``cacheviz/data/prices_overlay.json``) applies on top
as it does for every user: it is cacheviz's data, and a change to it is a change of the
numbers. A user price file (``prices=`` / ``--prices``) could not stand in: it is applied
above the overlay instead of below it, has neither tiers nor times of day, does not feed
the model list, and the report's comparison and drift costs do not take it.

A session without timestamps is priced at the current time; every dated price in the
book and the overlay is in the past, so that is stable until a new one is added.

Regenerate the book on purpose (another genai-prices version, or an input using a model it
lacks), then re-record and review both diffs::

    pip install --no-deps --target /tmp/gp023 genai-prices==0.2.3
    PYTHONPATH=/tmp/gp023 .venv/bin/python tests/golden/make_prices.py

A change that alters the numbers *on purpose* re-records them (it prints which tables and
rows moved), and the diff of the goldens is part of the review::

    .venv/bin/python tests/core/test_same_numbers.py --update
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
DIGESTS = GOLDEN / "numbers.json"
SUMMARIES = GOLDEN / "summaries"
TABLES = GOLDEN / "tables"
BOOK = GOLDEN / "prices.json"
SAMPLES = ROOT / "sample_sessions"
REALDATA = ROOT.parent / "shared" / "realdata"
UPDATE = ".venv/bin/python tests/core/test_same_numbers.py --update"
MAKE_BOOK = "tests/golden/make_prices.py (see tests/core/test_same_numbers.py)"
ROWS_SHOWN = 5  # differing rows listed per table
FIELDS_SHOWN = 6  # differing fields listed per row


def inputs() -> dict[str, Path]:
    """``{label: path}``: the samples, then every file of ../shared/realdata (if present)."""
    found = {f"samples/{p.name}": p for p in sorted(SAMPLES.glob("*.jsonl"))}
    if REALDATA.is_dir():
        for path in sorted(p for p in REALDATA.rglob("*") if p.is_file() and p.suffix != ".md"):
            found[f"realdata/{path.relative_to(REALDATA).as_posix()}"] = path
    return found


# ---- the frozen price book --------------------------------------------------------------
_ABSENT = object()


class FrozenPrices:
    """While active, the price book answers for genai-prices (a context manager).

    ``missing`` lists what was asked and the book lacks (a model name, a provider's
    model list): the caller fails on it, as a price found nowhere would change numbers.
    """

    def __init__(self, path: Path = BOOK) -> None:
        self.book = json.loads(path.read_text("utf-8"))
        self.missing: list[str] = []
        self._found: dict[tuple[str, str], Any] = {}
        self._saved: tuple[Any, ...] = ()

    def lookup(self, provider: str, model: str) -> Any:
        """:func:`cacheviz.money._price_copy.lookup`, from the book."""
        from cacheviz.money import _price_copy

        key = (provider, model)
        if key not in self._found:
            record = self.book["models"].get(provider, {}).get(model, _ABSENT)
            if record is _ABSENT:
                self.missing.append(f"the price of {provider} {model!r}")
                record = None
            version = self.book["genai_prices"]
            self._found[key] = None if record is None else _price_copy._found(version, record)
        return self._found[key]

    def models(self, provider: str) -> list[tuple[str, bool]]:
        """:func:`cacheviz.money._price_copy.models`, from the book."""
        listed = self.book["catalog"].get(provider)
        if listed is None:
            self.missing.append(f"the model list of {provider}")
            return []
        return [(model, bool(deprecated)) for model, deprecated in listed]

    def __enter__(self) -> FrozenPrices:
        from cacheviz.money import _price_copy

        module = sys.modules.get("genai_prices", _ABSENT)
        self._saved = (_price_copy.lookup, _price_copy.models, module)
        _price_copy.lookup, _price_copy.models = self.lookup, self.models
        sys.modules["genai_prices"] = None  # type: ignore[assignment]  # an import fails
        return self

    def __exit__(self, *exc: object) -> None:
        from cacheviz.money import _price_copy

        _price_copy.lookup, _price_copy.models, module = self._saved
        if module is _ABSENT:
            del sys.modules["genai_prices"]
        else:
            sys.modules["genai_prices"] = module


def book_digest() -> str:
    return hashlib.sha256(BOOK.read_bytes()).hexdigest()


# ---- the documents and their tables ------------------------------------------------------
def _portable(doc: Any, path: Path, label: str) -> Any:
    """``doc`` with the input's path, and the folder it was loaded from, made portable.

    A folder format (Cline's task folder) names the folder, not the file: that spelling
    becomes the label's folder, so the goldens do not depend on where the checkout is.
    """
    text = json.dumps(doc, sort_keys=True, default=str, ensure_ascii=False)
    spellings = {str(path.resolve()): label, str(path): label}
    spellings |= {str(path.resolve().parent): str(Path(label).parent)}
    spellings |= {str(path.parent): str(Path(label).parent)}
    for spelling in sorted(spellings, key=len, reverse=True):
        text = text.replace(json.dumps(spelling)[1:-1], spellings[spelling])
    return json.loads(text)


def documents(label: str, path: Path) -> dict[str, Any] | None:
    """The summary and report documents of one input (None: it doesn't load)."""
    import polars as pl

    import cacheviz
    from cacheviz.errors import CacheVizError
    from cacheviz.ui.report import report_data

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            analysis = cacheviz.load(path).analyze()
        except (CacheVizError, ValueError, OSError):
            return None
        summary = analysis.summary()
        try:
            data = report_data(analysis)
        except CacheVizError as exc:
            report: Any = {"error": str(exc)}
        else:
            report = {"meta": data["meta"], "selected_call": data["selected_call"]}
            report["details"] = json.loads(gzip.decompress(base64.b64decode(data["details_gz"])))
            for name in ("timeline", "shape", "costs"):
                report[name] = pl.read_ipc_stream(base64.b64decode(data[name])).to_dicts()
    return {
        "summary": _portable(summary, path, label),
        "report": _portable(report, path, label),
    }


def digest(doc: Any) -> str:
    """A stable digest of a JSON-ready document."""
    text = json.dumps(doc, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


_ORDER = ("summary", "summary calls", "report meta", "report timeline", "report shape")
_ORDER += ("report costs", "report details", "report texts", "report selected_call")


def tables(docs: dict[str, Any]) -> dict[str, Any]:
    """The documents cut into the tables a difference is reported by.

    ``summary`` (the summary less its calls), ``summary calls``, ``report meta``,
    ``report timeline`` / ``shape`` / ``costs``, ``report details`` (per call),
    ``report texts`` (the segment texts), ``report selected_call``; anything else under
    its own name.
    """
    out: dict[str, Any] = {}
    summary = dict(docs["summary"])
    if "calls" in summary:
        out["summary calls"] = summary.pop("calls")
    out["summary"] = summary
    report = dict(docs["report"])
    details = report.pop("details", _ABSENT)
    out |= {f"report {key}": value for key, value in report.items()}
    if isinstance(details, dict):
        rest = dict(details)
        for key, name in (("calls", "report details"), ("texts", "report texts")):
            if key in rest:
                out[name] = rest.pop(key)
        if rest:
            out["report details (other)"] = rest
    elif details is not _ABSENT:
        out["report details"] = details
    return out


# the fields whose strings a realdata golden keeps (when short and without spaces): names,
# ids, causes and labels cacheviz gives; every other string is kept as a digest
_NAME_FIELDS = (
    "billed_unpriced_models causes cause format hash label miss_cause miss_causes model models "
    "namespace parent_thread part path provenance provider provider_verdict rebuild role "
    "scope status target thread threads token_basis ts unpriced_models"
)
_NAMES = frozenset(_NAME_FIELDS.split())
_PLAIN = re.compile(r"[\w.:/#@+\-\[\]]{0,100}", re.ASCII)


def _hidden(text: str) -> str:
    return f"<text, {len(text)} chars, sha256 {hashlib.sha256(text.encode()).hexdigest()[:12]}>"


def compact(value: Any, field: str | None = None) -> Any:
    """``value`` with every string that may be transcript text replaced by its digest.

    Numbers, booleans, dict keys and the strings of the fields in :data:`_NAMES` stay
    (when short and without spaces: a model, a thread, a cause); so a realdata golden
    holds what a difference needs to show, never the transcript's text. ``field``: the
    key ``value`` is found under (a list's items are under the list's key).
    """
    if isinstance(value, str):
        return value if field in _NAMES and _PLAIN.fullmatch(value) else _hidden(value)
    if isinstance(value, dict):
        return {
            (key if _PLAIN.fullmatch(key) else _hidden(key)): compact(item, key)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [compact(item, field) for item in value]
    return value


def stored(label: str, docs: dict[str, Any]) -> dict[str, Any]:
    """The tables as kept in the golden: whole for a sample, compacted for realdata."""
    cut = tables(docs)
    if label.startswith("samples/"):
        return cut
    return {name: compact(table) for name, table in cut.items()}


def _table_file(label: str) -> Path:
    return TABLES / f"{label}.json.gz"


def _summary_file(label: str) -> Path:
    return SUMMARIES / f"{Path(label).name}.json"


# ---- readable differences --------------------------------------------------------------
def _same(before: Any, after: Any) -> bool:
    if before is _ABSENT or after is _ABSENT:
        return before is after
    return json.dumps(before, sort_keys=True) == json.dumps(after, sort_keys=True)


def _show(value: Any) -> str:
    if value is _ABSENT:
        return "(absent)"
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """The scalars of a row, by path (``target.cost_usd``, ``sent[2].tokens``)."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, item in value.items():
            out |= _flat(item, f"{prefix}.{key}" if prefix else str(key))
        return out
    if isinstance(value, list) and value:
        out = {}
        for i, item in enumerate(value):
            name = item.get("target", item.get("call")) if isinstance(item, dict) else None
            out |= _flat(item, f"{prefix}[{i}]" if name in (None, i) else f"{prefix}[{i}: {name}]")
        return out
    return {prefix: value}


def _rows(table: Any) -> dict[str, Any]:
    if isinstance(table, list):
        return {str(i): row for i, row in enumerate(table)}
    if isinstance(table, dict):
        return {str(key): row for key, row in table.items()}
    return {"": table}


def _row_order(key: str) -> tuple[int, int | str]:
    return (0, int(key)) if key.isdigit() else (1, key)


def _row_name(table: Any, key: str, row: Any) -> str:
    if isinstance(table, list):
        call = row.get("call") if isinstance(row, dict) else None
        return f"row {key}" + (f" (call {call})" if call is not None and str(call) != key else "")
    return f"[{key}]" if key else "value"


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Lines naming each table that differs, then its first differing rows and fields."""
    names = sorted(
        set(before) | set(after),
        key=lambda n: (n not in _ORDER, _ORDER.index(n) if n in _ORDER else 0, n),
    )
    lines = []
    for name in names:
        old, new = before.get(name, _ABSENT), after.get(name, _ABSENT)
        if _same(old, new):
            continue
        if old is _ABSENT or new is _ABSENT:
            lines.append(f"{name}: table {'added' if old is _ABSENT else 'gone'}")
            continue
        old_rows, new_rows = _rows(old), _rows(new)
        keys = sorted(set(old_rows) | set(new_rows), key=_row_order)
        changed = [k for k in keys if not _same(old_rows.get(k, _ABSENT), new_rows.get(k, _ABSENT))]
        counts = (
            f"{len(old_rows)} rows"
            if len(old_rows) == len(new_rows)
            else (f"{len(old_rows)} rows before, {len(new_rows)} now")
        )
        lines.append(f"{name}: {len(changed)} differing rows of {counts}")
        for key in changed[:ROWS_SHOWN]:
            a, b = old_rows.get(key, _ABSENT), new_rows.get(key, _ABSENT)
            shown = _row_name(new if b is not _ABSENT else old, key, b if b is not _ABSENT else a)
            if a is _ABSENT or b is _ABSENT:
                lines.append(f"  {shown}: {_show(a)} -> {_show(b)}")
                continue
            fa, fb = _flat(a), _flat(b)
            fields = [
                f
                for f in sorted(set(fa) | set(fb))
                if not _same(fa.get(f, _ABSENT), fb.get(f, _ABSENT))
            ]
            parts = [
                f"{field or 'value'}: {_show(fa.get(field, _ABSENT))} -> {_show(fb.get(field, _ABSENT))}"
                for field in fields[:FIELDS_SHOWN]
            ]
            more = (
                f"; ... {len(fields) - FIELDS_SHOWN} more fields"
                if len(fields) > FIELDS_SHOWN
                else ""
            )
            lines.append(f"  {shown}: " + "; ".join(parts) + more)
        if len(changed) > ROWS_SHOWN:
            lines.append(f"  ... {len(changed) - ROWS_SHOWN} more rows")
    return lines


def _read_tables(label: str) -> dict[str, Any] | None:
    try:
        return json.loads(gzip.decompress(_table_file(label).read_bytes()))
    except OSError:
        return None


def explain(label: str, docs: dict[str, Any], expected: dict[str, Any]) -> str:
    """Why ``docs`` are not the recorded ones: the tables, rows and values that moved."""
    now = tables(docs)
    recorded = expected.get("tables", {})
    moved = [n for n in sorted(set(now) | set(recorded)) if digest(now.get(n)) != recorded.get(n)]
    lines = [f"{label}: the numbers differ from the recorded goldens (tables: {', '.join(moved)})"]
    before = _read_tables(label)
    if before is None:
        lines.append(f"  ({_table_file(label).relative_to(ROOT)} is missing: no rows to show)")
    else:
        lines += ["  " + line for line in differences(before, stored(label, docs))]
    lines.append(f"If on purpose, re-record with {UPDATE} and review the goldens' diff.")
    return "\n".join(lines)


# ---- recording ------------------------------------------------------------------------
def priced_documents(label: str, path: Path) -> dict[str, Any] | None:
    """:func:`documents` priced with the frozen book; fails on anything the book lacks."""
    with FrozenPrices() as prices:
        docs = documents(label, path)
    if prices.missing:
        missing = ", ".join(sorted(set(prices.missing)))
        msg = f"{label}: {BOOK.relative_to(ROOT)} lacks {missing}; regenerate it with {MAKE_BOOK}"
        raise LookupError(msg)
    return docs


def record() -> None:
    """Re-record every golden from this checkout, printing what moved."""
    old = json.loads(DIGESTS.read_text()) if DIGESTS.exists() else {"inputs": {}}
    entries: dict[str, Any] = {}
    if not REALDATA.is_dir():
        kept = {k: v for k, v in old.get("inputs", {}).items() if k.startswith("realdata/")}
        entries |= kept
        print(f"../shared/realdata is absent: its {len(kept)} goldens are kept as they are")
    SUMMARIES.mkdir(parents=True, exist_ok=True)
    found = inputs()
    for label, path in found.items():
        try:
            docs = priced_documents(label, path)
        except LookupError as exc:
            raise SystemExit(str(exc)) from None
        before = old.get("inputs", {}).get(label, _ABSENT)
        if docs is None:
            entries[label] = None
            _table_file(label).unlink(missing_ok=True)
            if before is not None:
                print(f"{label}: {'new, ' if before is _ABSENT else ''}does not load")
            continue
        entry = {name: digest(docs[name]) for name in ("summary", "report")}
        entry["tables"] = {name: digest(value) for name, value in tables(docs).items()}
        entries[label] = entry
        if before is _ABSENT or before is None:
            print(f"{label}: new")
        elif any(before[name] != entry[name] for name in ("summary", "report")):
            print(explain(label, docs, before).rsplit("\n", 1)[0])  # less the re-record hint
        keep = stored(label, docs)
        text = json.dumps(keep, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        _table_file(label).parent.mkdir(parents=True, exist_ok=True)
        _table_file(label).write_bytes(gzip.compress(text.encode(), 9, mtime=0))
        if label.startswith("samples/"):
            text = json.dumps(docs["summary"], indent=1, sort_keys=True, ensure_ascii=False)
            _summary_file(label).write_text(text + "\n")
    for file in TABLES.rglob("*.json.gz"):
        if file.relative_to(TABLES).as_posix().removesuffix(".json.gz") not in entries:
            file.unlink()
    recorded = {"prices": book_digest(), "inputs": entries}
    DIGESTS.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    print(
        f"recorded {len(found)} inputs in {DIGESTS.relative_to(ROOT)} and {TABLES.relative_to(ROOT)}/"
    )


# ---- the tests ------------------------------------------------------------------------
def _recorded() -> dict[str, Any]:
    return json.loads(DIGESTS.read_text())


def _cases() -> list[Any]:
    cases = []
    for label, path in inputs().items():
        marks = [pytest.mark.realdata] if label.startswith("realdata/") else []
        cases.append(pytest.param(label, path, id=label, marks=marks))
    if not REALDATA.is_dir():
        cases.append(pytest.param("realdata", None, id="realdata", marks=[pytest.mark.realdata]))
    return cases


@pytest.mark.parametrize(("label", "path"), _cases())
def test_numbers_are_the_recorded_ones(label: str, path: Path | None) -> None:
    if path is None:
        pytest.skip("../shared/realdata is not present: its inputs are not compared")
    goldens = _recorded()["inputs"]
    if label not in goldens:
        pytest.fail(
            f"{label}: no golden recorded (a file added since); run {UPDATE}", pytrace=False
        )
    expected = goldens[label]
    try:
        docs = priced_documents(label, path)
    except LookupError as exc:
        pytest.fail(str(exc), pytrace=False)
    if expected is None:
        assert docs is None, f"{label} did not load when recorded and loads now: run {UPDATE}"
        return
    assert docs is not None, f"{label} loaded when recorded and does not now"
    if (
        digest(docs["summary"]) != expected["summary"]
        or digest(docs["report"]) != expected["report"]
    ):
        pytest.fail(explain(label, docs, expected), pytrace=False)
    if label.startswith("samples/"):
        whole = json.loads(_summary_file(label).read_text())
        lines = differences({"summary file": whole}, {"summary file": docs["summary"]})
        assert not lines, f"{_summary_file(label)} is not the recorded summary:\n" + "\n".join(
            lines
        )


def test_every_golden_has_its_input() -> None:
    present = inputs()
    gone = [
        label
        for label in _recorded()["inputs"]
        if label not in present and (label.startswith("samples/") or REALDATA.is_dir())
    ]
    assert not gone, f"goldens of inputs that are gone: {gone}; run {UPDATE}"


def test_the_goldens_were_recorded_with_this_price_book() -> None:
    assert _recorded()["prices"] == book_digest(), (
        f"{BOOK.relative_to(ROOT)} changed since the goldens were recorded: run {UPDATE} "
        "and review the diff"
    )


def test_the_frozen_book_answers_for_genai_prices() -> None:
    from datetime import UTC, datetime

    from cacheviz.errors import UnknownModelError
    from cacheviz.money import _price_copy
    from cacheviz.money.pricing import PriceBook, known_models

    book = json.loads(BOOK.read_text())
    provider, model, record = next(
        (provider, model, record)
        for provider, records in sorted(book["models"].items())
        for model, record in sorted(records.items())
        if record is not None
    )
    at = datetime(2030, 1, 1, tzinfo=UTC)  # after every start date: the last prices
    before = _price_copy.lookup
    with FrozenPrices() as prices:
        with pytest.raises(ImportError):
            __import__("genai_prices")
        rates = PriceBook().rates(provider, model, at=at)
        listed = known_models(provider)
        assert not prices.missing
        with pytest.raises(UnknownModelError):
            PriceBook().rates(provider, "a-model-not-in-the-book")
    assert _price_copy.lookup is before
    assert rates.source.startswith(f"genai-prices {book['genai_prices']} ({record['id']})")
    assert {name for name, _ in book["catalog"][provider]} <= set(listed)
    assert prices.missing == [f"the price of {provider} 'a-model-not-in-the-book'"]


def test_a_difference_names_the_table_the_rows_and_the_values() -> None:
    before = {
        "summary": {"billed_usd": 1.5, "format": "anthropic_log"},
        "report costs": [{"call": i, "cost_usd": 0.1 * i, "ideal_usd": 0.05} for i in range(9)],
        "report texts": {"ab12": "same"},
    }
    after = json.loads(json.dumps(before))
    after["report costs"][3]["cost_usd"] = 0.75
    after["report costs"][3]["ideal_usd"] = 0.06
    after["report costs"].append({"call": 9, "cost_usd": 0.9, "ideal_usd": 0.05})
    lines = differences(before, after)
    assert lines == [
        "report costs: 2 differing rows of 9 rows before, 10 now",
        "  row 3: cost_usd: 0.30000000000000004 -> 0.75; ideal_usd: 0.05 -> 0.06",
        '  row 9: (absent) -> {"call": 9, "cost_usd": 0.9, "ideal_usd": 0.05}',
    ]
    after["summary"]["billed_usd"] = 2.0
    assert differences(before, after)[0] == "summary: 1 differing rows of 2 rows"
    assert differences(before, after)[1] == "  [billed_usd]: value: 1.5 -> 2.0"


def test_compact_keeps_numbers_and_names_and_hides_text() -> None:
    doc = {
        "model": "claude-sonnet-4-5",
        "tokens": 12,
        "text": "print('my secret plan')",
        "threads": ["main", "a plan"],
        "texts": {"ab12": "secret.sol"},
    }
    kept = compact(doc)
    assert kept["model"] == "claude-sonnet-4-5" and kept["tokens"] == 12
    assert kept["threads"][0] == "main" and kept["texts"].keys() == {"ab12"}
    assert "secret" not in json.dumps(kept) and "plan" not in json.dumps(kept)
    assert kept["text"].startswith("<text, 23 chars")
    assert compact({**doc, "text": "another one"})["text"] != kept["text"]


def test_portable_replaces_every_spelling_of_the_path(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    doc = {"path": str(path), "nested": [f"see {path.resolve()}"], "n": 1}
    assert _portable(doc, path, "samples/s.jsonl") == {
        "path": "samples/s.jsonl",
        "nested": ["see samples/s.jsonl"],
        "n": 1,
    }


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        msg = f"usage: {UPDATE}"
        raise SystemExit(msg)
    sys.path.insert(0, str(ROOT))
    record()
