// @ts-check
/**
 * Plotly figures as plain data (no Plotly import, so they are unit-testable).
 *
 * Every string that comes from the data is escaped with {@link escapeHtml}: Plotly renders
 * a subset of HTML in hover text and labels. Traces are few and fixed in number (bars use
 * base/length arrays), so 2,000 calls stay one `Plotly.react` of a handful of traces.
 */
import { COLORS, STATUS_COLORS, STATUS_HELP, STATUS_NAMES, UNLOGGED } from "./constants.js";
import { nameAt } from "./data.js";
import { escapeHtml, truncate } from "./escape.js";
import { formatDuration, formatShare, formatTime, formatTokens, formatUsd, isNumber } from "./format.js";
import { cumulativeSum, plotHeight, prefixLine, prefixTicks, statusBars } from "./geometry.js";

/**
 * @typedef {import("./data.js").Timeline} Timeline
 * @typedef {import("./data.js").Shape} Shape
 * @typedef {import("./data.js").Costs} Costs
 * @typedef {import("./data.js").Meta} Meta
 * @typedef {{ color: string, grid: string, font: string }} Theme
 * @typedef {{ data: Record<string, any>[], layout: Record<string, any> }} Figure
 */

/** Drift labels are drawn on the timeline up to this many drifts (markers only above). */
export const MAX_DRIFT_LABELS = 40;
const LABEL_CHARS = 80;

/** @type {Theme} */
export const DEFAULT_THEME = { color: "#222", grid: "rgba(128,128,128,0.2)", font: "sans-serif" };

/**
 * Text that came from the data, cut and escaped for Plotly.
 *
 * @param {unknown} value
 * @param {number} [limit]
 */
function safe(value, limit = LABEL_CHARS) {
  return escapeHtml(truncate(value === null || value === undefined ? "" : String(value), limit));
}

/**
 * @param {Theme} theme
 * @param {number} height
 * @param {string} revision
 * @returns {Record<string, any>}
 */
function baseLayout(theme, height, revision) {
  return {
    height,
    autosize: true,
    uirevision: revision,
    margin: { l: 64, r: 24, t: 8, b: 40 },
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    font: { family: theme.font, size: 11, color: theme.color },
    hovermode: "closest",
    hoverlabel: { align: "left" },
    showlegend: true,
    legend: { orientation: "h", x: 0, y: 1.0, yanchor: "bottom", font: { size: 11 } },
  };
}

/**
 * @param {Theme} theme
 * @param {string} title
 * @param {Record<string, any>} [extra]
 */
function axis(theme, title, extra = {}) {
  return {
    title: { text: title, standoff: 4 },
    gridcolor: theme.grid,
    zeroline: false,
    automargin: true,
    ...extra,
  };
}

/**
 * Hover text of one timeline row (escaped).
 *
 * @param {Timeline} t
 * @param {number} r
 * @param {Meta} meta
 * @returns {string}
 */
export function callHover(t, r, meta) {
  const lines = [`<b>call ${t.call[r]}</b> · ${safe(nameAt(meta.threads, t.thread[r]))}`];
  lines.push(`input ${formatTokens(t.input[r])} tokens`);
  lines.push(
    `prefix ${formatTokens(t.prefix[r])} (${formatShare(t.prefix[r], t.input[r])}) · new ${formatTokens(t.fresh[r])}`,
  );
  const ts = t.tsMs[r];
  if (isNumber(ts)) lines.push(formatTime(ts));
  if (t.drift[r]) {
    const cause = t.cause[r] >= 0 ? nameAt(meta.causes, t.cause[r]) : "drift";
    const where = t.label[r] ? ` at ${safe(t.label[r])}` : "";
    lines.push(`<b>drift</b>: ${safe(cause)}${where} · ${formatTokens(t.tokensLost[r])} tokens lost`);
  }
  if (t.idleGap[r]) lines.push(`idle > ${formatDuration(meta.ttl_seconds ?? null)} before this call`);
  return lines.join("<br>");
}

/**
 * The timeline: stacked prefix/new bars per call, the common-prefix line, drift and
 * idle-gap markers.
 *
 * @param {Timeline} t
 * @param {number[]} rows visible rows in call order
 * @param {Meta} meta
 * @param {{ theme?: Theme, selected?: number, revision?: string }} [options]
 * @returns {Figure}
 */
