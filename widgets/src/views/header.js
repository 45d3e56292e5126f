// @ts-check
/** The header: what session this is, totals, the thread tree filter, the selection, status. */
import { threadCounts, nameAt, sumRows, threadNames, threadTree } from "../lib/data.js";
import { facts, h, setChildren } from "../lib/dom.js";
import { formatPercent, formatShare, formatTokens, formatUsd, isNumber, plural } from "../lib/format.js";

/**
 * @typedef {import("../lib/data.js").Meta} Meta
 * @typedef {import("../lib/data.js").Timeline} Timeline
 * @typedef {import("../lib/data.js").Costs} Costs
 * @typedef {{ meta: Meta, timeline: Timeline | null, costs: Costs | null, rows: number[], thread: number,
 *   cause?: string, search?: string, selected: number }} HeaderState
 */

/** Hover explanations of the header's numbers. */
export const HELP = {
  billed: "What the provider billed: the usage it reported for each call × the model's dated prices. Calls without reported usage or without a price are left out (see the note).",
  simulated: "What the session costs when cacheviz replays it under the chosen provider's caching rules (breakpoints, minimums, TTL, granularity) and prices.",
  ideal: "A lower bound: the cost had every reusable prefix been read from the cache.",
  waste: "Billed minus ideal over the calls with reported usage (calls without usage are left out and counted); simulated minus ideal where nothing was billed, or when another provider is simulated: what drifts, misses and cache writes cost above the ideal. Summed per call, never negative.",
  hit: "Share of input tokens read from the cache: as the provider reported (calls with usage), and as simulated.",
  scale: "Token scale: the provider's reported input tokens ÷ cacheviz's own count, fitted over the calls with usage (≈1 when the tokenizer is the model's own). Token figures of calls with usage are calibrated to the provider's count call by call; the others are scaled by this ratio.",
  verdicts: "The provider's own verdict on why a call missed (Anthropic cache diagnostics, OpenAI prompt_cache_diagnostics), compared with cacheviz's reading of the same call. Each disagreement is listed with both readings.",
  prefill:
    "A self-hosted engine's prefill factor: its estimated prefill time (cacheviz's cost model of the uncached tokens with attention over the cached context, prefill_ms) over the same time had each drift point's prefix been kept (the previous call of its thread read from the cache). For the session: the sum over its calls against the same session without drift.",
  reconciliation: "Reconciliation: the share of calls whose simulated cache read matches the reported one (within the provider's granularity), leaving out the calls whose simulated unlogged prefix was sized from their own reported read (a match there proves nothing). Low means the simulation and the provider disagree; look at the misses.",
};

/**
 * The calls cacheviz disagrees with the provider on, each with both readings.
 *
 * @param {Document} doc
 * @param {Meta["verdicts"]} verdicts
 */
function disagreementList(doc, verdicts) {
  const rows = verdicts?.disagreements ?? [];
  if (!rows.length) return null;
  const items = rows.map((d) => {
    const missed = isNumber(d.provider_missed_tokens) ? ` (${formatTokens(d.provider_missed_tokens)} tokens missed)` : "";
    return h(doc, "li", {
      text: `call ${d.call}: the provider says ${d.provider}${missed}; cacheviz reads ${d.cacheviz}${d.detail ? `: ${d.detail}` : ""}`,
    });
  });
  return h(doc, "details", { className: "cacheviz-header__disagreements" }, [
    h(doc, "summary", { text: `${plural(rows.length, "disagreement")} with the provider's verdict` }),
    h(doc, "ul", {}, items),
  ]);
}

/**
 * @param {Document} doc
 * @param {{ onThread: (thread: number) => void, onClear: () => void, onCause?: (cause: string) => void,
 *   onSearch?: (text: string) => void, onCostless?: (show: boolean) => void,
 *   onControl?: (name: string, value: string) => void, onPick?: (call: number) => void }} actions
 */
