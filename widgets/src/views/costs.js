// @ts-check
/**
 * The providers panel: the target's numbers, the provider comparison table and the cost
 * chart (per-call simulated, ideal and billed cost, and their running sums); click a
 * call to select it.
 */
import { COLORS } from "../lib/constants.js";
import { DEFAULT_THEME, axis, baseLayout, selectionShapes } from "../lib/figure.js";
import { formatTokens, formatUsd, isNumber, usdTicks } from "../lib/format.js";
import { cumulativeSum } from "../lib/geometry.js";
import { h } from "../lib/dom.js";
import { callOf, drawInto, emptyPlot, guarded, moveShapes, panel } from "./panel.js";
import { compareTable, targetFacts } from "./providers.js";

/**
 * @typedef {import("../lib/data.js").Timeline} Timeline
 * @typedef {import("../lib/data.js").Costs} Costs
 * @typedef {import("../lib/data.js").Meta} Meta
 * @typedef {import("../lib/figure.js").Figure} Figure
 * @typedef {import("../lib/figure.js").FigureOptions} FigureOptions
 * @typedef {import("./panel.js").ViewContext} ViewContext
 * @typedef {import("./panel.js").View} View
 */

/**
 * Whether any shown call has a simulated cost (else the chart would be empty: the
 * panel shows a message instead).
 *
 * @param {Costs} costs
 * @param {Timeline} t
 * @param {number[]} rows
 */
function hasCosts(costs, t, rows) {
  for (const r of rows) {
    const i = costs.rowOf.get(Number(t.call[r]));
    if (i !== undefined && (isNumber(costs.cost[i]) || isNumber(costs.billed[i]))) return true;
  }
  return false;
}

/**
 * Per-call simulated cost (bars, no outlines) with the ideal bound and the billed cost
 * (the provider's reported usage priced), and the cumulative sums from the window's start.
 *
 * @param {Costs} costs
 * @param {Timeline} t
 * @param {number[]} rows the rows drawn, in call order
 * @param {FigureOptions} [options]
 * @returns {Figure}
 */
export function costFigure(costs, t, rows, options = {}) {
  const theme = options.theme ?? DEFAULT_THEME;
  const offset = options.offset ?? 0;
  /** @type {number[]} */ const x = [];
  /** @type {number[]} */ const calls = [];
  /** @type {(number | null)[]} */ const cost = [];
  /** @type {(number | null)[]} */ const ideal = [];
  /** @type {(number | null)[]} */ const billed = [];
  /** @type {string[]} */ const hover = [];
  let anyBilled = false;
  let top = 0;
  rows.forEach((r, k) => {
    const call = Number(t.call[r]);
    const i = costs.rowOf.get(call);
    if (i === undefined) return;
    const c = costs.cost[i];
    const d = costs.ideal[i];
    const bl = costs.billed[i];
    x.push(offset + k);
    calls.push(call);
    cost.push(isNumber(c) ? c : null);
    ideal.push(isNumber(d) ? d : null);
    billed.push(isNumber(bl) ? bl : null);
    if (isNumber(bl)) anyBilled = true;
    top = Math.max(top, isNumber(c) ? c : 0, isNumber(bl) ? bl : 0, isNumber(d) ? d : 0);
    hover.push(
      `<b>call ${call}</b><br>simulated ${formatUsd(c)} · ideal ${formatUsd(d)}` +
        (isNumber(bl) ? ` · billed ${formatUsd(bl)}` : "") +
        `<br>read ${formatTokens(costs.read[i])} · write ${formatTokens(costs.write[i])} · ` +
        `uncached ${formatTokens(costs.uncached[i])}`,
    );
  });
  const cumCost = cumulativeSum(cost);
  const cumIdeal = cumulativeSum(ideal);
  const cumBilled = cumulativeSum(billed);
  const cumHover = calls.map(
    (call, k) =>
      `<b>calls ${calls[0]}–${call} (shown)</b><br>simulated ${formatUsd(cumCost[k])}<br>ideal ${formatUsd(cumIdeal[k])}` +
      (anyBilled ? `<br>billed ${formatUsd(cumBilled[k])}` : ""),
  );
  const data = [
    {
      type: "bar",
      name: "simulated per call",
      x,
      y: cost,
      customdata: calls,
      marker: { color: COLORS.cost, line: { width: 0 } },
      hovertext: hover,
      hoverinfo: "text",
    },
    {
      type: "scatter",
      mode: "markers",
      name: "billed per call",
      x,
      y: billed,
      customdata: calls,
      marker: { symbol: "circle", size: 5, color: COLORS.billed },
      hovertext: hover,
      hoverinfo: "text",
      showlegend: anyBilled,
      visible: anyBilled ? true : "legendonly",
    },
    {
      type: "scatter",
      mode: "markers",
      name: "ideal per call",
      x,
      y: ideal,
      customdata: calls,
      marker: { symbol: "line-ew", size: 8, line: { width: 2, color: COLORS.ideal } },
      hovertext: hover,
      hoverinfo: "text",
      visible: x.length > 400 ? "legendonly" : true,
    },
    {
      type: "scatter",
      mode: "lines",
      name: "cumulative simulated",
      x,
      y: cumCost,
      yaxis: "y2",
      line: { color: COLORS.cost, width: 2 },
      hovertext: cumHover,
      hoverinfo: "text",
    },
    {
      type: "scatter",
      mode: "lines",
      name: "cumulative ideal",
      x,
      y: cumIdeal,
      yaxis: "y2",
      line: { color: COLORS.ideal, width: 2, dash: "dash" },
      hovertext: cumHover,
      hoverinfo: "text",
    },
    {
      type: "scatter",
      mode: "lines",
      name: "cumulative billed",
      x,
      y: cumBilled,
      yaxis: "y2",
      line: { color: COLORS.billed, width: 1.5, dash: "dot" },
      hovertext: cumHover,
      hoverinfo: "text",
      showlegend: anyBilled,
      visible: anyBilled ? true : "legendonly",
    },
  ];
  const cumTop = Math.max(cumCost[cumCost.length - 1] ?? 0, cumIdeal[cumIdeal.length - 1] ?? 0, anyBilled ? (cumBilled[cumBilled.length - 1] ?? 0) : 0);
  const perTicks = usdTicks(top);
  const cumTicks = usdTicks(cumTop);
  const range = x.length ? [offset - 0.5, offset + rows.length - 0.5] : undefined;
  const layout = {
    ...baseLayout(theme, 260, options.revision ?? ""),
    bargap: x.length > 200 ? 0 : 0.15,
    margin: { l: 64, r: 64, t: 8, b: 40 },
    xaxis: axis(theme, "call", { ...(range ? { range } : {}), ...(options.ticks ?? {}) }),
    yaxis: axis(theme, "per call (USD)", {
      range: [0, Math.max(top, 1e-9) * 1.08],
      ...(perTicks ? { tickmode: "array", ...perTicks } : {}),
    }),
    yaxis2: axis(theme, "cumulative (USD)", {
      overlaying: "y",
      side: "right",
      range: [0, Math.max(cumTop, 1e-9) * 1.08],
      ...(cumTicks ? { tickmode: "array", ...cumTicks } : {}),
      showgrid: false,
    }),
    shapes: selectionShapes(options.selected ?? -1, "x"),
  };
  return { data, layout };
}

