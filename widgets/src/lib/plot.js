// @ts-check
/**
 * The only module that touches Plotly (tests replace it). Calls on one plot are queued so
 * a selection update never races the draw it depends on.
 */
import Plotly from "plotly.js-basic-dist-min";

const CONFIG = {
  displaylogo: false,
  responsive: false, // resized by a ResizeObserver on the widget root instead
  scrollZoom: false,
  modeBarButtonsToRemove: ["select2d", "lasso2d", "autoScale2d"],
};

/** @type {WeakMap<HTMLElement, Promise<unknown>>} */
const queues = new WeakMap();
/** @type {WeakSet<HTMLElement>} */
const bound = new WeakSet();

/**
 * @param {HTMLElement} div
 * @param {() => unknown} step
 * @returns {Promise<unknown>}
 */
function enqueue(div, step) {
  const previous = queues.get(div) ?? Promise.resolve();
  const next = previous.then(step);
  queues.set(
    div,
    next.catch(() => undefined),
  );
  return next;
}

/** Yield to the browser (a macrotask), so it can paint what is drawn so far. */
const yieldTask = () => new Promise((resolve) => setTimeout(resolve, 0));

/**
 * Draw (or redraw in place) a figure, and bind the click handler once.
 *
 * @param {HTMLElement} div
 * @param {{ data: any[], layout: any }} figure
 * @param {(point: any) => void} [onClick] called with the first clicked point
 * @param {number} [stagger=0] on the first draw only, let the browser paint this many
 *   times first: the first chart shows while the others are still being drawn
 * @param {Record<string, (event: any) => void>} [handlers] other Plotly events, bound once
 * @returns {Promise<unknown>}
 */
export function draw(div, figure, onClick, stagger = 0, handlers = {}) {
  return enqueue(div, async () => {
    if (!(/** @type {any} */ (div)._fullLayout)) for (let i = 0; i < stagger; i++) await yieldTask();
    await Plotly.react(div, figure.data, figure.layout, CONFIG);
    if (onClick && !bound.has(div)) {
      bound.add(div);
      /** @type {any} */ (div).on("plotly_click", (/** @type {any} */ event) => {
        const point = event?.points?.[0];
        if (point) onClick(point);
      });
      for (const [name, fn] of Object.entries(handlers)) /** @type {any} */ (div).on(name, fn);
    }
  });
}

/**
 * Replace the layout shapes (the selection band) without redrawing the traces.
 *
 * @param {HTMLElement} div
 * @param {any[]} shapes
 * @returns {Promise<unknown>}
 */
export function setShapes(div, shapes) {
  return enqueue(div, () => {
    if (/** @type {any} */ (div)._fullLayout) return Plotly.relayout(div, { shapes });
    return undefined;
  });
}

/**
 * Fit a drawn plot to its container's width.
 *
 * @param {HTMLElement} div
 */
export function resize(div) {
  return enqueue(div, () => {
    if (/** @type {any} */ (div)._fullLayout && div.isConnected) return Plotly.Plots.resize(div);
    return undefined;
  });
}

/**
 * Free a plot's listeners and DOM.
 *
 * @param {HTMLElement} div
 */
export function purge(div) {
  queues.delete(div);
  bound.delete(div);
  Plotly.purge(div);
}
