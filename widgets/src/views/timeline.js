// @ts-check
/**
 * The timeline: stacked prefix/new bars per call, the common-prefix line per thread, the
 * reported cache read against it, drift, miss and idle-gap markers; click a call to
 * select it.
 */
import { COLORS } from "../lib/constants.js";
import { nameAt, threadNames } from "../lib/data.js";
import { DEFAULT_THEME, axis, baseLayout, safe, selectionShapes } from "../lib/figure.js";
import { formatDuration, formatPercent, formatShare, formatTime, formatTokens, isNumber, plural } from "../lib/format.js";
import { callOf, drawInto, emptyPlot, guarded, moveShapes, panel } from "./panel.js";

/**
 * @typedef {import("../lib/data.js").Timeline} Timeline
 * @typedef {import("../lib/data.js").Meta} Meta
 * @typedef {import("../lib/figure.js").Figure} Figure
 * @typedef {import("../lib/figure.js").FigureOptions} FigureOptions
 * @typedef {import("./panel.js").ViewContext} ViewContext
 * @typedef {import("./panel.js").View} View
 */

/**
 * A call whose bar is lower than this share of the tallest gets a marker at its top (a
 * 200-token side call beside 25k-token main calls would be invisible at y≈0).
 */
export const SMALL_BAR = 0.015;

/** Drift labels are drawn on the timeline up to this many drifts (markers only above). */
export const MAX_DRIFT_LABELS = 40;

/**
 * Hover text of one timeline row (escaped).
 *
 * @param {Timeline} t
 * @param {number} r
 * @param {Meta} meta
 * @returns {string}
 */
export function callHover(t, r, meta) {
  const lines = [`<b>call ${t.call[r]}</b> · ${safe(nameAt(threadNames(meta), t.thread[r]))}`];
  lines.push(`input ${formatTokens(t.input[r])} tokens`);
  lines.push(
    `prefix ${formatTokens(t.prefix[r])} (${formatShare(t.prefix[r], t.input[r])}) · new ${formatTokens(t.fresh[r])}`,
  );
  const ts = t.tsMs[r];
  if (isNumber(ts)) lines.push(formatTime(ts));
  if (t.drift[r]) {
    const cause = t.cause[r] >= 0 ? nameAt(meta.causes, t.cause[r]) : "drift";
    const where = t.label[r] ? ` at ${safe(t.label[r])}` : "";
    const costless = t.material[r] ? "" : " (costless)";
    lines.push(`<b>drift</b>: ${safe(cause)}${where} · ${formatTokens(t.tokensLost[r])} tokens lost${costless}`);
  }
  if (isNumber(t.reportedRead[r])) lines.push(`reported cache read ${formatTokens(t.reportedRead[r])}`);
  // the provider's own hit rate for this request: cache read ÷ input, in its tokens
  const hit = t.hitRatio[r];
  lines.push(`hit rate (reported) ${isNumber(hit) ? formatPercent(hit, 1) : "n/a"}`);
  if (t.miss[r]) {
    const cause = t.missCause[r] >= 0 ? nameAt(meta.miss_causes, t.missCause[r]) : "miss";
    lines.push(`<b>miss</b>: ${safe(cause)} · ${formatTokens(t.missTokens[r])} tokens not read`);
  }
  if (t.idleGap[r]) lines.push(`idle > ${formatDuration(meta.ttl_seconds ?? null)} before this call`);
  return lines.join("<br>");
}

/**
 * The prefix line as one step per call across its bar, joined to the next bar only when
 * that is the same thread's next call and drawn right next to it: a thread's line never
 * runs across the bars of other threads (sub-agents, side calls).
 *
 * @param {Timeline} t
 * @param {number[]} rows
 * @param {number} offset
 * @param {(r: number) => number | null} value
 * @param {number} [half=0.45]
 */
export function prefixSteps(t, rows, offset, value, half = 0.45) {
  /** @type {(number | null)[]} */ const x = [];
  /** @type {(number | null)[]} */ const y = [];
  for (let k = 0; k < rows.length; k++) {
    const r = rows[k];
    const v = value(r);
    if (!isNumber(v)) continue;
    const p = offset + k;
    x.push(p - half, p + half);
    y.push(v, v);
    const next = k + 1 < rows.length ? rows[k + 1] : -1;
    const w = next >= 0 ? value(next) : null;
    if (next >= 0 && isNumber(w) && Number(t.thread[next]) === Number(t.thread[r])) {
      x.push(p + 0.5, p + 0.5);
      y.push(v, w);
    } else {
      x.push(null);
      y.push(null);
    }
  }
  return { x, y };
}