/**
 * Why the cost chart is empty, naming the models and what to do.
 *
 * @param {Meta} meta
 */
export function noCostMessage(meta) {
  const target = meta.target;
  const provider = target ? String(target.provider) : "the target";
  if (target?.self_hosted) {
    const factor = isNumber(target.prefill_factor) ? " and its estimated prefill factor" : "";
    return `${provider} is a self-hosted engine: it has no prices, so there is no cost to chart. The table above shows the prefill tokens its prefix cache would save${factor}.`;
  }
  const models = meta.unpriced_models?.length ? meta.unpriced_models.join(", ") : target?.model ? String(target.model) : "the recorded models";
  const pick = meta.models?.length ? ` Pick a priced ${provider} model (e.g. ${meta.models.slice(0, 3).join(", ")}).` : " Pick a model with a price.";
  return `No ${provider} price for ${models}, so no cost to chart.${pick}`;
}

/**
 * The providers panel.
 *
 * @param {ViewContext} ctx
 * @returns {View}
 */
export function createCosts(ctx) {
  const { state, doc } = ctx;
  const p = panel(doc, "Providers", "");
  p.section.classList.add("cacheviz-providers");
  const targetBox = h(doc, "div");
  const compareBox = h(doc, "div");
  p.empty.before(targetBox);
  p.body.after(compareBox);
  const onClick = (/** @type {any} */ point) => ctx.select(callOf(point) ?? -1);
  // the comparison is built lazily: asked for when this panel comes into view
  const view = doc.defaultView;
  /** @type {IntersectionObserver | null} */
  let watcher = null;
  function askWhenSeen() {
    if (watcher || !view) return;
    if (typeof view.IntersectionObserver !== "function") return ctx.requestCompare();
    watcher = new view.IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) {
        watcher?.disconnect();
        ctx.requestCompare();
      }
    });
    watcher.observe(p.section);
  }

  function draw() {
    const m = ctx.meta();
    const t = state.timeline;
    const filtered = state.thread >= 0 || state.cause !== "" || state.search !== "";
    const none = filtered && state.rows.length === 0;
    targetBox.replaceChildren(targetFacts(doc, m, filtered && t && state.costs && !none ? { costs: state.costs, timeline: t, rows: state.rows } : null));
    if (m.compare_built === false) {
      compareBox.replaceChildren(h(doc, "p", { className: "cacheviz-panel__empty", text: "Comparing with the other providers…" }));
      askWhenSeen();
    } else {
      compareBox.replaceChildren(compareTable(doc, m));
    }
    if (!t || !state.costs || state.costs.n === 0 || !m.target) {
      return emptyPlot(p, m.notice ? String(m.notice) : m.target ? "No per-call costs." : "No provider target is simulated.");
    }
    // a filter that shows no call: say so (not that the models have no price)
    if (none) return emptyPlot(p, "No calls in this filter.");
    const rows = ctx.windowRows();
    if (!hasCosts(state.costs, t, rows)) return emptyPlot(p, noCostMessage(m));
    drawInto(p, costFigure(state.costs, t, rows, ctx.figureOptions()), onClick, 2);
  }

  return {
    panel: p,
    chart: true,
    draw: () => guarded(p, "the provider costs", draw),
    showSelection: (position) => moveShapes(p, selectionShapes(position, "x")),
  };
}