export function createHeader(doc, actions) {
  const title = h(doc, "div", { className: "cacheviz-header__title" });
  const totals = h(doc, "div");
  const select = h(doc, "select", { attrs: { "aria-label": "thread" } });
  select.addEventListener("change", () => actions.onThread(Number(select.value)));
  const thread = h(doc, "label", { className: "cacheviz-header__thread" }, ["thread ", select]);
  const causeSelect = h(doc, "select", { attrs: { "aria-label": "cause" } });
  causeSelect.addEventListener("change", () => actions.onCause?.(causeSelect.value));
  const causeLabel = h(doc, "label", { className: "cacheviz-header__cause" }, ["show ", causeSelect]);
  const search = /** @type {HTMLInputElement} */ (
    h(doc, "input", { attrs: { type: "search", placeholder: "call # or text", "aria-label": "search calls" } })
  );
  let searchTimer = /** @type {any} */ (null);
  search.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => actions.onSearch?.(search.value), 150);
  });
  const costless = /** @type {HTMLInputElement} */ (h(doc, "input", { attrs: { type: "checkbox" } }));
  costless.addEventListener("change", () => actions.onCostless?.(costless.checked));
  const costlessLabel = h(doc, "label", { className: "cacheviz-header__costless", title: "Drifts that cost nothing (e.g. in a side call with nothing cached) are folded by default." }, [costless, " costless drifts"]);
  const selection = h(doc, "span", { className: "cacheviz-header__selection" });
  const clear = h(doc, "button", { className: "cacheviz-button", text: "clear selection", attrs: { type: "button" } });
  clear.addEventListener("click", () => actions.onClear());
  const status = h(doc, "span", { className: "cacheviz-header__status", attrs: { role: "status", "aria-live": "polite" } });
  const controls = h(doc, "div", { className: "cacheviz-header__controls" }, [thread, causeLabel, search, costlessLabel, selection, clear, status]);
  // the target's controls (provider, model, TTL, breakpoints): the `_choices` trait's
  // options; hidden where there are none (the report)
  /** @type {Record<string, HTMLSelectElement>} */
  const targetSelects = {};
  const targetRow = h(doc, "div", { className: "cacheviz-header__target" });
  for (const [name, label] of [["provider", "provider"], ["model", "model"], ["ttl", "TTL"], ["breakpoints", "breakpoints"]]) {
    const box = /** @type {HTMLSelectElement} */ (h(doc, "select", { attrs: { "aria-label": label, "data-control": name } }));
    box.addEventListener("change", () => actions.onControl?.(name, box.value));
    targetSelects[name] = box;
    targetRow.append(h(doc, "label", { className: "cacheviz-header__control" }, [`${label} `, box]));
  }
  targetRow.hidden = true;
  // the full-text search's results: call, segment, the text around the match
  const found = h(doc, "div", { className: "cacheviz-header__found", attrs: { role: "list", "aria-label": "search results" } });
  found.hidden = true;
  const el = h(doc, "header", { className: "cacheviz-header" }, [title, totals, targetRow, controls, found]);

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

    const filtered = (state.thread >= 0 || Boolean(state.cause) || Boolean(state.search)) && timeline !== null;
    const sums = filtered || !meta.totals ? (timeline ? sumRows(timeline, state.rows) : null) : meta.totals;
    /** @type {Array<[string, string] | [string, string, string]>} */
    const pairs = [];
    if (filtered) pairs.push(["calls shown", formatTokens(state.rows.length)]);
    const target = meta.target;
    let billed = isNumber(meta.billed_usd) ? meta.billed_usd : null;
    let cost = target ? target.total_cost_usd : null;
    let ideal = target ? target.ideal_usd : null;
    const shown = filtered && state.costs !== null && timeline !== null;
    if (shown) {
      // a filter is on: the bill of the shown calls, from each call's billed cost
      ({ cost, ideal, billed } = sumCosts(/** @type {Costs} */ (state.costs), timeline, state.rows));
    }
    if (billed !== null || meta.billed_usd !== undefined) {
      const label = shown ? "billed (of the shown calls)" : "billed";
      const note = meta.billed_unpriced_models?.length ? ` (without ${meta.billed_unpriced_models.join(", ")}: unpriced)` : "";
      const none = shown && !state.rows.length ? " (no call shown)" : " (no usage reported)";
      pairs.push([label, `${formatUsd(billed)}${billed === null ? none : note}`, HELP.billed]);
    }
    if (target) {
      const name = target.model ? `${target.provider}:${target.model}` : String(target.provider);
      pairs.push([`simulated (${name})`, formatUsd(cost), HELP.simulated], ["ideal", formatUsd(ideal), HELP.ideal]);
      const waste = wasteOf(meta, shown ? { costs: /** @type {Costs} */ (state.costs), timeline, rows: state.rows } : null);
      if (waste !== null) pairs.push(["waste", wasteText(waste.usd, waste.of), HELP.waste]);
    }
    const reportedHit = meta.reported && isNumber(meta.reported.hit_ratio) ? formatPercent(meta.reported.hit_ratio, 0) : "—";
    const simulatedHit = target && isNumber(target.hit_ratio) ? formatPercent(target.hit_ratio, 0) : "—";
    if (!filtered && (reportedHit !== "—" || simulatedHit !== "—")) {
      pairs.push(["hit ratio reported / simulated", `${reportedHit} / ${simulatedHit}`, HELP.hit]);
    }
    if (target && isNumber(target.token_scale)) pairs.push(["token scale", target.token_scale.toFixed(3), HELP.scale]);
    if (target && isNumber(target.score)) pairs.push(["reconciliation", formatPercent(target.score, 0), HELP.reconciliation]);
    if (sums) {
      pairs.push(
        ["input tokens", formatTokens(sums.input_tokens)],
        ["common prefix", `${formatTokens(sums.prefix_tokens)} (${formatShare(sums.prefix_tokens, sums.input_tokens)})`],
        ["new tokens", formatTokens(sums.new_tokens)],
        ["drifts", formatTokens(sums.drifts)],
      );
    }
    if (timeline) {
      let misses = 0;
      for (const r of state.rows) if (timeline.miss[r]) misses++;
      if (misses || (meta.miss_causes && meta.miss_causes.length)) pairs.push(["misses", formatTokens(misses)]);
    }
    const verdicts = meta.verdicts;
    if (!filtered && verdicts && verdicts.compared) {
      const rate = isNumber(verdicts.agree_rate) ? ` (${formatPercent(verdicts.agree_rate, 0)})` : "";
      pairs.push(["provider verdicts", `cacheviz agrees on ${verdicts.agree} of ${verdicts.compared} compared${rate}`, HELP.verdicts]);
    }
    setChildren(totals, [facts(doc, "cacheviz-header__totals", pairs), !filtered ? disagreementList(doc, verdicts) : null]);

    const causeNames = new Set();
    if (timeline) for (let i = 0; i < timeline.n; i++) if (timeline.drift[i] && timeline.cause[i] >= 0) causeNames.add(nameAt(meta.causes, timeline.cause[i]));
    const causeOptions = [
      h(doc, "option", { text: "all calls", attrs: { value: "" } }),
      h(doc, "option", { text: "drifts", attrs: { value: "drift" } }),
      h(doc, "option", { text: "misses", attrs: { value: "miss" } }),
      ...[...causeNames].sort().map((c) => h(doc, "option", { text: `drift: ${c}`, attrs: { value: c } })),
    ];
    causeSelect.replaceChildren(...causeOptions);
    causeSelect.value = state.cause ?? "";

    const names = threadNames(meta);
    const counts = timeline ? threadCounts(timeline, names.length) : names.map(() => 0);
    const options = [h(doc, "option", { text: `all (${plural(names.length, "thread")})`, attrs: { value: "-1" } })];
    for (const { index, depth } of threadTree(names, meta.thread_parents)) {
      const indent = depth ? `${"\u00a0\u00a0".repeat(depth)}└ ` : "";
      options.push(
        h(doc, "option", {
          text: `${indent}${nameAt(names, index)} (${plural(counts[index], "call")})`,
          title: nameAt(names, index),
          attrs: { value: String(index) },
        }),
      );
    }
    select.replaceChildren(...options);
    select.value = String(state.thread < names.length ? state.thread : -1);
    select.disabled = names.length < 2 && state.thread < 0;

    selection.textContent = state.selected >= 0 ? `selected: call ${state.selected}` : "no call selected";
    clear.disabled = state.selected < 0;
  }

  // a re-simulation (status "simulating…") shows a spinner and the seconds it has run;
  // when it ends, its result (the new simulated cost, and the one before) or its error
  /** @type {number | null} */
  let busySince = null;
  /** @type {Meta["target"]} */
  let before = null;
  let done = "";
  let shown = "";
  /** @type {any} */
  let ticker = null;
  const view = doc.defaultView;
  const now = () => (view?.performance ?? performance).now();

  function paint() {
    const busy = busySince !== null;
    const error = !busy && shown !== "";
    status.textContent = busy ? `${shown} ${formatSeconds((now() - /** @type {number} */ (busySince)) / 1000)}` : error ? shown : done;
    status.classList.toggle("cacheviz-header__status--busy", busy);
    status.classList.toggle("cacheviz-header__status--error", error);
    status.classList.toggle("cacheviz-header__status--done", !busy && !error && done !== "");
    el.setAttribute("aria-busy", busy ? "true" : "false");
  }

  /**
   * Show the widget's `status`: a message ending in "…" is work in progress, "" is done,
   * anything else is an error. Idempotent: called on every redraw with the same text.
   *
   * @param {string} message
   * @param {Meta} [meta] the current meta (its target is the simulation's result)
   * @returns {boolean} whether work is in progress
   */
  function setStatus(message, meta) {
    const text = message ?? "";
    const busy = /(…|\.\.\.)\s*$/.test(text);
    if (busy && busySince === null) {
      busySince = now();
      before = meta?.target ?? null;
      done = "";
      ticker = view ? view.setInterval(paint, 1000) : null;
    } else if (!busy && busySince !== null) {
      const seconds = (now() - busySince) / 1000;
      busySince = null;
      if (ticker !== null) view?.clearInterval(ticker);
      ticker = null;
      done = text === "" ? resultText(seconds, before, meta?.target ?? null) : "";
    }
    shown = text;
    paint();
    return busy;
  }

  /** Stop the progress timer (the view is going away). */
  function dispose() {
    if (ticker !== null) view?.clearInterval(ticker);
    ticker = null;
  }

  /** @param {number} selected */
  function setSelection(selected) {
    selection.textContent = selected >= 0 ? `selected: call ${selected}` : "no call selected";
    clear.disabled = selected < 0;
  }

  /**
   * The target controls: each one's options and current value (no options: hidden).
   *
   * @param {Record<string, Array<[string, string]>>} choices
   * @param {Record<string, string>} values
   */
  function setControls(choices, values) {
    const any = choices && Object.keys(choices).length > 0;
    targetRow.hidden = !any;
    if (!any) return;
    for (const [name, box] of Object.entries(targetSelects)) {
      const options = Array.isArray(choices[name]) ? choices[name] : [];
      const value = String(values[name] ?? "");
      const list = options.some(([, v]) => String(v) === value) ? options : [...options, [value, value]];
      box.replaceChildren(...list.map(([text, v]) => h(doc, "option", { text: String(text), attrs: { value: String(v) } })));
      box.value = value;
      box.disabled = options.length < 2;
    }
  }

  /**
   * The full-text search's results (hidden when there is no search).
   *
   * @param {{ text?: string, results?: Array<{ call: number, label: string, part: string, snippet: string, calls: number }>, more?: number } | null} result
   */
  function setFound(result) {
    const results = result?.results ?? [];
    found.hidden = !result || !result.text;
    if (found.hidden) return found.replaceChildren();
    const items = results.map((r) =>
      h(doc, "button", { className: "cacheviz-header__found-item", attrs: { type: "button", role: "listitem", "data-call": String(r.call) } }, [
        h(doc, "b", { text: `call ${r.call}` }),
        ` · ${r.label}${r.calls > 1 ? ` (in ${plural(r.calls, "call")})` : ""}`,
        r.snippet ? h(doc, "span", { className: "cacheviz-header__found-text", text: ` ${r.snippet}` }) : null,
      ]),
    );
    for (const item of items) item.addEventListener("click", () => actions.onPick?.(Number(item.getAttribute("data-call"))));
    const head = results.length
      ? `${plural(results.length + (result?.more ?? 0), "segment")} contain “${result?.text}”${result?.more ? ` (first ${results.length} listed)` : ""}:`
      : `No segment's text contains “${result?.text}”.`;
    found.replaceChildren(h(doc, "div", { className: "cacheviz-header__found-head", text: head }), ...items);
  }

  return { el, update, setStatus, setSelection, setControls, setFound, dispose };
}

