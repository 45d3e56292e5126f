// @ts-check
/**
 * What every chart's figure shares: the theme, the base layout and axes, escaping of data
 * text, and the selection band. Figures are plain data (no Plotly import), so each view's
 * figure is unit-testable; only `plot.js` touches Plotly.
 *
 * Every string that comes from the data is escaped with {@link safe}: Plotly renders a
 * subset of HTML in hover text and labels. Traces are few and fixed in number (bars use
 * base/length arrays), so 2,000 calls stay one `Plotly.react` of a handful of traces.
 */
import { COLORS } from "./constants.js";
import { escapeHtml, truncate } from "./escape.js";

/**
 * @typedef {{ color: string, grid: string, font: string }} Theme
 * @typedef {{ data: Record<string, any>[], layout: Record<string, any> }} Figure
 */

/**
 * @typedef {{ theme?: Theme, selected?: number, revision?: string, offset?: number,
 *   ticks?: Record<string, any>, showCostless?: boolean }} FigureOptions
 * `offset`: position of the first of `rows` among the shown calls (calls are drawn at
 * their position, so a filter leaves no gaps); `ticks`: axis ticks naming the calls;
 * `selected`: the selected call's position (-1: none or not shown).
 */

const LABEL_CHARS = 80;

/** @type {Theme} */
export const DEFAULT_THEME = { color: "#222", grid: "rgba(128,128,128,0.2)", font: "sans-serif" };

/**
 * Text that came from the data, cut and escaped for Plotly.
 *
 * @param {unknown} value
 * @param {number} [limit]
 */
export function safe(value, limit = LABEL_CHARS) {
  return escapeHtml(truncate(value === null || value === undefined ? "" : String(value), limit));
}

/**
 * @param {Theme} theme
 * @param {number} height
 * @param {string} revision
 * @returns {Record<string, any>}
 */
export function baseLayout(theme, height, revision) {
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
export function axis(theme, title, extra = {}) {
  return {
    title: { text: title, standoff: 4 },
    gridcolor: theme.grid,
    zeroline: false,
    automargin: true,
    ...extra,
  };
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
