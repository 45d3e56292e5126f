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
 * @property {ArrayLike<number | null>} reportedRead cache read the provider reported (null: not reported)
 * @property {ArrayLike<number | null>} hitRatio reported cache read ÷ reported input, token-weighted (null: not reported)
 * @property {ArrayLike<boolean>} miss the provider read less than its rules predict
 * @property {ArrayLike<number>} missCause index into meta.miss_causes, -1 for none
 * @property {ArrayLike<number | null>} missTokens expected − reported cache read
 * @property {ArrayLike<boolean>} material the drift cost something (false: folded)
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
 * @property {ArrayLike<number | null>} billed reported usage priced (null: not reported or unpriced)
 * @property {ArrayLike<number | null>} waste each call's waste (money/_metrics.py; null: not counted)
 * @property {Map<number, number>} rowOf call → row
 */

/**
 * @typedef {object} Meta
 * @property {string | null} [path]
 * @property {string} [format]
 * @property {number} [n_calls]
 * @property {string[]} [threads] thread names
 * @property {number[]} [thread_parents] parent thread index per thread, -1 for a root
 * @property {string[]} [miss_causes]
 * @property {number | null} [billed_usd]
 * @property {number | null} [waste_usd] the session's waste (billed − ideal, else simulated − ideal)
 * @property {WasteOf | null} [waste_of] what the waste sums
 * @property {boolean} [compare_built] false until the comparison was asked for
 * @property {string[]} [unpriced_models] models the target cannot price
 * @property {string[]} [billed_unpriced_models] recorded models without a price (left out of billed)
 * @property {Record<string, any>} [reported]
 * @property {string[]} [models] priced models of the target's provider
 * @property {string | null} [notice] why the cost chart is empty, or a pricing warning
 * @property {string[]} [causes]
 * @property {number} [ttl_seconds]
 * @property {{ input_tokens: number, prefix_tokens: number, new_tokens: number, drifts: number }} [totals]
 * @property {Target | null} [target]
 * @property {CompareRow[]} [compare]
 * @property {boolean} [approximate]
 * @property {boolean} [reconstructed]
 * @property {Verdicts | null} [verdicts] the provider's own verdicts against cacheviz's reading
 *
 * @typedef {object} Verdicts
 * @property {number} compared comparable verdicts compared
 * @property {number} agree those cacheviz agrees with
 * @property {number | null} agree_rate
 * @property {number} populated
 * @property {Disagreement[]} disagreements both readings of each call cacheviz disagrees on
 *
 * @typedef {object} Disagreement
 * @property {number} call
 * @property {string} provider the provider's verdict
 * @property {number | null} [provider_missed_tokens]
 * @property {string} cacheviz cacheviz's own cause, or "no change found"
 * @property {string | null} [detail] the evidence, one line
 *
 * @typedef {object} Target
 * @property {string} provider
 * @property {string | null} [model]
 * @property {string | null} [price_source]
 * @property {number | null} [total_cost_usd]
 * @property {number | null} [ideal_usd]
 * @property {number | null} [score]
 * @property {number | null} [token_scale]
 * @property {number | null} [hit_ratio] simulated cache read ÷ input
 * @property {string | null} [warning] e.g. priced under another vendor's tokenizer
 * @property {boolean} [self_hosted] a self-hosted engine (vllm, sglang, llamacpp): no prices, no bill
 * @property {boolean} [own] the session replayed under its own provider's rules
 * @property {number | null} [waste_usd] its waste (the session's when `own`)
 * @property {WasteOf | null} [waste_of] what that waste sums
 * @property {number | null} [prefill_ms] a self-hosted engine: the session's estimated prefill time (ms)
 * @property {number | null} [prefill_ms_stable] the same session's without drift (ms)
 * @property {number | null} [prefill_factor] prefill_ms ÷ prefill_ms_stable
 * @property {PrefillDrift[]} [prefill_drifts] each drift point's prefill (Simulation columns)
 *
 * @typedef {object} PrefillDrift
 * @property {number} call
 * @property {number | null} prefill_ms the call's estimated prefill time (ms)
 * @property {number | null} prefill_ms_stable the same call's had its prefix been kept (ms)
 * @property {number | null} prefill_factor prefill_ms ÷ prefill_ms_stable
 *
 * @typedef {object} CompareRow
 * @property {string} target
 * @property {number | null} [cost_usd]
 * @property {number | null} [ideal_usd]
 * @property {number | null} [cache_read_tokens]
 * @property {number | null} [cache_write_tokens]
 * @property {number | null} [uncached_tokens]
 * @property {string | null} [error] null, or one line: why the row has no cost ("no price …")
 *   or, with null tokens too, why its replay failed
 * @property {number | null} [prefill_factor] a self-hosted engine's row: the session's prefill factor
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
    {
      ts_ms: null, thread: 0, drift: false, cause: -1, label: null, tokens_lost: 0, idle_gap: false,
      reported_read: null, hit_ratio: null, miss: false, miss_cause: -1, shortfall_tokens: null, material: null,
    },
  );
  // without the `material` column (older data), a drift is material when it lost tokens
  const material = Array.from(c.material, (m, i) => (m === null || m === undefined ? Number(c.tokens_lost[i]) > 0 : Boolean(m)));
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
    reportedRead: c.reported_read,
    hitRatio: c.hit_ratio,
    miss: c.miss,
    missCause: c.miss_cause,
    missTokens: c.shortfall_tokens,
    material,
    rowOf: indexBy(c.call),
  };
}

/**
 * Thread names of the meta.
 *
 * @param {Meta} meta
 * @returns {string[]}
 */
