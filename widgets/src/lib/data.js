// @ts-check
/** The synced tables as typed columns, and the row bookkeeping every view shares. */
import { decodeTable } from "./arrow.js";
import { isNumber } from "./format.js";

/**
 * One row per call (`_timeline`).
 *
 * @typedef {object} Timeline
 * @property {number} n rows
 * @property {ArrayLike<number>} call call index
 * @property {ArrayLike<number | null>} tsMs request time, epoch ms
 * @property {ArrayLike<number>} thread index into meta.threads
 * @property {ArrayLike<number>} input input tokens
 * @property {ArrayLike<number>} prefix common-prefix tokens
 * @property {ArrayLike<number>} fresh new tokens
 * @property {ArrayLike<boolean>} drift
 * @property {ArrayLike<number>} cause index into meta.causes, -1 for none
 * @property {ArrayLike<string | null>} label segment where the prefix broke
 * @property {ArrayLike<number>} tokensLost
 * @property {ArrayLike<boolean>} idleGap
 * @property {Map<number, number>} rowOf call → row
 */

/**
 * Status runs along the token axis (`_shape`).
 *
 * @typedef {object} Shape
 * @property {number} n
 * @property {ArrayLike<number>} call
 * @property {ArrayLike<number>} start
 * @property {ArrayLike<number>} end
 * @property {ArrayLike<number>} status
 */

/**
 * Per-call costs under the target (`_costs`).
 *
 * @typedef {object} Costs
 * @property {number} n
 * @property {ArrayLike<number>} call
 * @property {ArrayLike<number | null>} cost
 * @property {ArrayLike<number | null>} ideal
 * @property {ArrayLike<number>} read
 * @property {ArrayLike<number>} write
 * @property {ArrayLike<number>} uncached
 * @property {Map<number, number>} rowOf call → row
 */

/**
 * @typedef {object} Meta
 * @property {string | null} [path]
 * @property {string} [format]
 * @property {number} [n_calls]
 * @property {string[]} [threads]
 * @property {string[]} [causes]
 * @property {number} [ttl_seconds]
 * @property {{ input_tokens: number, prefix_tokens: number, new_tokens: number, drifts: number }} [totals]
 * @property {Target | null} [target]
 * @property {CompareRow[]} [compare]
 * @property {boolean} [approximate]
 * @property {boolean} [reconstructed]
 *
 * @typedef {object} Target
 * @property {string} provider
 * @property {string | null} [model]
 * @property {string | null} [price_source]
 * @property {number | null} [total_cost_usd]
 * @property {number | null} [ideal_cost_usd]
 * @property {number | null} [score]
 * @property {number | null} [token_scale]
 *
 * @typedef {object} CompareRow
 * @property {string} target
 * @property {number | null} [cost_usd]
 * @property {number | null} [ideal_cost_usd]
 * @property {number | null} [cache_read_tokens]
 * @property {number | null} [cache_write_tokens]
 * @property {number | null} [uncached_tokens]
 */

/**
 * @param {unknown} value the `_timeline` trait
 * @returns {Timeline}
 */
export function decodeTimeline(value) {
  const { numRows, columns: c } = decodeTable(
    value,
    "_timeline",
    ["call", "input_tokens", "prefix_tokens", "new_tokens"],
    { ts_ms: null, thread: 0, drift: false, cause: -1, label: null, tokens_lost: 0, idle_gap: false },
  );
  return {
    n: numRows,
    call: c.call,
    tsMs: c.ts_ms,
    thread: c.thread,
    input: c.input_tokens,
    prefix: c.prefix_tokens,
    fresh: c.new_tokens,
    drift: c.drift,
    cause: c.cause,
    label: c.label,
    tokensLost: c.tokens_lost,
    idleGap: c.idle_gap,
    rowOf: indexBy(c.call),
  };
}

/**
 * @param {unknown} value the `_shape` trait
 * @returns {Shape}
 */
export function decodeShape(value) {
  const { numRows, columns: c } = decodeTable(value, "_shape", ["call", "start", "end", "status"]);
  return { n: numRows, call: c.call, start: c.start, end: c.end, status: c.status };
}

/**
 * @param {unknown} value the `_costs` trait
 * @returns {Costs}
 */
export function decodeCosts(value) {
  const { numRows, columns: c } = decodeTable(value, "_costs", ["call"], {
    cost_usd: null,
    ideal_usd: null,
    cache_read: 0,
    cache_write: 0,
    uncached: 0,
  });
  return {
    n: numRows,
    call: c.call,
    cost: c.cost_usd,
    ideal: c.ideal_usd,
    read: c.cache_read,
    write: c.cache_write,
    uncached: c.uncached,
    rowOf: indexBy(c.call),
  };
}