/** @param {number} seconds */
function formatSeconds(seconds) {
  return seconds < 10 ? `${seconds.toFixed(1)} s` : `${Math.round(seconds)} s`;
}

/** @param {NonNullable<Meta["target"]>} t */
function targetName(t) {
  return t.model ? `${t.provider}:${t.model}` : String(t.provider);
}

/**
 * What a finished re-simulation changed, in one line.
 *
 * @param {number} seconds
 * @param {Meta["target"]} before
 * @param {Meta["target"]} after
 */
export function resultText(seconds, before, after) {
  const took = `re-simulated in ${formatSeconds(seconds)}`;
  if (!after) return `${took}: no provider target`;
  const now = `${targetName(after)} ${formatUsd(after.total_cost_usd)}`;
  if (!before) return `${took}: ${now}`;
  const was = `${targetName(before)} ${formatUsd(before.total_cost_usd)}`;
  return `${took}: ${now} (${was === now ? "unchanged" : `was ${was}`})`;
}

/**
 * Waste, defined once (cacheviz/money/_metrics.py) and computed in Python: the whole
 * session is the target's figure (`target.waste_usd`: the session's own under its own
 * provider, else the replay's simulated cost above its ideal); a filter sums the shown
 * calls' per-call waste (`costs.waste`), with billed (or simulated) and ideal over the
 * same calls. Null when no call counts.
 *
 * @param {Meta} meta
 * @param {{ costs: Costs, timeline: Timeline, rows: number[] } | null} shown
 * @returns {{ usd: number, of: import("../lib/data.js").WasteOf | null } | null}
 */
