// @ts-check
/**
 * The overview: every shown call, binned, with the detail window as a band. Drawn only
 * when there are more shown calls than the detail views draw ({@link DETAIL_MAX}); drag
 * across it to choose the window (a horizontal box select), click to centre it.
 */
import { COLORS } from "../lib/constants.js";
import { DEFAULT_THEME } from "../lib/figure.js";
import { formatTokens, isNumber, plural } from "../lib/format.js";
import { DETAIL_MAX, callTicks, centerWindow, clampWindow } from "../lib/window.js";
import { drawInto, guarded, panel } from "./panel.js";
import * as plot from "../lib/plot.js";

/**
 * @typedef {import("../lib/window.js").Window} Window
 * @typedef {import("./panel.js").ViewContext} ViewContext
 * @typedef {import("./panel.js").View} View
 */

/** At most this many bars in the overview. */
const OVERVIEW_BINS = 240;

/**
 * Per-bin sums of the shown rows, for the overview.
 *
 * @param {import("../lib/data.js").Timeline} t
 * @param {number[]} rows
 * @param {number} [bins]
 */
export function binRows(t, rows, bins = OVERVIEW_BINS) {
  const n = rows.length;
  const nb = Math.max(1, Math.min(n, bins));
  const size = n / nb;
  const x = new Array(nb);
  const prefix = new Array(nb).fill(0);
  const fresh = new Array(nb).fill(0);
  const drifts = new Array(nb).fill(0);
  const misses = new Array(nb).fill(0);
  const first = new Array(nb).fill(-1);
  const last = new Array(nb).fill(-1);
  const count = new Array(nb).fill(0);
  for (let k = 0; k < n; k++) {
    const b = Math.min(nb - 1, Math.floor(k / size));
    const r = rows[k];
    prefix[b] += Number(t.prefix[r]) || 0;
    fresh[b] += Number(t.fresh[r]) || 0;
    if (t.drift[r] && t.material[r]) drifts[b]++;
    if (t.miss[r]) misses[b]++;
    if (first[b] < 0) first[b] = Number(t.call[r]);
    last[b] = Number(t.call[r]);
    count[b]++;
  }
  for (let b = 0; b < nb; b++) {
    x[b] = (b + 0.5) * size - 0.5;
    if (count[b]) {
      prefix[b] /= count[b];
      fresh[b] /= count[b];
    }
  }
  return { x, width: size, prefix, fresh, drifts, misses, first, last, count };
}

/**
 * The overview: mean prefix/new tokens per bin of calls (bars without outlines), bins
 * with drifts or misses marked, the detail window as a band; drag across it to choose the
 * window (a horizontal box select), click to centre the window.
 *
 * @param {import("../lib/data.js").Timeline} t
 * @param {number[]} rows
 * @param {Window} window
 * @param {{ theme?: { color: string, grid: string, font: string }, revision?: string }} [options]
 */
