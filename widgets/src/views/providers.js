// @ts-check
/** The target's headline numbers and the provider comparison table. */
import { facts, h } from "../lib/dom.js";
import { formatNumber, formatPercent, formatTokens, formatUsd, isNumber } from "../lib/format.js";

/** @typedef {import("../lib/data.js").Meta} Meta */

/**
 * @param {Document} doc
 * @param {Meta} meta
 * @returns {HTMLElement}
 */
export function targetFacts(doc, meta) {
  const t = meta.target;
  if (!t) {
    return h(doc, "p", { className: "cacheviz-panel__empty", text: "No provider target is simulated." });
  }
  /** @type {[string, string][]} */
  const pairs = [
    ["provider", String(t.provider)],
    ["model", t.model ? String(t.model) : "as recorded"],
    ["total cost", formatUsd(t.total_cost_usd)],
    ["ideal bound", formatUsd(t.ideal_cost_usd)],
  ];
  if (isNumber(t.total_cost_usd) && isNumber(t.ideal_cost_usd) && t.ideal_cost_usd > 0) {
    pairs.push(["cost / ideal", `${formatNumber(t.total_cost_usd / t.ideal_cost_usd, 2)}×`]);
  }
  pairs.push(
    ["reconciliation score", isNumber(t.score) ? formatPercent(t.score, 0) : "not reported"],
    ["token scale", formatNumber(t.token_scale ?? null, 3)],
  );
  if (t.price_source) pairs.push(["prices", String(t.price_source)]);
  return facts(doc, "cacheviz-providers__target", pairs);
}

/**
 * `meta.compare` as a table; the row of the current target is highlighted.
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
  const head = ["provider:model", "cost", "ideal", "cost / ideal", "cache read", "cache write", "uncached"];
  const body = rows.map((row) => {
    const ratio =
      isNumber(row.cost_usd) && isNumber(row.ideal_cost_usd) && row.ideal_cost_usd > 0
        ? `${formatNumber(row.cost_usd / row.ideal_cost_usd, 2)}×`
        : "—";
    const cells = [
      String(row.target ?? ""),
      formatUsd(row.cost_usd),
      formatUsd(row.ideal_cost_usd),
      ratio,
      formatTokens(row.cache_read_tokens),
      formatTokens(row.cache_write_tokens),
      formatTokens(row.uncached_tokens),
    ];
    const isCurrent = current !== null && String(row.target) === current;
    return h(
      doc,
      "tr",
      { className: isCurrent ? "cacheviz-providers__row--current" : "" },
      cells.map((text) => h(doc, "td", { text })),
    );
  });
  return h(doc, "div", { className: "cacheviz-providers__wrap" }, [
    h(doc, "table", { className: "cacheviz-providers__table" }, [
      h(doc, "thead", {}, [h(doc, "tr", {}, head.map((text) => h(doc, "th", { text, attrs: { scope: "col" } })))]),
      h(doc, "tbody", {}, body),
    ]),
  ]);
}

/**
 * @param {string} provider
 * @param {string | null | undefined} model
 */
export function targetKey(provider, model) {
  return model ? `${provider}:${model}` : String(provider);
}
