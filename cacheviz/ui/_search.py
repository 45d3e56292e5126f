"""Full-text search of what every call sent: the content browser's segments, as shown.

The text searched is the one the content browser shows (:mod:`cacheviz.ui._content`:
cleaned, redacted, cut to its length), so a search never finds a secret the view hides.
A segment is listed once, at the first call that lists it, with how many calls list it;
the report searches its embedded texts the same way (``widgets/src/lib/search.js``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cacheviz.ui._content import TEXT_CHARS, all_contents

if TYPE_CHECKING:
    from cacheviz.analysis import Analysis

MAX_RESULTS = 100
"""Results listed per search (``more`` counts the rest)."""
SNIPPET = 60
"""Characters shown either side of the first match."""
_CACHE: dict[int, tuple[Any, dict[int, dict[str, Any]], dict[str, str]]] = {}


def _contents(analysis: Analysis) -> tuple[dict[int, dict[str, Any]], dict[str, str]]:
    """Every call's content lists and their texts, made once per analysis."""
    found = _CACHE.get(id(analysis))
    if found is not None and found[0] is analysis:
        return found[1], found[2]
    texts: dict[str, str] = {}
    docs = all_contents(analysis, texts, TEXT_CHARS)
    _CACHE.clear()  # one analysis searched at a time: the last one's texts are kept
    _CACHE[id(analysis)] = (analysis, docs, texts)
    return docs, texts


def snippet(text: str, at: int, length: int) -> str:
    """The text around a match at ``at`` (``length`` characters), with ``…`` where cut."""
    start, end = max(0, at - SNIPPET), min(len(text), at + length + SNIPPET)
    head = "…" if start > 0 else ""
    tail = "…" if end < len(text) else ""
    return head + text[start:end].replace("\n", " ") + tail


def search_segments(analysis: Analysis, text: str) -> dict[str, Any]:
    """The segments whose shown text or label contains ``text`` (case-insensitive).

    Returns
    -------
    dict
        ``{"text", "results": [{"call", "label", "part", "snippet", "calls"}], "more"}``:
        each segment at the first call that lists it (``calls``: how many list it), in
        call order, at most :data:`MAX_RESULTS` (``more``: how many were left off).
        An empty or one-character query finds nothing.
    """
    query = text.strip().lower()
    out: dict[str, Any] = {"text": text, "results": [], "more": 0}
    if len(query) < 2:
        return out
    docs, texts = _contents(analysis)
    first: dict[str, dict[str, Any]] = {}
    missed: set[str] = set()
    for call in sorted(docs):
        doc = docs[call]
        for item in (*doc["sent"], *doc["context"]):
            digest = item.get("hash")
            key = digest if digest is not None else f"{call}:{item['label']}"
            seen = first.get(key)
            if seen is not None:
                seen["calls"] += 1
                continue
            if key in missed:
                continue
            body = texts.get(digest, "") if digest is not None else ""
            label = str(item["label"])
            at = body.lower().find(query)
            if at < 0 and query not in label.lower():
                missed.add(key)
                continue
            first[key] = {
                "call": call,
                "label": label,
                "part": item["part"],
                "snippet": snippet(body, at, len(query)) if at >= 0 else "",
                "calls": 1,
            }
    results = sorted(first.values(), key=lambda r: r["call"])
    out["results"] = results[:MAX_RESULTS]
    out["more"] = max(0, len(results) - MAX_RESULTS)
    return out


__all__ = ["MAX_RESULTS", "search_segments", "snippet"]
