// @ts-check
/**
 * The inspector, drawn into an element and kept in step with a model: the anywidget model
 * in a notebook (`inspector.js`), an in-memory one in the HTML report (`report-app.js`).
 * Only `inspector.js` is the widget entry: anywidget warns about named exports there, so
 * they live here.
 *
 * This module only composes: it decodes the synced tables into one shared state, mounts
 * the header and one module per view (`views/overview.js`, `timeline.js`, `shape.js`,
 * `detail.js`, `costs.js`, each owning its panel, figure and events), and wires the
 * shared selection, filter and window between them.
 */
import { errorText } from "./lib/arrow.js";
import { appendRows, decodeCosts, decodeShape, decodeTimeline, filterRows, searchedCall, threadNames } from "./lib/data.js";
import { DETAIL_MAX, callTicks, clampWindow, positionsOf, windowShowing } from "./lib/window.js";
import { h } from "./lib/dom.js";
import * as plot from "./lib/plot.js";
import { createCosts } from "./views/costs.js";
import { createDetail } from "./views/detail.js";
import { createHeader } from "./views/header.js";
import { createOverview } from "./views/overview.js";
import { createShape } from "./views/shape.js";
import { createTimeline } from "./views/timeline.js";
import { CSS } from "./views/styles.js";

/**
 * The synced model, as this front end reads it.
 *
 * @typedef {object} Model
 * @property {DataView} _timeline
 * @property {DataView} _shape
 * @property {DataView} _costs
 * @property {import("./lib/data.js").Meta} meta
 * @property {number} selected_call
 * @property {import("./views/detail.js").Detail} _detail
 * @property {string} status
 */

/**
 * What `render` needs of an anywidget model (the HTML report passes an in-memory one).
 * Method syntax keeps anywidget's typed `AnyModel<Model>` assignable to it.
 *
 * @typedef {{
 *   get(name: string): any,
 *   set(name: string, value: any): void,
 *   on(event: string, callback: (...args: any[]) => void): void,
 *   off?(event?: string | null, callback?: ((...args: any[]) => void) | null): void,
 *   save_changes(): void,
 *   send?(content: any): void,
 * }} ModelLike
 */

const WIDGET_HINT =
  "This usually means the widget's data does not match this front end: rebuild the front end " +
  "(`npm --prefix widgets run build`) and re-run the cell.";

/**
 * Rows the live inspector appended to a synced table, keyed by the table's synced value
 * (a DataView): a view drawn after an append adds them; a replaced table drops them.
 *
 * @type {WeakMap<object, DataView[]>}
 */
const APPENDED = new WeakMap();

/**
 * Follow the live inspector's `append` messages at the model level (anywidget's
 * `initialize`, once per model): keep the new rows for views drawn later, then set the
 * new `meta` locally (not synced back), which redraws every view after it appended.
 *
 * @param {ModelLike} model
 * @returns {() => void} cleanup
 */
export function rememberAppend(model) {
  const handler = (/** @type {any} */ msg, /** @type {DataView[]} */ buffers) => {
    if (msg?.type !== "append") return;
    ["_timeline", "_shape", "_costs"].forEach((trait, i) => {
      const key = model.get(trait);
      if (!key || typeof key !== "object" || !buffers[i]) return;
      APPENDED.set(key, [...(APPENDED.get(key) ?? []), buffers[i]]);
    });
    queueMicrotask(() => model.set("meta", msg.meta));
  };
  model.on("msg:custom", handler);
  return () => model.off?.("msg:custom", handler);
}

/**
 * Draw the inspector into `el` and keep it in step with the model.
 *
 * @param {{ model: ModelLike, el: HTMLElement }} view
 * @param {string} [hint] what to suggest when drawing fails
 * @returns {() => void} cleanup
 */
export function render({ model, el }, hint = WIDGET_HINT) {
  try {
    return mount(model, el, hint);
  } catch (err) {
    showFatal(el, err, hint);
    return () => {};
  }
}

/**
 * Replace `el`'s content with a visible error, and log the detail.
 *
 * @param {HTMLElement} el
 * @param {unknown} err
 * @param {string} [hint]
 */
