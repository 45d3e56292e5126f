// @ts-check
/**
 * Overview + detail: the detail views draw a window of at most {@link DETAIL_MAX} calls
 * of the shown rows (the overview, `views/overview.js`, moves it). Calls are placed at
 * their position among the shown rows (so a filter leaves no gaps).
 */

/** At most this many calls in the detail views (the rest is in the overview). */
export const DETAIL_MAX = 400;
/** The detail window a long session opens with (bars stay a few pixels wide). */
export const DEFAULT_WINDOW = 150;
/**
 * A window `[start, end)` over positions of `n` shown rows.
 *
 * @typedef {{ start: number, end: number }} Window
 */

/**
 * The window clamped to `n` rows and {@link DETAIL_MAX} calls.
 *
 * @param {Window | null} window
 * @param {number} n
 * @param {number} [max]
 * @returns {Window}
 */
export function clampWindow(window, n, max = DETAIL_MAX) {
  if (!window) return { start: 0, end: Math.min(n, n > max ? DEFAULT_WINDOW : max) };
  let start = Math.max(0, Math.min(Math.floor(window.start), n));
  let end = Math.max(start, Math.min(Math.ceil(window.end), n));
  if (end - start > max) end = start + max;
  if (end === start && n > 0) {
    start = Math.max(0, Math.min(start, n - 1));
    end = Math.min(n, start + Math.min(max, n));
  }
  return { start, end };
}

/**
 * A window of the same width centred on `position`.
 *
 * @param {Window} window
 * @param {number} position
 * @param {number} n
 * @returns {Window}
 */
export function centerWindow(window, position, n) {
  const width = Math.max(1, window.end - window.start);
  const start = Math.max(0, Math.min(n - width, Math.round(position - width / 2)));
  return clampWindow({ start, end: start + width }, n);
}

/**
 * The window that shows `position`: unchanged when it does, else centred on it.
 *
 * @param {Window} window
 * @param {number} position
 * @param {number} n
 * @returns {Window}
 */
export function windowShowing(window, position, n) {
  if (position >= window.start && position < window.end) return window;
  return centerWindow(window, position, n);
}

/**
 * Position of each shown call (call → position among `rows`).
 *
 * @param {{ call: ArrayLike<number> }} timeline
 * @param {number[]} rows
 * @returns {Map<number, number>}
 */
export function positionsOf(timeline, rows) {
  const map = new Map();
  for (let k = 0; k < rows.length; k++) map.set(Number(timeline.call[rows[k]]), k);
  return map;
}

/**
 * Axis ticks for positions `[start, end)`: the call numbers, when they differ from the
 * positions (a filter is on), else nothing (Plotly's own ticks are the call numbers).
 *
 * @param {{ call: ArrayLike<number> }} timeline
 * @param {number[]} rows all shown rows
 * @param {Window} window
 * @param {number} [count=8]
 * @returns {Record<string, any>}
 */
export function callTicks(timeline, rows, window, count = 8) {
  let identity = true;
  for (let k = window.start; k < window.end && identity; k++) identity = Number(timeline.call[rows[k]]) === k;
  if (identity) return {};
  const width = window.end - window.start;
  const step = Math.max(1, Math.ceil(width / count));
  const tickvals = [];
  const ticktext = [];
  for (let k = window.start; k < window.end; k += step) {
    tickvals.push(k);
    ticktext.push(String(timeline.call[rows[k]]));
  }
  return { tickmode: "array", tickvals, ticktext };
}
