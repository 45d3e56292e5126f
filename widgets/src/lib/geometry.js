// @ts-check
/** Run geometry, plot heights and cumulative sums: plain arrays ready for bar/scatter traces. */
import { isNumber } from "./format.js";

/**
 * Running total; missing values (null, NaN) add nothing.
 *
 * @param {ArrayLike<number | null | undefined>} values
 * @returns {number[]}
 */
export function cumulativeSum(values) {
  const out = new Array(values.length);
  let total = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (isNumber(v)) total += v;
    out[i] = total;
  }
  return out;
}

/**
 * Bars of one status: horizontal bars at `y` (call) from `base` (start) of length `x`.
 *
 * @typedef {{ y: number[], base: number[], x: number[], runs: number[] }} StatusBars
 */

/**
 * Group the status runs of the visible calls by status, as bar base/length arrays, so
 * the whole shape map is one bar trace per status whatever the number of runs.
 *
 * Runs with end ≤ start are dropped; unknown status codes are counted as `fallback`.
 *
 * @param {{ n: number, call: ArrayLike<number>, start: ArrayLike<number>, end: ArrayLike<number>, status: ArrayLike<number> }} shape
 * @param {(call: number) => boolean} visible
 * @param {number} nStatuses
 * @param {number} [fallback=3] status used for unknown codes
 * @returns {{ bars: StatusBars[], maxEnd: number }}
 */
export function statusBars(shape, visible, nStatuses, fallback = 3) {
  /** @type {StatusBars[]} */
  const bars = [];
  for (let s = 0; s < nStatuses; s++) bars.push({ y: [], base: [], x: [], runs: [] });
  let maxEnd = 0;
  for (let i = 0; i < shape.n; i++) {
    const call = Number(shape.call[i]);
    if (!visible(call)) continue;
    const start = Number(shape.start[i]);
    const end = Number(shape.end[i]);
    if (!(end > start)) continue;
    let status = Number(shape.status[i]);
    if (!(status >= 0 && status < nStatuses)) status = fallback;
    const b = bars[status];
    b.y.push(call);
    b.base.push(start);
    b.x.push(end - start);
    b.runs.push(i);
    if (end > maxEnd) maxEnd = end;
  }
  return { bars, maxEnd };
}

/**
 * A plot height for `n` rows of bars, clamped to a readable range.
 *
 * @param {number} n
 * @param {number} perRow pixels per row
 * @param {number} min
 * @param {number} max
 * @param {number} [chrome=90] axes and legend
 * @returns {number}
 */
export function plotHeight(n, perRow, min, max, chrome = 90) {
  return Math.round(Math.max(min, Math.min(max, n * perRow + chrome)));
}