export function wasteOf(meta, shown) {
  const target = meta.target;
  if (!target) return null;
  const of = target.waste_of ?? null;
  if (!shown) return isNumber(target.waste_usd) ? { usd: target.waste_usd, of } : null;
  const onBilled = of?.basis === "billed";
  let usd = 0;
  let spent = 0;
  let ideal = 0;
  let calls = 0;
  for (const r of shown.rows) {
    const i = shown.costs.rowOf.get(Number(shown.timeline.call[r]));
    if (i === undefined) continue;
    const w = shown.costs.waste[i];
    if (!isNumber(w)) continue;
    usd += w;
    const s = onBilled ? shown.costs.billed[i] : shown.costs.cost[i];
    spent += isNumber(s) ? s : 0;
    const d = shown.costs.ideal[i];
    ideal += isNumber(d) ? d : 0;
    calls++;
  }
  if (!calls) return null;
  const basis = onBilled ? "billed" : "simulated";
  return { usd, of: { basis, spent_usd: spent, ideal_usd: ideal, calls, excluded: shown.rows.length - calls } };
}

/**
 * What a waste figure sums, in words: "= billed $A − ideal $B of N calls with usage
 * (M without usage excluded)".
 *
 * @param {number} usd
 * @param {import("../lib/data.js").WasteOf | null} of
 */
