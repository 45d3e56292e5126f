// @ts-check
/** The header: what session this is, totals, the thread filter, the selection, status. */
import { threadCounts, nameAt, sumRows } from "../lib/data.js";
import { facts, h, setChildren } from "../lib/dom.js";
import { formatShare, formatTokens, formatUsd, isNumber } from "../lib/format.js";

/**
 * @typedef {import("../lib/data.js").Meta} Meta
 * @typedef {import("../lib/data.js").Timeline} Timeline
 * @typedef {import("../lib/data.js").Costs} Costs
 * @typedef {{ meta: Meta, timeline: Timeline | null, costs: Costs | null, rows: number[], thread: number, selected: number }} HeaderState
 */

/**
 * @param {Document} doc
 * @param {{ onThread: (thread: number) => void, onClear: () => void }} actions
 */
export function createHeader(doc, actions) {
  const title = h(doc, "div", { className: "cacheviz-header__title" });
  const totals = h(doc, "div");
  const select = h(doc, "select", { attrs: { "aria-label": "thread" } });
  select.addEventListener("change", () => actions.onThread(Number(select.value)));
  const thread = h(doc, "label", { className: "cacheviz-header__thread" }, ["thread ", select]);
  const selection = h(doc, "span", { className: "cacheviz-header__selection" });
  const clear = h(doc, "button", { className: "cacheviz-button", text: "clear selection", attrs: { type: "button" } });
  clear.addEventListener("click", () => actions.onClear());
  const status = h(doc, "span", { className: "cacheviz-header__status", attrs: { role: "status", "aria-live": "polite" } });
  const controls = h(doc, "div", { className: "cacheviz-header__controls" }, [thread, selection, clear, status]);
  const el = h(doc, "header", { className: "cacheviz-header" }, [title, totals, controls]);

  /** @param {HeaderState} state */
  function update(state) {
    const { meta, timeline } = state;
    const badges = [];
    if (meta.approximate) {
      badges.push(
        h(doc, "span", {
          className: "cacheviz-header__badge",
          text: "≈ approximate tokens",
          title: "The model's tokenizer is not public: tokens are counted with o200k_base.",
        }),
      );
    }
    if (meta.reconstructed) {
      badges.push(
        h(doc, "span", {
          className: "cacheviz-header__badge",
          text: "rebuilt requests",
          title: "Some requests were rebuilt from a conversation log, not the bytes sent; unlogged prefixes are inferred.",
        }),
      );
    }
    const nCalls = timeline ? timeline.n : (meta.n_calls ?? 0);
    setChildren(title, [
      h(doc, "span", { className: "cacheviz-header__path", text: meta.path ? String(meta.path) : "session" }),
      meta.format ? h(doc, "span", { className: "cacheviz-header__format", text: String(meta.format) }) : null,
      h(doc, "span", { className: "cacheviz-header__format", text: `${formatTokens(nCalls)} calls` }),
      ...badges,
    ]);

    const filtered = state.thread >= 0 && timeline !== null;
    const sums = filtered || !meta.totals ? (timeline ? sumRows(timeline, state.rows) : null) : meta.totals;
    /** @type {[string, string][]} */
    const pairs = [];
    if (filtered) pairs.push(["calls shown", formatTokens(state.rows.length)]);
    if (sums) {
      pairs.push(
        ["input tokens", formatTokens(sums.input_tokens)],
        ["common prefix", `${formatTokens(sums.prefix_tokens)} (${formatShare(sums.prefix_tokens, sums.input_tokens)})`],
        ["new tokens", formatTokens(sums.new_tokens)],
        ["drifts", formatTokens(sums.drifts)],
      );
    }
    const target = meta.target;
    if (target) {
      let cost = target.total_cost_usd;
      let ideal = target.ideal_cost_usd;
      if (filtered && state.costs) {
        ({ cost, ideal } = sumCosts(state.costs, timeline, state.rows));
      }
      const name = target.model ? `${target.provider}:${target.model}` : String(target.provider);
      pairs.push([`cost (${name})`, formatUsd(cost)], ["ideal bound", formatUsd(ideal)]);
    }
    setChildren(totals, [facts(doc, "cacheviz-header__totals", pairs)]);

    const names = meta.threads ?? [];
    const counts = timeline ? threadCounts(timeline, names.length) : names.map(() => 0);
    const options = [h(doc, "option", { text: `all (${names.length})`, attrs: { value: "-1" } })];
    names.forEach((_, i) => {
      options.push(h(doc, "option", { text: `${nameAt(names, i)} (${counts[i]} calls)`, attrs: { value: String(i) } }));
    });
    select.replaceChildren(...options);
    select.value = String(state.thread < names.length ? state.thread : -1);
    select.disabled = names.length < 2 && state.thread < 0;

    selection.textContent = state.selected >= 0 ? `selected: call ${state.selected}` : "no call selected";
    clear.disabled = state.selected < 0;
  }

  /**
   * @param {string} message
   */
  function setStatus(message) {
    const text = message ?? "";
    status.textContent = text;
    const busy = text === "" || /(…|\.\.\.)\s*$/.test(text);
    status.classList.toggle("cacheviz-header__status--error", !busy);
  }

  /** @param {number} selected */
  function setSelection(selected) {
    selection.textContent = selected >= 0 ? `selected: call ${selected}` : "no call selected";
    clear.disabled = selected < 0;
  }

  return { el, update, setStatus, setSelection };
}

/**
 * @param {Costs} costs
 * @param {Timeline} timeline
 * @param {number[]} rows
 */
function sumCosts(costs, timeline, rows) {
  let cost = 0;
  let ideal = 0;
  for (const r of rows) {
    const i = costs.rowOf.get(Number(timeline.call[r]));
    if (i === undefined) continue;
    const c = costs.cost[i];
    const d = costs.ideal[i];
    if (isNumber(c)) cost += c;
    if (isNumber(d)) ideal += d;
  }
  return { cost, ideal };
}
