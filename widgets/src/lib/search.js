// @ts-check
/**
 * The report's full-text search: every call's content lists (what the content browser
 * shows, redacted) searched as `cacheviz/ui/_search.py` searches them in the notebook.
 * A segment is listed once, at the first call that lists it, with how many calls do.
 */

export const MAX_RESULTS = 100;
const SNIPPET = 60;

/**
 * @typedef {{ call: number, label: string, part: string, snippet: string, calls: number }} Found
 * @typedef {{ text: string, results: Found[], more: number }} SearchResult
 */

/**
 * The text around a match (`length` characters at `at`), with "…" where cut.
 *
 * @param {string} text
 * @param {number} at
 * @param {number} length
 */
export function snippet(text, at, length) {
  const start = Math.max(0, at - SNIPPET);
  const end = Math.min(text.length, at + length + SNIPPET);
  return (start > 0 ? "…" : "") + text.slice(start, end).replace(/\n/g, " ") + (end < text.length ? "…" : "");
}

/**
 * @param {Record<string, any>} calls the report's details, by call ("12": {content: {sent, context}})
 * @param {Record<string, string>} texts segment texts by hash
 * @param {string} text
 * @returns {SearchResult}
 */
export function searchContents(calls, texts, text) {
  const query = text.trim().toLowerCase();
  /** @type {SearchResult} */
  const out = { text, results: [], more: 0 };
  if (query.length < 2) return out;
  /** @type {Map<string, Found>} */
  const first = new Map();
  /** @type {Set<string>} */
  const missed = new Set();
  const order = Object.keys(calls)
    .map(Number)
    .filter((c) => Number.isInteger(c))
    .sort((a, b) => a - b);
  for (const call of order) {
    const content = calls[String(call)]?.content ?? {};
    for (const item of [...(content.sent ?? []), ...(content.context ?? [])]) {
      if (!item) continue;
      const key = typeof item.hash === "string" ? item.hash : `${call}:${item.label}`;
      const seen = first.get(key);
      if (seen) {
        seen.calls++;
        continue;
      }
      if (missed.has(key)) continue;
      const body = typeof item.hash === "string" ? (texts[item.hash] ?? "") : String(item.text ?? "");
      const label = String(item.label ?? "");
      const at = body.toLowerCase().indexOf(query);
      if (at < 0 && !label.toLowerCase().includes(query)) {
        missed.add(key);
        continue;
      }
      first.set(key, { call, label, part: String(item.part ?? ""), snippet: at >= 0 ? snippet(body, at, query.length) : "", calls: 1 });
    }
  }
  const results = [...first.values()].sort((a, b) => a.call - b.call);
  out.results = results.slice(0, MAX_RESULTS);
  out.more = Math.max(0, results.length - MAX_RESULTS);
  return out;
}
