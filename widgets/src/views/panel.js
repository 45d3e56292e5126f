// @ts-check
/**
 * What every view shares: its titled panel, how it reports a failure, and the context
 * `render.js` hands it (the shared state, the selection, the window).
 *
 * A view is `{ panel, draw(), showSelection(position) }`: `draw` redraws it from the
 * context (never throws: a failure is shown in the panel), `showSelection` moves the
 * selection band without redrawing the traces. Views with a chart set `chart: true`
 * (`render.js` resizes and frees those).
 */
import { errorText } from "../lib/arrow.js";
import { h } from "../lib/dom.js";
import * as plot from "../lib/plot.js";

/**
 * @typedef {import("../lib/data.js").Timeline} Timeline
 * @typedef {import("../lib/data.js").Shape} Shape
 * @typedef {import("../lib/data.js").Costs} Costs
 * @typedef {import("../lib/data.js").Meta} Meta
 * @typedef {import("../lib/window.js").Window} Window
 * @typedef {import("../lib/figure.js").Figure} Figure
 * @typedef {import("../lib/figure.js").FigureOptions} FigureOptions
 * @typedef {import("../lib/figure.js").Theme} Theme
 */

/**
 * The inspector's UI state (never synced) and decoded data.
 *
 * @typedef {object} ViewState
 * @property {number} thread the thread filter (-1: all)
 * @property {string} cause the "show" filter ("", "drift", "miss" or a drift cause)
 * @property {string} search
 * @property {boolean} showCostless
 * @property {Window} window positions `[start, end)` of the shown rows the detail views draw
 * @property {Map<number, number>} positions call → position among the shown rows
 * @property {Timeline | null} timeline
 * @property {Shape | null} shape
 * @property {Costs | null} costs
 * @property {number[]} rows the shown rows (the filter's), in call order
 * @property {Record<string, string>} errors what could not be decoded, by trait
 * @property {Set<number> | null} found the calls the full-text search found
 */

/**
 * What a view reads and does beyond its own panel.
 *
 * @typedef {object} ViewContext
 * @property {Document} doc
 * @property {ViewState} state
 * @property {() => Meta} meta
 * @property {() => number} selected the selected call (-1: none)
 * @property {(call: number) => void} select
 * @property {() => number} selectedPosition the selected call's position among the shown rows (-1: none)
 * @property {() => number[]} windowRows the rows the detail views draw
 * @property {() => FigureOptions} figureOptions
 * @property {() => Theme} theme
 * @property {() => string} revision
 * @property {(window: Window) => void} setWindow
 * @property {() => any} detail the selected call's detail (the `_detail` trait)
 * @property {() => void} requestCompare ask the kernel for the provider comparison (once)
 */

/**
 * @typedef {object} View
 * @property {PanelParts} panel
 * @property {() => void} draw
 * @property {(position: number) => void} showSelection
 * @property {boolean} chart whether the panel holds a Plotly chart
 */

/**
 * @typedef {{ section: HTMLElement, head: HTMLElement, note: HTMLElement, error: HTMLElement,
 *   empty: HTMLElement, plot: HTMLElement, body: HTMLElement }} PanelParts
 */

/**
 * A titled panel with an error line, an empty-state line, a plot and a body.
 *
 * @param {Document} doc
 * @param {string} title
 * @param {string} note
 * @param {boolean} [withPlot=true]
 * @returns {PanelParts}
 */
export function panel(doc, title, note, withPlot = true) {
  const noteEl = h(doc, "span", { className: "cacheviz-panel__note", text: note });
  const head = h(doc, "div", { className: "cacheviz-panel__head" }, [
    h(doc, "h3", { className: "cacheviz-panel__title", text: title }),
    noteEl,
  ]);
  const error = h(doc, "div", { className: "cacheviz-panel__error", attrs: { role: "alert" } });
  const empty = h(doc, "div", { className: "cacheviz-panel__empty" });
  const plotEl = h(doc, "div", { className: "cacheviz-panel__plot" });
  plotEl.hidden = !withPlot;
  const body = h(doc, "div", { className: "cacheviz-panel__body" });
  const section = h(doc, "section", { className: "cacheviz-panel" }, [head, error, empty, plotEl, body]);
  return { section, head, note: noteEl, error, empty, plot: plotEl, body };
}

/**
 * Show in the panel that drawing `what` failed, and log the detail.
 *
 * @param {PanelParts} p
 * @param {string} what
 * @param {unknown} err
 */
export function viewError(p, what, err) {
  console.error(`cacheviz inspector: could not draw ${what}`, err);
  p.error.textContent = `Could not draw ${what}: ${errorText(err)}. Details are in the browser console.`;
}

/**
 * Run `fn`, showing its failure in the panel instead of throwing.
 *
 * @param {PanelParts} p
 * @param {string} what
 * @param {() => void} fn
 */
export function guarded(p, what, fn) {
  try {
    p.error.textContent = "";
    fn();
  } catch (err) {
    viewError(p, what, err);
  }
}

/**
 * Draw `fig` into the panel's plot.
 *
 * @param {PanelParts} p
 * @param {Figure} fig
 * @param {(point: any) => void} onClick
 * @param {number} stagger first draw: paint the charts above first (see plot.draw)
 * @param {Record<string, (event: any) => void>} [handlers] other Plotly events
 * @param {string} [what] what a failure names
 */
export function drawInto(p, fig, onClick, stagger, handlers, what = "a chart") {
  p.empty.textContent = "";
  p.plot.hidden = false;
  plot.draw(p.plot, fig, onClick, stagger, handlers).catch((err) => viewError(p, what, err));
}

/**
 * Hide the panel's plot and say why.
 *
 * @param {PanelParts} p
 * @param {string} message
 */
export function emptyPlot(p, message) {
  p.empty.textContent = message;
  p.plot.hidden = true;
}

/**
 * Move the selection band of a drawn chart (no redraw of its traces).
 *
 * @param {PanelParts} p
 * @param {any[]} shapes
 */
export function moveShapes(p, shapes) {
  if (!p.plot.hidden) plot.setShapes(p.plot, shapes).catch((err) => viewError(p, "the selection", err));
}

/**
 * The call a clicked point carries (its customdata), or null.
 *
 * @param {any} point
 * @returns {number | null}
 */
export function callOf(point) {
  const c = Number(point?.customdata);
  return Number.isInteger(c) ? c : null;
}