export function timelineFigure(t, rows, meta, options = {}) {
  const theme = options.theme ?? DEFAULT_THEME;
  const x = new Array(rows.length);
  const prefix = new Array(rows.length);
  const fresh = new Array(rows.length);
  const hover = new Array(rows.length);
  /** @type {number[]} */ const driftX = [];
  /** @type {number[]} */ const driftY = [];
  /** @type {string[]} */ const driftText = [];
  /** @type {string[]} */ const driftHover = [];
  /** @type {number[]} */ const idleX = [];
  /** @type {string[]} */ const idleHover = [];
  for (let k = 0; k < rows.length; k++) {
    const r = rows[k];
    x[k] = t.call[r];
    prefix[k] = t.prefix[r];
    fresh[k] = t.fresh[r];
    hover[k] = callHover(t, r, meta);
    if (t.drift[r]) {
      driftX.push(t.call[r]);
      driftY.push(Math.max(Number(t.input[r]) || 0, (Number(t.prefix[r]) || 0) + (Number(t.fresh[r]) || 0)));
      driftText.push(safe(t.cause[r] >= 0 ? nameAt(meta.causes, t.cause[r]) : "drift", 24));
      driftHover.push(hover[k]);
    }
    if (t.idleGap[r]) {
      idleX.push(t.call[r]);
      idleHover.push(hover[k]);
    }
  }
  const line = prefixLine(t, rows);
  const labelled = driftX.length <= MAX_DRIFT_LABELS;
  const ttl = formatDuration(meta.ttl_seconds ?? null);
  const data = [
    {
      type: "bar",
      name: "prefix (matched)",
      x,
      y: prefix,
      marker: { color: COLORS.same },
      hovertext: hover,
      hoverinfo: "text",
    },
    {
      type: "bar",
      name: "new",
      x,
      y: fresh,
      marker: { color: COLORS.new },
      hovertext: hover,
      hoverinfo: "text",
    },
    {
      type: "scatter",
      mode: "lines",
      name: "common prefix",
      x: line.x,
      y: line.y,
      connectgaps: false,
      line: { color: theme.color, width: 1.5, shape: "hvh" }, // steps between bars
      hoverinfo: "skip",
    },
    {
      type: "scatter",
      mode: labelled ? "markers+text" : "markers",
      name: "drift",
      x: driftX,
      y: driftY,
      text: labelled ? driftText : undefined,
      textposition: "top center",
      textfont: { size: 10, color: COLORS.drift },
      cliponaxis: false,
      marker: { symbol: "x-thin", size: 9, line: { width: 2, color: COLORS.drift }, color: COLORS.drift },
      hovertext: driftHover,
      hoverinfo: "text",
      showlegend: driftX.length > 0,
    },
    {
      type: "scatter",
      mode: "markers",
      name: `idle > ${ttl}`,
      x: idleX,
      y: idleX.map(() => 0),
      marker: { symbol: "triangle-up", size: 9, color: COLORS.idle },
      hovertext: idleHover,
      hoverinfo: "text",
      showlegend: idleX.length > 0,
      cliponaxis: false,
    },
  ];
  const layout = {
    ...baseLayout(theme, 300, options.revision ?? ""),
    barmode: "stack",
    bargap: rows.length > 200 ? 0 : 0.15,
    xaxis: axis(theme, "call", { rangemode: "tozero" }),
    yaxis: axis(theme, "input tokens", { rangemode: "tozero" }),
    shapes: selectionShapes(options.selected ?? -1, "x"),
  };
  return { data, layout };
}

/**
 * Hover text of one shape run (escaped).
 *
 * @param {number} call
 * @param {number} status
 * @param {number} start
 * @param {number} end
 */
export function runHover(call, status, start, end) {
  const name = STATUS_NAMES[status] ?? "?";
  const size = end - start;
  const approx = status === UNLOGGED ? "≈" : "";
  return (
    `<b>call ${call}</b> · ${escapeHtml(name)}<br>` +
    `tokens ${approx}${formatTokens(start)}–${approx}${formatTokens(end)} (${approx}${formatTokens(size)})<br>` +
    `<i>${escapeHtml(STATUS_HELP[status] ?? "")}</i>`
  );
}

/**
 * The cache shape map: one horizontal bar per call made of its status runs (one bar
 * trace per status), and the common-prefix line through the bars.
 *
 * @param {Shape} shape
 * @param {Timeline} t
 * @param {number[]} rows visible rows in call order
 * @param {{ theme?: Theme, selected?: number, revision?: string }} [options]
 * @returns {Figure}
 */