/**
 * Rows `more` after rows `rows`: the live inspector's `append` message (cacheviz/live.py)
 * brings the new calls' rows of a table; `rowOf` is rebuilt when the table has one.
 *
 * @template {{ n: number, call: ArrayLike<number> }} T
 * @param {T} rows
 * @param {T} more
 * @returns {T}
 */
export function appendRows(rows, more) {
  /** @type {Record<string, any>} */
  const out = { n: rows.n + more.n };
  const extra = /** @type {Record<string, any>} */ (more);
  for (const [key, column] of Object.entries(rows)) {
    if (key === "n" || key === "rowOf") continue;
    out[key] = [...Array.from(/** @type {ArrayLike<any>} */ (column)), ...Array.from(/** @type {ArrayLike<any>} */ (extra[key]))];
  }
  if ("rowOf" in rows) out.rowOf = indexBy(out.call);
  return /** @type {T} */ (out);
}

/**
 * @param {ArrayLike<number>} calls
 * @returns {Map<number, number>}
 */
export function indexBy(calls) {
  const map = new Map();
  for (let i = 0; i < calls.length; i++) map.set(Number(calls[i]), i);
  return map;
}

/**
 * Rows to show, in call order: all of them, or one thread's.
 *
 * @param {Timeline} timeline
 * @param {number} thread index into meta.threads; -1 for all
 * @returns {number[]}
 */
export function visibleRows(timeline, thread) {
  /** @type {number[]} */
  const rows = [];
  for (let i = 0; i < timeline.n; i++) {
    if (thread < 0 || timeline.thread[i] === thread) rows.push(i);
  }
  let sorted = true;
  for (let k = 1; k < rows.length && sorted; k++) sorted = timeline.call[rows[k - 1]] <= timeline.call[rows[k]];
  if (!sorted) rows.sort((a, b) => timeline.call[a] - timeline.call[b]);
  return rows;
}

/**
 * Sums over some rows of the timeline, for the header when a thread is picked.
 *
 * @param {Timeline} timeline
 * @param {number[]} rows
 * @returns {{ calls: number, input_tokens: number, prefix_tokens: number, new_tokens: number, drifts: number }}
 */
export function sumRows(timeline, rows) {
  let input = 0;
  let prefix = 0;
  let fresh = 0;
  let drifts = 0;
  for (const r of rows) {
    input += num(timeline.input[r]);
    prefix += num(timeline.prefix[r]);
    fresh += num(timeline.fresh[r]);
    if (timeline.drift[r]) drifts++;
  }
  return { calls: rows.length, input_tokens: input, prefix_tokens: prefix, new_tokens: fresh, drifts };
}

/**
 * How many calls each thread has (index → count).
 *
 * @param {Timeline} timeline
 * @param {number} nThreads
 * @returns {number[]}
 */
export function threadCounts(timeline, nThreads) {
  const counts = new Array(Math.max(0, nThreads)).fill(0);
  for (let i = 0; i < timeline.n; i++) {
    const l = timeline.thread[i];
    if (l >= 0 && l < counts.length) counts[l]++;
  }
  return counts;
}

/**
 * The call after (step 1) or before (step -1) `current` among `rows`, optionally only
 * drift calls; null when there is none. With no current call, the first (or last).
 *
 * @param {Timeline} timeline
 * @param {number[]} rows visible rows in call order
 * @param {number} current selected call, -1 for none
 * @param {1 | -1} step
 * @param {boolean} driftsOnly
 * @returns {number | null}
 */
export function stepCall(timeline, rows, current, step, driftsOnly) {
  const ok = (/** @type {number} */ r) => !driftsOnly || Boolean(timeline.drift[r]);
  if (step > 0) {
    for (const r of rows) if (timeline.call[r] > current && ok(r)) return timeline.call[r];
  } else {
    for (let k = rows.length - 1; k >= 0; k--) {
      const r = rows[k];
      if ((current < 0 || timeline.call[r] < current) && ok(r)) return timeline.call[r];
    }
  }
  return null;
}

/**
 * Name at `index` of `names`, or a placeholder.
 *
 * @param {string[] | undefined} names
 * @param {number} index
 * @param {string} [fallback]
 * @returns {string}
 */
export function nameAt(names, index, fallback) {
  if (names && index >= 0 && index < names.length && names[index] != null) return String(names[index]);
  return fallback ?? (index < 0 ? "" : `#${index}`);
}

/** @param {unknown} v */
function num(v) {
  return isNumber(v) ? v : 0;
}
