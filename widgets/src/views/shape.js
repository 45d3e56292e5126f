// @ts-check
/**
 * The cache shape map: one horizontal bar per call made of its status runs along the
 * token axis, the common-prefix line through the bars; click a call to select it.
 */
import { STATUS_COLORS, STATUS_HELP, STATUS_NAMES, UNLOGGED } from "../lib/constants.js";
import { h } from "../lib/dom.js";
import { escapeHtml } from "../lib/escape.js";
import { DEFAULT_THEME, axis, baseLayout, selectionShapes } from "../lib/figure.js";
import { formatCompact, formatTokens } from "../lib/format.js";
import { plotHeight, statusBars } from "../lib/geometry.js";
import { drawInto, emptyPlot, guarded, moveShapes, panel } from "./panel.js";

/**
 * @typedef {import("../lib/data.js").Timeline} Timeline
 * @typedef {import("../lib/data.js").Shape} Shape
 * @typedef {import("../lib/figure.js").Figure} Figure
 * @typedef {import("../lib/figure.js").FigureOptions} FigureOptions
 * @typedef {import("./panel.js").ViewContext} ViewContext
 * @typedef {import("./panel.js").View} View
 */

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
 * @param {FigureOptions} [options]
 * @returns {Figure}
 */
export function shapeFigure(shape, t, rows, options = {}) {
  const theme = options.theme ?? DEFAULT_THEME;
  const offset = options.offset ?? 0;
  /** @type {Map<number, number>} */
  const posOf = new Map();
  rows.forEach((r, k) => posOf.set(Number(t.call[r]), offset + k));
  const { bars } = statusBars(shape, (call) => posOf.has(call), STATUS_NAMES.length);
  const fold = foldUnlogged(bars, UNLOGGED);
  const data = [];
  let maxX = 0;
  for (let s = 0; s < STATUS_NAMES.length; s++) {
    const b = bars[s];
    const n = b.y.length;
    const hover = new Array(n);
    const y = new Array(n);
    const base = new Array(n);
    const len = new Array(n);
    for (let k = 0; k < n; k++) {
      const call = b.y[k];
      hover[k] = runHover(call, s, b.base[k], b.base[k] + b.x[k]);
      y[k] = posOf.get(call);
      const x0 = fold.map(call, b.base[k]);
      const x1 = fold.map(call, b.base[k] + b.x[k]);
      base[k] = x0;
      len[k] = x1 - x0;
      if (x1 > maxX) maxX = x1;
    }
    /** @type {Record<string, any>} */
    const marker = { color: STATUS_COLORS[s], line: { width: 0 } };
    /** @type {Record<string, any>} */
    const trace = {
      type: "bar",
      orientation: "h",
      name: s === UNLOGGED && fold.band ? "unlogged prefix (collapsed)" : STATUS_NAMES[s],
      y,
      x: len,
      base,
      width: 0.86,
      marker,
      hovertext: hover,
      hoverinfo: "text",
      showlegend: n > 0,
    };
    if (s === UNLOGGED) {
      marker.pattern = { shape: "/", fgcolor: "#555555", bgcolor: STATUS_COLORS[s], solidity: 0.3 };
      if (fold.band && n <= 120) {
        trace.text = b.x.map((size) => `≈${formatCompact(size)}`);
        trace.textposition = "inside";
        trace.insidetextanchor = "middle";
        trace.textfont = { size: 10, color: "#222" };
      }
    }
    data.push(trace);
  }
  /** @type {(number | null)[]} */ const tx = [];
  /** @type {(number | null)[]} */ const ty = [];
  for (let k = 0; k < rows.length; k++) {
    const r = rows[k];
    const call = Number(t.call[r]);
    const px = fold.map(call, Number(t.prefix[r]));
    tx.push(px, px);
    ty.push(offset + k - 0.43, offset + k + 0.43);
    const next = k + 1 < rows.length ? rows[k + 1] : -1;
    if (next >= 0 && Number(t.thread[next]) === Number(t.thread[r])) {
      tx.push(px, fold.map(Number(t.call[next]), Number(t.prefix[next])));
      ty.push(offset + k + 0.5, offset + k + 0.5);
    } else {
      tx.push(null);
      ty.push(null);
    }
  }
  const ticks = { x: tx, y: ty };
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
  const yRange = rows.length ? [offset + rows.length - 0.5, offset - 0.5] : undefined; // first call on top
  const xRange = [0, Math.max(1, maxX) * 1.01];
  const layout = {
    ...baseLayout(theme, shapeHeight(rows.length), options.revision ?? ""),
    barmode: "overlay",
    xaxis: axis(theme, fold.band ? "token offset (grey band: the unlogged prefix, collapsed; its size is written in it)" : "token offset", {
      range: xRange,
      ...(fold.band ? foldedTicks(fold.band, maxX) : {}),
    }),
    yaxis: axis(theme, "call", { ...(yRange ? { range: yRange } : { autorange: "reversed" }), ...(options.ticks ?? {}) }),
    shapes: selectionShapes(options.selected ?? -1, "y"),
  };
  return { data, layout };
}

