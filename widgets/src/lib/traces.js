// @ts-check
/**
 * Plotly figures as plain data (no Plotly import, so they are unit-testable).
 *
 * Every string that comes from the data is escaped with {@link escapeHtml}: Plotly renders
 * a subset of HTML in hover text and labels. Traces are few and fixed in number (bars use
 * base/length arrays), so 2,000 calls stay one `Plotly.react` of a handful of traces.
 */
import { COLORS, STATUS_COLORS, STATUS_HELP, STATUS_NAMES, UNLOGGED } from "./constants.js";
import { nameAt, threadNames } from "./data.js";
import { escapeHtml, truncate } from "./escape.js";
import { formatCompact, formatDuration, formatShare, formatTime, formatTokens, formatUsd, isNumber, plural, usdTicks } from "./format.js";
import { cumulativeSum, plotHeight, statusBars } from "./geometry.js";

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
  if (t.miss[r]) {
    const cause = t.missCause[r] >= 0 ? nameAt(meta.miss_causes, t.missCause[r]) : "miss";
    lines.push(`<b>miss</b>: ${safe(cause)} · ${formatTokens(t.missTokens[r])} tokens not read`);
  }
  if (t.idleGap[r]) lines.push(`idle > ${formatDuration(meta.ttl_seconds ?? null)} before this call`);
  return lines.join("<br>");
}

/**
 * @typedef {{ theme?: Theme, selected?: number, revision?: string, offset?: number,
 *   ticks?: Record<string, any>, showCostless?: boolean }} FigureOptions
 * `offset`: position of the first of `rows` among the shown calls (calls are drawn at
 * their position, so a filter leaves no gaps); `ticks`: x-axis ticks naming the calls;
 * `selected`: the selected call's position (-1: none or not shown).
 */

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
 * @param {import("./geometry.js").StatusBars[]} bars one per status
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
 * Whether any shown call has a simulated cost (else the chart would be empty: the
 * panel shows a message instead).
 *
 * @param {Costs} costs
 * @param {Timeline} t
 * @param {number[]} rows
 */
export function hasCosts(costs, t, rows) {
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