export function overviewFigure(t, rows, window, options = {}) {
  const theme = options.theme ?? DEFAULT_THEME;
  const b = binRows(t, rows);
  const hover = b.x.map((_, i) => {
    const span = b.first[i] === b.last[i] ? `call ${b.first[i]}` : `calls ${b.first[i]}–${b.last[i]}`;
    const marks = [];
    if (b.drifts[i]) marks.push(plural(b.drifts[i], "drift"));
    if (b.misses[i]) marks.push(plural(b.misses[i], "miss", "misses"));
    return (
      `<b>${span}</b> (${plural(b.count[i], "call")})<br>mean prefix ${formatTokens(Math.round(b.prefix[i]))}` +
      ` · mean new ${formatTokens(Math.round(b.fresh[i]))}${marks.length ? `<br>${marks.join(" · ")}` : ""}` +
      "<br><i>drag across the overview to choose the calls shown below</i>"
    );
  });
  let top = 0;
  for (let i = 0; i < b.x.length; i++) top = Math.max(top, b.prefix[i] + b.fresh[i]);
  const markX = [];
  const markY = [];
  const markHover = [];
  const missX = [];
  const missY = [];
  for (let i = 0; i < b.x.length; i++) {
    if (b.drifts[i]) {
      markX.push(b.x[i]);
      markY.push(top * 1.08);
      markHover.push(hover[i]);
    }
    if (b.misses[i]) {
      missX.push(b.x[i]);
      missY.push(top * 1.2);
    }
  }
  const bar = { type: "bar", x: b.x, width: b.width, hovertext: hover, hoverinfo: "text", showlegend: false };
  const data = [
    { ...bar, name: "prefix", y: b.prefix, marker: { color: COLORS.same, line: { width: 0 } } },
    { ...bar, name: "new", y: b.fresh, marker: { color: COLORS.new, line: { width: 0 } } },
    {
      type: "scatter", mode: "markers", name: "drift", x: markX, y: markY, hovertext: markHover, hoverinfo: "text",
      marker: { symbol: "line-ns", size: 7, line: { width: 1.5, color: COLORS.drift } }, showlegend: false,
    },
    {
      type: "scatter", mode: "markers", name: "miss", x: missX, y: missY, hoverinfo: "skip",
      marker: { symbol: "triangle-down", size: 6, color: COLORS.miss }, showlegend: false,
    },
  ];
  const layout = {
    height: 110,
    autosize: true,
    uirevision: options.revision ?? "",
    margin: { l: 64, r: 24, t: 4, b: 22 },
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    font: { family: theme.font, size: 10, color: theme.color },
    barmode: "stack",
    bargap: 0,
    hovermode: "closest",
    dragmode: "select",
    selectdirection: "h",
    showlegend: false,
    xaxis: { range: [-0.5, Math.max(1, rows.length) - 0.5], fixedrange: true, gridcolor: theme.grid, zeroline: false, showticklabels: true, ...callTicks(t, rows, { start: 0, end: rows.length }, 10) },
    yaxis: { fixedrange: true, showticklabels: false, gridcolor: theme.grid, zeroline: false, range: [0, Math.max(1, top) * 1.3] },
    shapes: [windowShape(window)],
  };
  return { data, layout };
}

/**
 * The detail window drawn on the overview.
 *
 * @param {Window} window
 */
function windowShape(window) {
  return {
    type: "rect", xref: "x", yref: "paper", x0: window.start - 0.5, x1: window.end - 0.5, y0: 0, y1: 1,
    fillcolor: "rgba(240, 200, 0, 0.18)", line: { width: 1, color: "#c9a000" }, layer: "below",
  };
}

/**
 * A window from a Plotly selection event on the overview (its x range), or null.
 *
 * @param {any} event
 * @param {number} n
 * @returns {Window | null}
 */
export function windowFromSelection(event, n) {
  const range = event?.range?.x;
  if (!Array.isArray(range) || range.length < 2 || !isNumber(range[0]) || !isNumber(range[1])) return null;
  // the calls whose centre the brush covers
  const a = Math.max(0, Math.ceil(Math.min(range[0], range[1])));
  const b = Math.min(n, Math.floor(Math.max(range[0], range[1])) + 1);
  if (b <= a) return null;
  return clampWindow({ start: a, end: b }, n);
}

/**
 * The overview panel.
 *
 * @param {ViewContext} ctx
 * @returns {View}
 */
export function createOverview(ctx) {
  const { state } = ctx;
  const p = panel(ctx.doc, "Overview", "every shown call, binned; drag across it to choose the calls drawn below, click to centre");
  p.section.classList.add("cacheviz-overview");
  const handlers = {
    plotly_selected: (/** @type {any} */ event) => {
      const w = windowFromSelection(event, state.rows.length);
      if (w) ctx.setWindow(w);
    },
  };
  const onClick = (/** @type {any} */ point) => ctx.setWindow(centerWindow(state.window, Number(point.x), state.rows.length));

  function draw() {
    const t = state.timeline;
    if (!t || state.rows.length <= DETAIL_MAX) {
      p.section.hidden = true;
      return;
    }
    p.section.hidden = false;
    const { start, end } = state.window;
    p.note.textContent =
      `${state.rows.length.toLocaleString("en-US")} calls, binned; the views below draw calls ` +
      `${t.call[state.rows[start]]}–${t.call[state.rows[end - 1]]} (${end - start}); drag across the overview to choose, click to centre`;
    const fig = overviewFigure(t, state.rows, state.window, { theme: ctx.theme(), revision: ctx.revision() });
    drawInto(p, fig, onClick, 0, handlers, "the overview");
  }

  return {
    panel: p,
    chart: true,
    draw: () => guarded(p, "the overview", draw),
    showSelection() {
      if (!p.section.hidden && !p.plot.hidden) plot.setShapes(p.plot, [windowShape(state.window)]).catch(() => undefined);
    },
  };
}