export function threadNames(meta) {
  return meta.threads ?? [];
}

/**
 * The thread tree as select options in depth-first order: sub-agents under their parent.
 *
 * @param {string[]} names
 * @param {number[] | undefined} parents parent index per thread (-1 or missing: a root)
 * @returns {{ index: number, depth: number }[]}
 */
export function threadTree(names, parents) {
  /** @type {Map<number, number[]>} */
  const children = new Map();
  const roots = [];
  for (let i = 0; i < names.length; i++) {
    const p = parents && Number.isInteger(parents[i]) ? parents[i] : -1;
    if (p >= 0 && p < names.length && p !== i) {
      let list = children.get(p);
      if (!list) children.set(p, (list = []));
      list.push(i);
    } else roots.push(i);
  }
  /** @type {{ index: number, depth: number }[]} */
  const out = [];
  const seen = new Set();
  const visit = (/** @type {number} */ i, /** @type {number} */ depth) => {
    if (seen.has(i)) return;
    seen.add(i);
    out.push({ index: i, depth });
    for (const c of children.get(i) ?? []) visit(c, depth + 1);
  };
  for (const r of roots) visit(r, 0);
  for (let i = 0; i < names.length; i++) visit(i, 0); // cycles: still listed
  return out;
}

/**
 * What a waste figure sums (`cacheviz.money._metrics.Waste`): on the billed basis, billed
 * and ideal over the calls with reported usage; else simulated and ideal.
 *
 * @typedef {{ basis: string, spent_usd: number | null, ideal_usd: number | null, calls: number, excluded: number }} WasteOf
 */

/**
 * The filter the header controls set: a thread, a cause, a search text; `found` are the
 * calls the full-text search found (shown too).
 *
 * @typedef {{ thread: number, cause: string, search: string, found?: Set<number> | null }} Filter
 */

/**
 * The call a search names ("12" or "#12"), or null when it searches text.
 *
 * @param {string | null | undefined} search
 * @returns {number | null}
 */
export function searchedCall(search) {
  const query = (search ?? "").trim();
  return /^#?\d+$/.test(query) ? Number(query.replace("#", "")) : null;
}

/**
 * Rows matching a filter, in call order. `cause` is "" (any), "drift", "miss", or a drift
 * cause name; `search` matches a call number ("12" or "#12") or the drift's segment label.
 *
 * @param {Timeline} timeline
 * @param {Meta} meta
 * @param {Filter} filter
 * @returns {number[]}
 */
export function filterRows(timeline, meta, filter) {
  const base = visibleRows(timeline, filter.thread);
  const causes = meta.causes ?? [];
  const cause = filter.cause ?? "";
  const query = (filter.search ?? "").trim().toLowerCase();
  if (!cause && !query) return base;
  const callQuery = searchedCall(query);
  return base.filter((r) => {
    if (cause === "drift" && !timeline.drift[r]) return false;
    if (cause === "miss" && !timeline.miss[r]) return false;
    if (cause && cause !== "drift" && cause !== "miss") {
      if (!timeline.drift[r] || nameAt(causes, timeline.cause[r]) !== cause) return false;
    }
    if (query) {
      if (callQuery !== null) return Number(timeline.call[r]) === callQuery;
      const label = timeline.label[r];
      const causeName = timeline.drift[r] ? nameAt(causes, timeline.cause[r]) : "";
      if (filter.found?.has(Number(timeline.call[r]))) return true;
      return String(label ?? "").toLowerCase().includes(query) || causeName.toLowerCase().includes(query);
    }
    return true;
  });
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
    cache_read_tokens: 0,
    cache_write_tokens: 0,
    uncached_tokens: 0,
    billed_usd: null,
    waste_usd: null,
  });
  return {
    n: numRows,
    call: c.call,
    cost: c.cost_usd,
    ideal: c.ideal_usd,
    read: c.cache_read_tokens,
    write: c.cache_write_tokens,
    uncached: c.uncached_tokens,
    billed: c.billed_usd,
    waste: c.waste_usd,
    rowOf: indexBy(c.call),
  };
}

/**
 * Rows `more` after rows `rows`: the live inspector's `append` message (cacheviz/ui/live.py)
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
function indexBy(calls) {
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
 * drift and miss calls; null when there is none. With no current call, the first (or last).
 *
 * @param {Timeline} timeline
 * @param {number[]} rows visible rows in call order
 * @param {number} current selected call, -1 for none
 * @param {1 | -1} step
 * @param {boolean} driftsOnly
 * @returns {number | null}
 */
export function stepCall(timeline, rows, current, step, driftsOnly) {
  const ok = (/** @type {number} */ r) => !driftsOnly || Boolean(timeline.drift[r]) || Boolean(timeline.miss[r]);
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