/** Pixels per call row of the shape map (the panel scrolls past its maximum height). */
export const SHAPE_ROW_PX = 14;

/**
 * Height of the shape map for `n` rows: at least {@link SHAPE_ROW_PX} a row.
 *
 * @param {number} n
 */
export function shapeHeight(n) {
  return plotHeight(n, SHAPE_ROW_PX, 200, Math.max(200, n * SHAPE_ROW_PX + 90));
}

/**
 * Collapse each call's unlogged prefix (a run of the unlogged status from token 0) into
 * one narrow band, so the logged part of a rebuilt request is readable.
 *
 * @param {import("../lib/geometry.js").StatusBars[]} bars one per status
 * @param {number} status the unlogged status
 * @returns {{ band: number, map: (call: number, offset: number) => number }}
 */
export function foldUnlogged(bars, status) {
  const unlogged = bars[status];
  /** @type {Map<number, number>} */
  const size = new Map();
  for (let k = 0; k < unlogged.y.length; k++) {
    if (unlogged.base[k] === 0) size.set(unlogged.y[k], unlogged.x[k]);
  }
  if (!size.size) return { band: 0, map: (_call, offset) => offset };
  let logged = 1;
  for (const b of bars) {
    for (let k = 0; k < b.y.length; k++) logged = Math.max(logged, b.base[k] + b.x[k] - (size.get(b.y[k]) ?? 0));
  }
  // the band is a fixed share of the logged span; logged tokens keep their scale
  const band = Math.max(1, Math.round(logged * 0.12));
  return {
    band,
    map(call, offset) {
      const u = size.get(call) ?? 0;
      if (u <= 0) return offset + band;
      return offset <= u ? (offset / u) * band : offset - u + band;
    },
  };
}

/**
 * Ticks of a folded token axis: "unlogged" in the band, logged offsets to its right.
 *
 * @param {number} band
 * @param {number} maxX
 */
function foldedTicks(band, maxX) {
  const span = Math.max(1, maxX - band);
  const raw = span / 6;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((v) => v >= raw) ?? 10 * power;
  const tickvals = [band / 2];
  const ticktext = ["unlogged"];
  for (let v = 0; v <= span; v += step) {
    tickvals.push(band + v);
    ticktext.push(v === 0 ? "+0" : `+${formatCompact(v)}`);
  }
  return { tickmode: "array", tickvals, ticktext };
}

/**
 * The cache shape panel, with the statuses explained in its note.
 *
 * @param {ViewContext} ctx
 * @returns {View}
 */
export function createShape(ctx) {
  const { state, doc } = ctx;
  const p = panel(doc, "Cache shape", "segments of each request along the token axis");
  p.section.classList.add("cacheviz-shape");
  p.note.replaceChildren(
    ...STATUS_NAMES.flatMap((name, s) => [
      h(doc, "span", { text: name, title: STATUS_HELP[s] }),
      s < STATUS_NAMES.length - 1 ? " · " : "",
    ]),
    " (hover a status for what it means)",
  );
  /** The call drawn at position `y` (the shape map carries calls down its y axis). */
  const callAt = (/** @type {number} */ y) => {
    const t = state.timeline;
    const r = state.rows[Math.round(y)];
    return r === undefined || !t ? -1 : Number(t.call[r]);
  };
  const onClick = (/** @type {any} */ point) => ctx.select(callAt(Number(point.y)));

  function draw() {
    const t = state.timeline;
    if (!t || t.n === 0 || !state.shape) return emptyPlot(p, state.shape ? "No calls to show." : "No shape data.");
    if (!state.rows.length) return emptyPlot(p, "No call matches the filter.");
    const fig = shapeFigure(state.shape, t, ctx.windowRows(), ctx.figureOptions());
    drawInto(p, fig, onClick, 1);
  }

  return {
    panel: p,
    chart: true,
    draw: () => guarded(p, "the cache shape map", draw),
    showSelection: (position) => moveShapes(p, selectionShapes(position, "y")),
  };
}
