// @ts-check
/** The target's headline numbers and the provider comparison table. */
import { facts, h } from "../lib/dom.js";
import { formatMs, formatNumber, formatPercent, formatTokens, formatUsd, isNumber, plural } from "../lib/format.js";
import { HELP, sumCosts } from "./header.js";

/** @typedef {import("../lib/data.js").Meta} Meta */

/**
 * The target's numbers; with `shown`, the costs are summed over the shown calls only (a
 * filter is on) and say so.
 *
 * @param {Document} doc
 * @param {Meta} meta
 * @param {{ costs: import("../lib/data.js").Costs, timeline: import("../lib/data.js").Timeline, rows: number[] } | null} [shown]
 * @returns {HTMLElement}
 */
export function targetFacts(doc, meta, shown = null) {
  const t = meta.target;
  if (!t) {
    return h(doc, "p", { className: "cacheviz-panel__empty", text: meta.notice ? String(meta.notice) : "No provider target is simulated." });
  }
  let total = t.total_cost_usd;
  let ideal = t.ideal_usd;
  let billed = isNumber(meta.billed_usd) ? meta.billed_usd : null;
  if (shown) ({ cost: total, ideal, billed } = sumCosts(shown.costs, shown.timeline, shown.rows));
  const scope = shown ? ` (${plural(shown.rows.length, "shown call")})` : "";
  /** @type {Array<[string, string] | [string, string, string]>} */
  const pairs = [
    ["provider", String(t.provider)],
    ["model", t.model ? String(t.model) : "as recorded"],
    [`simulated cost${scope}`, formatUsd(total), HELP.simulated],
  ];
  // beside the simulated cost: what the provider billed for the same calls
  if (billed !== null) pairs.push([`billed${scope}`, formatUsd(billed), HELP.billed]);
  pairs.push([`ideal${scope}`, formatUsd(ideal), HELP.ideal]);
  if (isNumber(total) && isNumber(ideal) && ideal > 0) {
    pairs.push(["cost / ideal", `${formatNumber(total / ideal, 2)}×`]);
  }
  pairs.push(
    ["reconciliation", isNumber(t.score) ? formatPercent(t.score, 0) : "not reported", HELP.reconciliation],
    ["token scale", formatNumber(t.token_scale ?? null, 3), HELP.scale],
  );
  if (t.price_source) pairs.push(["prices", String(t.price_source)]);
  pairs.push(...prefillPairs(t));
  const list = facts(doc, "cacheviz-providers__target", pairs);
  const notes = [t.warning, meta.notice].filter(Boolean).map((text) =>
    h(doc, "p", { className: "cacheviz-providers__warning", attrs: { role: "note" }, text: String(text) }),
  );
  return notes.length ? h(doc, "div", {}, [list, ...notes]) : list;
}

/**
 * A self-hosted target's estimated prefill: the session's factor and its costliest drift point.
 *
 * @param {import("../lib/data.js").Target} t
 * @returns {Array<[string, string] | [string, string, string]>}
 */
export function prefillPairs(t) {
  if (!isNumber(t.prefill_factor)) return [];
  /** @type {Array<[string, string] | [string, string, string]>} */
  const pairs = [
    ["prefill (estimated)", `${formatMs(t.prefill_ms)} · ${formatMs(t.prefill_ms_stable)} without drift`],
    ["prefill factor", `${formatNumber(t.prefill_factor, 2)}× the same session without drift`, HELP.prefill],
  ];
  const drifts = (t.prefill_drifts ?? []).filter((d) => isNumber(d.prefill_factor));
  if (drifts.length) {
    const worst = drifts.reduce((a, b) => (Number(b.prefill_factor) > Number(a.prefill_factor) ? b : a));
    pairs.push([
      "costliest drift point",
      `call ${worst.call}: ${formatNumber(worst.prefill_factor, 1)}× its prefill with the prefix kept (${plural(drifts.length, "drift point")})`,
      HELP.prefill,
    ]);
  }
  return pairs;
}

/**
 * `meta.compare` as a table; the row of the current target is highlighted. A row with an
 * `error` shows it as that row's own: a failed replay fills the row with its error; a model
 * without a price shows "no price" for the cost and its reason below the table.
 *
 * @param {Document} doc
 * @param {Meta} meta
 * @returns {HTMLElement}
 */
export function compareTable(doc, meta) {
  const rows = Array.isArray(meta.compare) ? meta.compare : [];
  if (!rows.length) {
    return h(doc, "p", { className: "cacheviz-panel__empty", text: "No provider comparison." });
  }
  const current = meta.target ? targetKey(meta.target.provider, meta.target.model) : null;
  // a self-hosted engine's row has a prefill factor: a column when one is shown
  const prefill = rows.some((row) => isNumber(row.prefill_factor));
  const head = ["provider:model (whole session)", "cost", "ideal", "cost / ideal", "cache read", "cache write", "uncached"];
  if (prefill) head.push("prefill × no drift");
  /** @type {HTMLElement[]} */
  const notes = [];
  const body = rows.map((row) => {
    const target = String(row.target ?? "");
    const isCurrent = current !== null && target === current;
    const attrs = { className: isCurrent ? "cacheviz-providers__row--current" : "" };
    const error = row.error ? String(row.error) : null;
    if (error !== null && !isNumber(row.cache_read_tokens)) {
      // the replay failed: no numbers, its error in their place
      return h(doc, "tr", { ...attrs, className: `${attrs.className} cacheviz-providers__row--failed`.trim() }, [
        h(doc, "td", { text: target }),
        h(doc, "td", { className: "cacheviz-providers__row-error", text: error, attrs: { colspan: String(head.length - 1), role: "note" } }),
      ]);
    }
    if (error !== null) {
      notes.push(h(doc, "p", { className: "cacheviz-providers__row-error", attrs: { role: "note" }, text: `${target}: ${error}` }));
    }
    const ratio =
      isNumber(row.cost_usd) && isNumber(row.ideal_usd) && row.ideal_usd > 0
        ? `${formatNumber(row.cost_usd / row.ideal_usd, 2)}×`
        : "—";
    const cells = [
      target,
      error !== null && !isNumber(row.cost_usd) ? "no price" : formatUsd(row.cost_usd),
      formatUsd(row.ideal_usd),
      ratio,
      formatTokens(row.cache_read_tokens),
      formatTokens(row.cache_write_tokens),
      formatTokens(row.uncached_tokens),
    ];
    if (prefill) cells.push(isNumber(row.prefill_factor) ? `${formatNumber(row.prefill_factor, 2)}×` : "—");
    return h(doc, "tr", attrs, cells.map((text) => h(doc, "td", { text })));
  });
  return h(doc, "div", { className: "cacheviz-providers__wrap" }, [
    h(doc, "table", { className: "cacheviz-providers__table" }, [
      h(doc, "thead", {}, [h(doc, "tr", {}, head.map((text) => h(doc, "th", { text, attrs: { scope: "col" } })))]),
      h(doc, "tbody", {}, body),
    ]),
    ...notes,
  ]);
}

/**
 * @param {string} provider
 * @param {string | null | undefined} model
 */
function targetKey(provider, model) {
  return model ? `${provider}:${model}` : String(provider);
}