export function showFatal(el, err, hint = WIDGET_HINT) {
  console.error("cacheviz inspector: rendering failed", err);
  const doc = el.ownerDocument;
  const box = h(doc, "div", { className: "cacheviz-inspector__error", attrs: { role: "alert" } }, [
    `cacheviz could not draw the inspector: ${errorText(err)}\n`,
    `${hint} Details are in the browser console.`,
  ]);
  el.replaceChildren(h(doc, "div", { className: "cacheviz-inspector" }, [styleElement(doc), box]));
}

/** @param {Document} doc */
function styleElement(doc) {
  const style = doc.createElement("style");
  style.textContent = CSS;
  return style;
}

/**
 * @param {ModelLike} model
 * @param {HTMLElement} el
 * @param {string} hint
 * @returns {() => void}
 */
function mount(model, el, hint) {
  const doc = el.ownerDocument;
  /** @type {Array<[string, (...args: any[]) => void]>} */
  const listeners = [];

  // ---- shared state (never synced) and decoded data -----------------------------------
  /** @type {import("./views/panel.js").ViewState} */
  const state = {
    thread: -1,
    cause: "",
    search: "",
    showCostless: false,
    window: { start: 0, end: 0 },
    positions: new Map(),
    timeline: null,
    shape: null,
    costs: null,
    rows: [],
    errors: {},
    found: null,
  };
  const meta = () => /** @type {import("./lib/data.js").Meta} */ (model.get("meta") ?? {});
  const selected = () => {
    const value = Number(model.get("selected_call"));
    return Number.isInteger(value) ? value : -1;
  };
  const select = (/** @type {number} */ call) => {
    if (!Number.isInteger(call) || call === selected()) return;
    model.set("selected_call", call);
    model.save_changes();
  };
  /** Position of the selected call among the shown rows, or -1. */
  const selectedPosition = () => state.positions.get(selected()) ?? -1;
  const revision = () => `thread:${state.thread}:${state.cause}:${state.search}:${state.window.start}:${state.window.end}`;
  function theme() {
    const view = doc.defaultView;
    const computed = view?.getComputedStyle ? view.getComputedStyle(root) : null;
    return {
      color: computed?.color || "#222",
      grid: "rgba(128,128,128,0.22)",
      font: computed?.fontFamily || "sans-serif",
    };
  }

  /** @type {import("./views/panel.js").ViewContext} */
  const ctx = {
    doc,
    state,
    meta,
    selected,
    select,
    selectedPosition,
    windowRows: () => state.rows.slice(state.window.start, state.window.end),
    figureOptions: () => ({
      theme: theme(),
      selected: selectedPosition(),
      revision: revision(),
      offset: state.window.start,
      ticks: state.timeline ? callTicks(state.timeline, state.rows, state.window) : {},
      showCostless: state.showCostless,
    }),
    theme,
    revision,
    setWindow(window) {
      state.window = clampWindow(window, state.rows.length);
      drawAll();
    },
    detail: () => model.get("_detail"),
    requestCompare() {
      // the comparison is built when the providers panel is first seen (cacheviz/ui/widget.py)
      if (compareAsked || typeof model.send !== "function") return;
      compareAsked = true;
      model.send({ type: "compare" });
    },
  };
  let compareAsked = false;

  // ---- DOM --------------------------------------------------------------------------
  const header = createHeader(doc, {
    onThread(thread) {
      state.thread = thread;
      refilter();
    },
    onCause(cause) {
      state.cause = cause;
      refilter();
    },
    onSearch(text) {
      state.search = text;
      state.found = null;
      refilter();
      const query = text.trim();
      if (query.length >= 2 && searchedCall(query) === null && typeof model.send === "function") {
        model.send({ type: "search", text: query }); // the results arrive in `_found`
      } else {
        header.setFound(null);
      }
    },
    onPick(call) {
      select(call);
    },
    onControl(name, value) {
      model.set(name, value);
      model.save_changes();
    },
    onCostless(show) {
      state.showCostless = show;
      views.timeline.draw();
    },
    onClear() {
      if (selected() !== -1) {
        model.set("selected_call", -1);
        model.save_changes();
      }
    },
  });
  const dataError = h(doc, "div", { className: "cacheviz-panel__error", attrs: { role: "alert" } });
  const views = {
    overview: createOverview(ctx),
    timeline: createTimeline(ctx),
    shape: createShape(ctx),
    detail: createDetail(ctx),
    costs: createCosts(ctx),
  };
  /** In page order; the detail views draw after the overview moved the window. */
  const all = [views.overview, views.timeline, views.shape, views.detail, views.costs];
  const charts = all.filter((v) => v.chart);
  const root = h(doc, "div", { className: "cacheviz-inspector" }, [
    styleElement(doc),
    header.el,
    dataError,
    ...all.map((v) => v.panel.section),
  ]);
  el.appendChild(root);

  // ---- data ---------------------------------------------------------------------------
  /**
   * @template T
   * @param {string} trait
   * @param {(value: unknown) => T} decode
   * @returns {T | null}
   */
  function load(trait, decode) {
    try {
      delete state.errors[trait];
      return decode(model.get(trait));
    } catch (err) {
      console.error(`cacheviz inspector: could not read \`${trait}\``, err);
      state.errors[trait] = errorText(err);
      return null;
    }
  }
  function showDataErrors() {
    const messages = Object.values(state.errors);
    dataError.textContent = messages.length
      ? `${messages.join("\n")}\nThe views below may be incomplete; details are in the browser console.`
      : "";
  }
  function updateRows() {
    const names = threadNames(meta());
    if (state.thread >= names.length) state.thread = -1;
    const filter = { thread: state.thread, cause: state.cause, search: state.search, found: state.found };
    const before = state.rows.length;
    state.rows = state.timeline ? filterRows(state.timeline, meta(), filter) : [];
    state.positions = state.timeline ? positionsOf(state.timeline, state.rows) : new Map();
    const pos = state.positions.get(selected());
    let base = state.window.end > state.window.start ? state.window : null;
    const n = state.rows.length;
    if (base && before > 0 && base.end === before && n > before) {
      // the window showed the last calls and calls were appended (a live session): follow
      base = { start: Math.max(base.start, n - DETAIL_MAX), end: n };
    }
    const kept = clampWindow(base, n);
    state.window = pos === undefined ? kept : windowShowing(kept, pos, state.rows.length);
  }
  /**
   * A filter changed: the window starts over; a search for a call number ("#5") selects
   * that call (what the user means); a call the filter hides is no longer selected.
   */
  function refilter() {
    state.window = { start: 0, end: 0 };
    updateRows();
    const searched = searchedCall(state.search);
    if (searched !== null && state.positions.has(searched)) {
      state.window = windowShowing(state.window, /** @type {number} */ (state.positions.get(searched)), state.rows.length);
      select(searched);
    } else if (selected() >= 0 && !state.positions.has(selected())) {
      model.set("selected_call", -1);
      model.save_changes();
    }
    drawAll();
  }

  // ---- drawing ------------------------------------------------------------------------
  function drawHeader() {
    try {
      header.update({
        meta: meta(),
        timeline: state.timeline,
        costs: state.costs,
        rows: state.rows,
        thread: state.thread,
        cause: state.cause,
        search: state.search,
        selected: selected(),
      });
    } catch (err) {
      console.error("cacheviz inspector: header", err);
    }
    showStatus();
  }
  /** The `status` trait in the header; the inspector is dimmed while a re-simulation runs. */
  function showStatus() {
    const busy = header.setStatus(String(model.get("status") ?? ""), meta());
    root.classList.toggle("cacheviz-inspector--busy", busy);
  }
  function drawAll() {
    drawHeader();
    // the detail panel draws last (as it always has): its buttons read the charts' rows
    for (const v of [views.overview, views.timeline, views.shape, views.costs, views.detail]) v.draw();
  }
  function updateSelection() {
    header.setSelection(selected());
    const pos = selectedPosition();
    if (pos >= 0 && (pos < state.window.start || pos >= state.window.end)) {
      // selected from Python, the nav buttons or the report: bring it into the window
      state.window = windowShowing(state.window, pos, state.rows.length);
      drawAll();
      return;
    }
    for (const v of [views.timeline, views.shape, views.costs, views.overview, views.detail]) v.showSelection(pos);
  }

  // ---- model events ------------------------------------------------------------------
  /** @param {string} event @param {(...args: any[]) => void} fn */
  function on(event, fn) {
    const wrapped = (/** @type {any[]} */ ...args) => {
      try {
        fn(...args);
      } catch (err) {
        showFatal(el, err, hint);
      }
    };
    model.on(event, wrapped);
    listeners.push([event, wrapped]);
  }
  on("change:_timeline", () => {
    state.timeline = load("_timeline", decodeTimeline);
    state.window = { start: 0, end: 0 };
    showDataErrors();
    updateRows();
    drawAll();
  });
  on("change:_shape", () => {
    state.shape = load("_shape", decodeShape);
    showDataErrors();
    views.shape.draw();
  });
  on("change:_costs", () => {
    state.costs = load("_costs", decodeCosts);
    showDataErrors();
    drawHeader();
    views.costs.draw();
    views.detail.draw();
  });
  on("change:meta", () => {
    updateRows();
    drawAll();
  });
  // the live inspector (cacheviz/ui/live.py): the new calls' rows arrive in one message;
  // `rememberAppend` (the widget's initialize) keeps them for views drawn later and
  // then sets the new meta, which redraws
  on("msg:custom", (/** @type {any} */ msg, /** @type {DataView[]} */ buffers) => {
    if (msg?.type !== "append") return;
    if (state.timeline) state.timeline = appendRows(state.timeline, decodeTimeline(buffers[0]));
    if (state.shape) state.shape = appendRows(state.shape, decodeShape(buffers[1]));
    if (state.costs) state.costs = appendRows(state.costs, decodeCosts(buffers[2]));
  });
  on("change:selected_call", updateSelection);
  on("change:_found", () => {
    const found = model.get("_found");
    if (!found || found.text !== state.search.trim()) return; // an older search's answer
    state.found = new Set((found.results ?? []).map((/** @type {any} */ r) => Number(r.call)));
    header.setFound(found);
    updateRows();
    drawAll();
  });
  const showControls = () =>
    header.setControls(model.get("_choices") ?? {}, {
      provider: model.get("provider") ?? "",
      model: model.get("model") ?? "",
      ttl: model.get("ttl") ?? "",
      breakpoints: model.get("breakpoints") ?? "",
    });
  for (const trait of ["_choices", "provider", "model", "ttl", "breakpoints"]) on(`change:${trait}`, showControls);
  on("change:_detail", views.detail.draw);
  on("change:status", showStatus);

  // ---- first render ------------------------------------------------------------------
  state.timeline = load("_timeline", decodeTimeline);
  state.shape = load("_shape", decodeShape);
  state.costs = load("_costs", decodeCosts);
  for (const more of APPENDED.get(model.get("_timeline")) ?? []) {
    if (state.timeline) state.timeline = appendRows(state.timeline, decodeTimeline(more));
  }
  for (const more of APPENDED.get(model.get("_shape")) ?? []) {
    if (state.shape) state.shape = appendRows(state.shape, decodeShape(more));
  }
  for (const more of APPENDED.get(model.get("_costs")) ?? []) {
    if (state.costs) state.costs = appendRows(state.costs, decodeCosts(more));
  }
  showDataErrors();
  updateRows();
  drawAll();
  showControls();

  // plots follow the width of the output area (and appear right once it is attached)
  /** @type {ResizeObserver | null} */
  let observer = null;
  const view = doc.defaultView;
  if (view && typeof view.ResizeObserver === "function") {
    let width = -1;
    let pending = false;
    observer = new view.ResizeObserver((entries) => {
      const w = Math.round(entries[0]?.contentRect.width ?? 0);
      if (w === width || w === 0 || pending) return;
      width = w;
      pending = true;
      view.requestAnimationFrame(() => {
        pending = false;
        for (const v of charts) if (!v.panel.plot.hidden) plot.resize(v.panel.plot).catch(() => undefined);
      });
    });
    observer.observe(root);
  }

  return () => {
    observer?.disconnect();
    header.dispose();
    if (typeof model.off === "function") for (const [event, fn] of listeners) model.off(event, fn);
    for (const v of charts) {
      try {
        plot.purge(v.panel.plot);
      } catch {
        // already gone
      }
    }
    root.remove();
  };
}