export function shapeFigure(shape, t, rows, options = {}) {
  const theme = options.theme ?? DEFAULT_THEME;
  const visibleCalls = new Set();
  for (const r of rows) visibleCalls.add(Number(t.call[r]));
  const { bars, maxEnd } = statusBars(shape, (call) => visibleCalls.has(call), STATUS_NAMES.length);
  const data = [];
  for (let s = 0; s < STATUS_NAMES.length; s++) {
    const b = bars[s];
    const hover = new Array(b.y.length);
    for (let k = 0; k < b.y.length; k++) hover[k] = runHover(b.y[k], s, b.base[k], b.base[k] + b.x[k]);
    /** @type {Record<string, any>} */
    const marker = { color: STATUS_COLORS[s], line: { width: 0 } };
    if (s === UNLOGGED) {
      marker.pattern = { shape: "/", fgcolor: "#555555", bgcolor: STATUS_COLORS[s], solidity: 0.3 };
    }
    data.push({
      type: "bar",
      orientation: "h",
      name: STATUS_NAMES[s],
      y: b.y,
      x: b.x,
      base: b.base,
      width: 0.9,
      marker,
      hovertext: hover,
      hoverinfo: "text",
      showlegend: b.y.length > 0,
    });
  }
  const ticks = prefixTicks(t, rows);
  data.push({
    type: "scatter",
    mode: "lines",
    name: "common prefix",
    x: ticks.x,
    y: ticks.y,
    connectgaps: false,
    line: { color: theme.color, width: 1.5 },
    hoverinfo: "skip",
  });
  let lo = Infinity;
  let hi = -Infinity;
  for (const r of rows) {
    const c = Number(t.call[r]);
    if (c < lo) lo = c;
    if (c > hi) hi = c;
  }
  const yRange = rows.length ? [hi + 0.5, lo - 0.5] : undefined; // reversed: first call on top
  const layout = {
    ...baseLayout(theme, plotHeight(rows.length, 4, 220, 640), options.revision ?? ""),
    barmode: "overlay",
    xaxis: axis(theme, "token offset", { range: [0, Math.max(1, maxEnd) * 1.01] }),
    yaxis: axis(theme, "call", yRange ? { range: yRange } : { autorange: "reversed" }),
    shapes: selectionShapes(options.selected ?? -1, "y"),
  };
  return { data, layout };
}

/**
 * Per-call cost under the target with the ideal bound, and both cumulated.
 *
 * @param {Costs} costs
 * @param {Timeline} t
 * @param {number[]} rows visible rows in call order
 * @param {{ theme?: Theme, selected?: number, revision?: string }} [options]
 * @returns {Figure}
 */
export function costFigure(costs, t, rows, options = {}) {
  const theme = options.theme ?? DEFAULT_THEME;
  /** @type {number[]} */ const x = [];
  /** @type {(number | null)[]} */ const cost = [];
  /** @type {(number | null)[]} */ const ideal = [];
  /** @type {string[]} */ const hover = [];
  for (const r of rows) {
    const call = Number(t.call[r]);
    const i = costs.rowOf.get(call);
    if (i === undefined) continue;
    const c = costs.cost[i];
    const d = costs.ideal[i];
    x.push(call);
    cost.push(isNumber(c) ? c : null);
    ideal.push(isNumber(d) ? d : null);
    hover.push(
      `<b>call ${call}</b><br>cost ${formatUsd(c)} · ideal ${formatUsd(d)}<br>` +
        `read ${formatTokens(costs.read[i])} · write ${formatTokens(costs.write[i])} · ` +
        `uncached ${formatTokens(costs.uncached[i])}`,
    );
  }
  const cumCost = cumulativeSum(cost);
  const cumIdeal = cumulativeSum(ideal);
  const cumHover = x.map(
    (call, k) => `<b>up to call ${call}</b><br>cost ${formatUsd(cumCost[k])}<br>ideal ${formatUsd(cumIdeal[k])}`,
  );
  const data = [
    {
      type: "bar",
      name: "cost per call",
      x,
      y: cost,
      marker: { color: COLORS.cost },
      hovertext: hover,
      hoverinfo: "text",
    },
    {
      type: "scatter",
      mode: "markers",
      name: "ideal per call",
      x,
      y: ideal,
      marker: { symbol: "line-ew", size: 8, line: { width: 2, color: COLORS.ideal } },
      hovertext: hover,
      hoverinfo: "text",
      visible: x.length > 400 ? "legendonly" : true,
    },
    {
      type: "scatter",
      mode: "lines",
      name: "cumulative cost",
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
  ];
  const layout = {
    ...baseLayout(theme, 260, options.revision ?? ""),
    bargap: x.length > 200 ? 0 : 0.15,
    margin: { l: 64, r: 64, t: 8, b: 40 },
    xaxis: axis(theme, "call"),
    yaxis: axis(theme, "per call (USD)", { rangemode: "tozero", tickprefix: "$" }),
    yaxis2: axis(theme, "cumulative (USD)", {
      overlaying: "y",
      side: "right",
      rangemode: "tozero",
      tickprefix: "$",
      showgrid: false,
    }),
    shapes: selectionShapes(options.selected ?? -1, "x"),
  };
  return { data, layout };
}

/**
 * The highlight band of the selected call, along the axis that carries calls.
 *
 * @param {number} call -1 for none
 * @param {"x" | "y"} along
 * @returns {Record<string, any>[]}
 */
export function selectionShapes(call, along) {
  if (!(call >= 0)) return [];
  const band = { type: "rect", layer: "above", fillcolor: COLORS.selection, line: { width: 1, color: "#c9a000" } };
  if (along === "x") return [{ ...band, xref: "x", yref: "paper", x0: call - 0.5, x1: call + 0.5, y0: 0, y1: 1 }];
  return [{ ...band, xref: "paper", yref: "y", x0: 0, x1: 1, y0: call - 0.5, y1: call + 0.5 }];
}
