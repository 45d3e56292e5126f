// @ts-check
/**
 * Escaping and display helpers for untrusted transcript text.
 *
 * The DOM is built with `textContent` only, so text there needs no escaping. Plotly is
 * different: hover text, bar text and tick labels go through its pseudo-HTML renderer
 * (`<b>`, `<br>`, `<a href>`, `<span style>`…), so every string taken from the data
 * must pass through {@link escapeHtml} before it reaches a trace.
 */

/** @type {Record<string, string>} */
const ENTITIES = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  // Plotly decodes only a few named entities (amp, lt, gt, nbsp, …, but not quot), and
  // any numeric one: quotes use numeric references so they show as quotes everywhere.
  '"': "&#34;",
  "'": "&#39;",
};

/**
 * Escape text for an HTML (or Plotly pseudo-HTML) context: `& < > " '`.
 *
 * @param {unknown} value anything; null and undefined become ""
 * @returns {string}
 */
export function escapeHtml(value) {
  if (value === null || value === undefined) return "";
  return String(value).replace(/[&<>"']/g, (char) => ENTITIES[char]);
}

/**
 * Shorten `text` to at most `limit` characters, ending with "…" when cut.
 *
 * @param {string} text
 * @param {number} limit
 * @returns {string}
 */
export function truncate(text, limit) {
  if (text.length <= limit) return text;
  if (limit <= 1) return "…".slice(0, limit);
  return `${text.slice(0, limit - 1)}…`;
}

/**
 * A token as a chip shows it: whitespace made visible, empty as "∅".
 *
 * @param {string | null | undefined} token
 * @returns {string}
 */
export function visibleToken(token) {
  if (token === null || token === undefined || token === "") return "∅";
  return token.replace(/\r\n|\n/g, "↵").replace(/\r/g, "␍").replace(/\t/g, "⇥").replace(/ /g, "·");
}

/**
 * Split two texts into the common head, the differing middles and the common tail.
 *
 * `prefix + aMiddle + suffix === a` and `prefix + bMiddle + suffix === b`; the tail never
 * overlaps the head.
 *
 * @param {string} a
 * @param {string} b
 * @returns {{ prefix: string, aMiddle: string, bMiddle: string, suffix: string }}
 */
export function splitDiff(a, b) {
  const limit = Math.min(a.length, b.length);
  let head = 0;
  while (head < limit && a.charCodeAt(head) === b.charCodeAt(head)) head++;
  // do not cut a surrogate pair in two
  if (head > 0 && head < limit && isHighSurrogate(a.charCodeAt(head - 1))) head--;
  let tail = 0;
  const room = limit - head;
  while (tail < room && a.charCodeAt(a.length - 1 - tail) === b.charCodeAt(b.length - 1 - tail)) {
    tail++;
  }
  if (tail > 0 && tail < room && isLowSurrogate(a.charCodeAt(a.length - tail))) tail--;
  return {
    prefix: a.slice(0, head),
    aMiddle: a.slice(head, a.length - tail),
    bMiddle: b.slice(head, b.length - tail),
    suffix: a.slice(a.length - tail),
  };
}

/** @param {number} code */
function isHighSurrogate(code) {
  return code >= 0xd800 && code <= 0xdbff;
}

/** @param {number} code */
function isLowSurrogate(code) {
  return code >= 0xdc00 && code <= 0xdfff;
}