/**
 * How many drifts the timeline folds (they cost nothing) among `rows`.
 *
 * @param {Timeline} t
 * @param {number[]} rows
 */
export function foldedDrifts(t, rows) {
  let n = 0;
  for (const r of rows) if (t.drift[r] && !t.material[r]) n++;
  return n;
}

/**
 * The timeline: stacked prefix/new bars per call (no outlines), the common-prefix line
 * per thread, the reported cache read against it, drift, miss and idle-gap markers.
 * Drifts that cost nothing are folded unless `showCostless`.
 *
 * @param {Timeline} t
 * @param {number[]} rows the rows drawn (the detail window), in call order
 * @param {Meta} meta
 * @param {FigureOptions} [options]
 * @returns {Figure}
 */
export function timelineFigure(t, rows, meta, options = {}) {
  const theme = options.theme ?? DEFAULT_THEME;
  const offset = options.offset ?? 0;
  const x = new Array(rows.length);
  const calls = new Array(rows.length);
  const prefix = new Array(rows.length);
  const fresh = new Array(rows.length);
  const hover = new Array(rows.length);
  /** @type {number[]} */ const driftX = [];
  /** @type {number[]} */ const driftY = [];
  /** @type {number[]} */ const driftCalls = [];
  /** @type {string[]} */ const driftText = [];
  /** @type {string[]} */ const driftHover = [];
  /** @type {number[]} */ const missX = [];
  /** @type {number[]} */ const missY = [];
  /** @type {number[]} */ const missCalls = [];
  /** @type {string[]} */ const missHover = [];
  /** @type {number[]} */ const idleX = [];
  /** @type {number[]} */ const idleCalls = [];
  /** @type {string[]} */ const idleHover = [];
  /** @type {number[]} */ const tops = new Array(rows.length);
  let reported = 0;
  for (let k = 0; k < rows.length; k++) {
    const r = rows[k];
    const pos = offset + k;
    x[k] = pos;
    calls[k] = t.call[r];
    prefix[k] = t.prefix[r];
    fresh[k] = t.fresh[r];
    hover[k] = callHover(t, r, meta);
    if (isNumber(t.reportedRead[r])) reported++;
    const top = Math.max(Number(t.input[r]) || 0, (Number(t.prefix[r]) || 0) + (Number(t.fresh[r]) || 0));
    tops[k] = top;
    if (t.drift[r] && (t.material[r] || options.showCostless)) {
      driftX.push(pos);
      driftY.push(top);
      driftCalls.push(t.call[r]);
      driftText.push(safe(t.cause[r] >= 0 ? nameAt(meta.causes, t.cause[r]) : "drift", 24));
      driftHover.push(hover[k]);
    }
    if (t.miss[r]) {
      missX.push(pos);
      missY.push(top);
      missCalls.push(t.call[r]);
      missHover.push(hover[k]);
    }
    if (t.idleGap[r]) {
      idleX.push(pos);
      idleCalls.push(t.call[r]);
      idleHover.push(hover[k]);
    }
  }
  // the small calls: a marker at the top of each bar too low to see or click
  const tallest = tops.reduce((a, b) => Math.max(a, b), 0);
  /** @type {number[]} */ const smallX = [];
  /** @type {number[]} */ const smallY = [];
  /** @type {number[]} */ const smallCalls = [];
  /** @type {string[]} */ const smallHover = [];
  for (let k = 0; k < rows.length; k++) {
    if (tallest > 0 && tops[k] < tallest * SMALL_BAR) {
      smallX.push(x[k]);
      smallY.push(tops[k]);
      smallCalls.push(calls[k]);
      smallHover.push(hover[k]);
    }
  }
  const line = prefixSteps(t, rows, offset, (r) => Number(t.prefix[r]));
  const read = prefixSteps(t, rows, offset, (r) => (isNumber(t.reportedRead[r]) ? Number(t.reportedRead[r]) : null), 0.3);
  const labelled = driftX.length <= MAX_DRIFT_LABELS;
  const ttl = formatDuration(meta.ttl_seconds ?? null);
  const folded = options.showCostless ? 0 : foldedDrifts(t, rows);
  const bar = { type: "bar", x, customdata: calls, hovertext: hover, hoverinfo: "text" };
  const data = [
    { ...bar, name: "prefix (matched)", y: prefix, marker: { color: COLORS.same, line: { width: 0 } } },
    { ...bar, name: "new", y: fresh, marker: { color: COLORS.new, line: { width: 0 } } },
    {
      type: "scatter",
      mode: "lines",
      name: "common prefix",
      x: line.x,
      y: line.y,
      connectgaps: false,
      line: { color: theme.color, width: 1.5 },
      hoverinfo: "skip",
    },
    {
      type: "scatter",
      mode: "lines",
      name: "reported cache read",
      x: read.x,
      y: read.y,
      connectgaps: false,
      line: { color: COLORS.reported, width: 2.5, dash: "dot" },
      hoverinfo: "skip",
      showlegend: reported > 0,
      visible: reported > 0 ? true : "legendonly",
    },
    {
      type: "scatter",
      mode: labelled ? "markers+text" : "markers",
      name: folded ? `drift (+${plural(folded, "costless drift")} folded)` : "drift",
      x: driftX,
      y: driftY,
      customdata: driftCalls,
      text: labelled ? driftText : undefined,
      textposition: "top center",
      textfont: { size: 10, color: COLORS.drift },
      cliponaxis: false,
      marker: { symbol: "x-thin", size: 9, line: { width: 2, color: COLORS.drift }, color: COLORS.drift },
      hovertext: driftHover,
      hoverinfo: "text",
      showlegend: driftX.length > 0 || folded > 0,
    },
    {
      type: "scatter",
      mode: "markers",
      name: "miss (provider read less)",
      x: missX,
      y: missY,
      customdata: missCalls,
      cliponaxis: false,
      marker: { symbol: "triangle-down", size: 10, color: COLORS.miss },
      hovertext: missHover,
      hoverinfo: "text",
      showlegend: missX.length > 0,
    },
    {
      type: "scatter",
      mode: "markers",
      name: `idle > ${ttl}`,
      x: idleX,
      y: idleX.map(() => 0),
      customdata: idleCalls,
      marker: { symbol: "triangle-up", size: 9, color: COLORS.idle },
      hovertext: idleHover,
      hoverinfo: "text",
      showlegend: idleX.length > 0,
      cliponaxis: false,
    },
    {
      type: "scatter",
      mode: "markers",
      name: `small call (under ${SMALL_BAR * 100} % of the tallest)`,
      x: smallX,
      y: smallY,
      customdata: smallCalls,
      cliponaxis: false,
      marker: { symbol: "diamond", size: 6, color: COLORS.new, line: { width: 1, color: theme.color } },
      hovertext: smallHover,
      hoverinfo: "text",
      showlegend: smallX.length > 0,
    },
  ];
  const range = rows.length ? [offset - 0.5, offset + rows.length - 0.5] : undefined;
  const layout = {
    ...baseLayout(theme, 300, options.revision ?? ""),
    barmode: "stack",
    bargap: rows.length > 200 ? 0 : 0.15,
    xaxis: axis(theme, "call", { ...(range ? { range } : { rangemode: "tozero" }), ...(options.ticks ?? {}) }),
    yaxis: axis(theme, "input tokens", { rangemode: "tozero" }),
    shapes: selectionShapes(options.selected ?? -1, "x"),
  };
  return { data, layout };
}

