// @ts-check
/** Run geometry, prefix lines and cumulative sums: plain arrays ready for bar/scatter traces. */
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
 * The common-prefix line of the timeline: per thread, its calls' prefix in call order,
 * threads separated by a gap (null), so one trace draws every thread's line.
 *
 * @param {{ call: ArrayLike<number>, prefix: ArrayLike<number>, thread: ArrayLike<number> }} timeline
 * @param {number[]} rows visible rows in call order
 * @returns {{ x: (number | null)[], y: (number | null)[] }}
 */
export function prefixLine(timeline, rows) {
  /** @type {Map<number, number[]>} */
  const byThread = new Map();
  for (const r of rows) {
    const l = Number(timeline.thread[r]);
    let list = byThread.get(l);
    if (!list) byThread.set(l, (list = []));
    list.push(r);
  }
  /** @type {(number | null)[]} */
  const x = [];
  /** @type {(number | null)[]} */
  const y = [];
  for (const list of byThread.values()) {
    if (x.length) {
      x.push(null);
      y.push(null);
    }
    for (const r of list) {
      x.push(timeline.call[r]);
      y.push(timeline.prefix[r]);
    }
  }
  return { x, y };
}

/**
 * The common-prefix line of the shape map (calls down the y axis): a tick across each
 * call's bar at its prefix end, joined to the next call's tick when that call is the
 * next row of the same thread (so interleaved threads are not cross-linked).
 *
 * @param {{ call: ArrayLike<number>, prefix: ArrayLike<number>, thread: ArrayLike<number> }} timeline
 * @param {number[]} rows visible rows in call order
 * @param {number} [half=0.45] half the bar thickness, in call units
 * @returns {{ x: (number | null)[], y: (number | null)[] }}
 */
export function prefixTicks(timeline, rows, half = 0.45) {
  /** @type {(number | null)[]} */
  const x = [];
  /** @type {(number | null)[]} */
  const y = [];
  for (let k = 0; k < rows.length; k++) {
    const r = rows[k];
    const c = Number(timeline.call[r]);
    const p = Number(timeline.prefix[r]);
    x.push(p, p);
    y.push(c - half, c + half);
    const next = k + 1 < rows.length ? rows[k + 1] : -1;
    const joined =
      next >= 0 &&
      Number(timeline.thread[next]) === Number(timeline.thread[r]) &&
      Number(timeline.call[next]) === c + 1;
    if (joined) {
      // riser at the boundary between the two bars
      const q = Number(timeline.prefix[next]);
      x.push(p, q);
      y.push(c + 0.5, c + 0.5);
    } else {
      x.push(null);
      y.push(null);
    }
  }
  return { x, y };
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