export function wasteText(usd, of) {
  if (!of || !isNumber(of.spent_usd) || !isNumber(of.ideal_usd)) return formatUsd(usd);
  const what = of.basis === "billed" ? "with usage" : "simulated";
  let text = `${formatUsd(usd)} = ${of.basis} ${formatUsd(of.spent_usd)} − ideal ${formatUsd(of.ideal_usd)} of ${plural(of.calls, "call")} ${what}`;
  if (usd > of.spent_usd - of.ideal_usd + 5e-7) text += ", summed per call, none below 0";
  if (of.excluded) text += ` (${of.excluded} ${of.basis === "billed" ? "without a billed cost" : "without a cost"} excluded)`;
  return text;
}

/**
 * @param {Costs} costs
 * @param {Timeline} timeline
 * @param {number[]} rows
 * @param {boolean} [withBilled]
 */
export function sumCosts(costs, timeline, rows, withBilled = true) {
  let cost = 0;
  let ideal = 0;
  let billed = 0;
  let anyBilled = false;
  for (const r of rows) {
    const i = costs.rowOf.get(Number(timeline.call[r]));
    if (i === undefined) continue;
    const c = costs.cost[i];
    const d = costs.ideal[i];
    const b = costs.billed[i];
    if (isNumber(c)) cost += c;
    if (isNumber(d)) ideal += d;
    if (isNumber(b)) {
      billed += b;
      anyBilled = true;
    }
  }
  return { cost, ideal, billed: withBilled && anyBilled ? billed : null };
}