/**
 * The timeline panel.
 *
 * @param {ViewContext} ctx
 * @returns {View}
 */
export function createTimeline(ctx) {
  const { state } = ctx;
  const p = panel(ctx.doc, "Timeline", "matched prefix vs new tokens per call; × drift, ▲ idle gap");
  const onClick = (/** @type {any} */ point) => ctx.select(callOf(point) ?? -1);

  function draw() {
    const t = state.timeline;
    if (!t || t.n === 0) return emptyPlot(p, "No calls to show.");
    if (!state.rows.length) return emptyPlot(p, "No call matches the filter.");
    const meta = ctx.meta();
    const fig = timelineFigure(t, ctx.windowRows(), meta, ctx.figureOptions());
    const idle = formatDuration(meta.ttl_seconds ?? null);
    const folded = state.showCostless ? 0 : foldedDrifts(t, state.rows);
    const foldNote = folded ? ` (+${plural(folded, "costless drift")} folded: tick “costless drifts” to show)` : "";
    p.note.textContent = `matched prefix vs new tokens per call; dotted: cache read the provider reported; × drift${foldNote}, ▼ miss, ▲ idle > ${idle}; click a call`;
    drawInto(p, fig, onClick, 0);
  }

  return {
    panel: p,
    chart: true,
    draw: () => guarded(p, "the timeline", draw),
    showSelection: (position) => moveShapes(p, selectionShapes(position, "x")),
  };
}
