// @ts-check
/**
 * The inspector's views, drawn into an element and kept in step with a model: the
 * anywidget model in a notebook (`inspector.js`), an in-memory one in the HTML report
 * (`report-app.js`). Only `inspector.js` is the widget entry: anywidget warns about named
 * exports there, so they live here.
 */
import { errorText } from "./lib/arrow.js";
import { appendRows, decodeCosts, decodeShape, decodeTimeline, filterRows, stepCall, threadNames } from "./lib/data.js";
import { DETAIL_MAX, callTicks, clampWindow, overviewFigure, positionsOf, windowFromSelection, windowShape, windowShowing, centerWindow } from "./lib/window.js";
import { h } from "./lib/dom.js";
import * as plot from "./lib/plot.js";
import { STATUS_HELP, STATUS_NAMES } from "./lib/constants.js";
import { formatDuration, plural } from "./lib/format.js";
import { costFigure, foldedDrifts, hasCosts, selectionShapes, shapeFigure, timelineFigure } from "./lib/traces.js";
import { renderDetail } from "./views/detail.js";
import { createHeader } from "./views/header.js";
import { compareTable, targetFacts } from "./views/providers.js";
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

  // ---- UI state (never synced) and decoded data --------------------------------------
  const state = {
    thread: -1,
    cause: "",
    search: "",
    showCostless: false,
    /** @type {import("./lib/window.js").Window} */ window: { start: 0, end: 0 },
    /** @type {Map<number, number>} */ positions: new Map(),
    /** @type {import("./lib/data.js").Timeline | null} */ timeline: null,
    /** @type {import("./lib/data.js").Shape | null} */ shape: null,
    /** @type {import("./lib/data.js").Costs | null} */ costs: null,
    /** @type {number[]} */ rows: [],
    /** @type {Record<string, string>} */ errors: {},
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
      refilter();
    },
    onCostless(show) {
      state.showCostless = show;
      guarded(timelinePanel, "the timeline", drawTimeline);
    },
    onClear() {
      if (selected() !== -1) {
        model.set("selected_call", -1);
        model.save_changes();
      }
    },
  });
  const dataError = h(doc, "div", { className: "cacheviz-panel__error", attrs: { role: "alert" } });

  const overviewPanel = panel(doc, "Overview", "every shown call, binned; drag across it to choose the calls drawn below, click to centre");
  overviewPanel.section.classList.add("cacheviz-overview");
  const timelinePanel = panel(doc, "Timeline", "matched prefix vs new tokens per call; × drift, ▲ idle gap");
  const shapePanel = panel(doc, "Cache shape", "segments of each request along the token axis");
  shapePanel.section.classList.add("cacheviz-shape");
  shapePanel.note.replaceChildren(
    ...STATUS_NAMES.flatMap((name, s) => [
      h(doc, "span", { text: name, title: STATUS_HELP[s] }),
      s < STATUS_NAMES.length - 1 ? " · " : "",
    ]),
    " (hover a status for what it means)",
  );
  const detailPanel = panel(doc, "Call detail", "", false);
  const nav = h(doc, "div", { className: "cacheviz-detail__nav" });
  detailPanel.head.append(nav);
  detailPanel.section.classList.add("cacheviz-detail");
  const providersPanel = panel(doc, "Providers", "");
  providersPanel.section.classList.add("cacheviz-providers");
  const targetBox = h(doc, "div");
  const compareBox = h(doc, "div");
  providersPanel.empty.before(targetBox);
  providersPanel.body.after(compareBox);

  const root = h(doc, "div", { className: "cacheviz-inspector" }, [
    styleElement(doc),
    header.el,
    dataError,
    overviewPanel.section,
    timelinePanel.section,
    shapePanel.section,
    detailPanel.section,
    providersPanel.section,
  ]);
  el.appendChild(root);

  const navButtons = [
    navButton(doc, "◀ drift", "previous drift or miss", () => stepCall(requireTimeline(), state.rows, selected(), -1, true)),
    navButton(doc, "◀ call", "previous call", () => stepCall(requireTimeline(), state.rows, selected(), -1, false)),
    navButton(doc, "call ▶", "next call", () => stepCall(requireTimeline(), state.rows, selected(), 1, false)),
    navButton(doc, "drift ▶", "next drift or miss", () => stepCall(requireTimeline(), state.rows, selected(), 1, true)),
  ];
  nav.append(...navButtons.map((b) => b.button));
  for (const b of navButtons) {
    b.button.addEventListener("click", () => {
      const call = state.timeline ? b.target() : null;
      if (call !== null) select(call);
    });
  }
  function requireTimeline() {
    return /** @type {import("./lib/data.js").Timeline} */ (state.timeline);
  }

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
    const filter = { thread: state.thread, cause: state.cause, search: state.search };
    const before = state.rows ? state.rows.length : 0;
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
  /** A filter changed: a call it hides is no longer selected; the window starts over. */
  function refilter() {
    state.window = { start: 0, end: 0 };
    updateRows();
    if (selected() >= 0 && !state.positions.has(selected())) {
      model.set("selected_call", -1);
      model.save_changes();
    }
    drawAll();
  }
  /** The rows the detail views draw. */
  function windowRows() {
    return state.rows.slice(state.window.start, state.window.end);
  }
  /** Position of the selected call among the shown rows, or -1. */
  function selectedPosition() {
    const pos = state.positions.get(selected());
    return pos === undefined ? -1 : pos;
  }
  function figureOptions() {
    return {
      theme: theme(),
      selected: selectedPosition(),
      revision: revision(),
      offset: state.window.start,
      ticks: state.timeline ? callTicks(state.timeline, state.rows, state.window) : {},
      showCostless: state.showCostless,
    };
  }
  /** @param {import("./lib/window.js").Window} window */
  function setWindow(window) {
    state.window = clampWindow(window, state.rows.length);
    drawAll();
  }
  /** @param {any} point */
  const callOf = (point) => {
    const c = Number(point?.customdata);
    return Number.isInteger(c) ? c : null;
  };
  function theme() {
    const view = doc.defaultView;
    const computed = view?.getComputedStyle ? view.getComputedStyle(root) : null;
    return {
      color: computed?.color || "#222",
      grid: "rgba(128,128,128,0.22)",
      font: computed?.fontFamily || "sans-serif",
    };
  }
  const revision = () => `thread:${state.thread}:${state.cause}:${state.search}:${state.window.start}:${state.window.end}`;

  // ---- views ----------------------------------------------------------------------------
  function drawOverview() {
    const t = state.timeline;
    if (!t || state.rows.length <= DETAIL_MAX) {
      overviewPanel.section.hidden = true;
      return;
    }
    overviewPanel.section.hidden = false;
    const { start, end } = state.window;
    overviewPanel.note.textContent =
      `${state.rows.length.toLocaleString("en-US")} calls, binned; the views below draw calls ` +
      `${t.call[state.rows[start]]}–${t.call[state.rows[end - 1]]} (${end - start}); drag across the overview to choose, click to centre`;
    const fig = overviewFigure(t, state.rows, state.window, { theme: theme(), revision: revision() });
    overviewPanel.empty.textContent = "";
    overviewPanel.plot.hidden = false;
    plot
      .draw(overviewPanel.plot, fig, (point) => setWindow(centerWindow(state.window, Number(point.x), state.rows.length)), 0, {
        plotly_selected: (/** @type {any} */ event) => {
          const w = windowFromSelection(event, state.rows.length);
          if (w) setWindow(w);
        },
      })
      .catch((err) => viewError(overviewPanel, "the overview", err));
  }
  function drawTimeline() {
    const t = state.timeline;
    if (!t || t.n === 0) return emptyPlot(timelinePanel, "No calls to show.");
    if (!state.rows.length) return emptyPlot(timelinePanel, "No call matches the filter.");
    const fig = timelineFigure(t, windowRows(), meta(), figureOptions());
    const idle = formatDuration(meta().ttl_seconds ?? null);
    const folded = state.showCostless ? 0 : foldedDrifts(t, state.rows);
    const foldNote = folded ? ` (+${plural(folded, "costless drift")} folded: tick “costless drifts” to show)` : "";
    timelinePanel.note.textContent = `matched prefix vs new tokens per call; dotted: cache read the provider reported; × drift${foldNote}, ▼ miss, ▲ idle > ${idle}; click a call`;
    drawInto(timelinePanel, fig, (point) => select(callOf(point) ?? -1), 0);
  }
  function drawShape() {
    const t = state.timeline;
    if (!t || t.n === 0 || !state.shape) return emptyPlot(shapePanel, state.shape ? "No calls to show." : "No shape data.");
    if (!state.rows.length) return emptyPlot(shapePanel, "No call matches the filter.");
    const rows = windowRows();
    const fig = shapeFigure(state.shape, t, rows, figureOptions());
    const posToCall = (/** @type {number} */ y) => {
      const r = state.rows[Math.round(y)];
      return r === undefined ? -1 : Number(t.call[r]);
    };
    drawInto(shapePanel, fig, (point) => select(posToCall(Number(point.y))), 1);
  }
  function drawCosts() {
    const m = meta();
    const t = state.timeline;
    const filtered = state.thread >= 0 || state.cause !== "" || state.search !== "";
    targetBox.replaceChildren(targetFacts(doc, m, filtered && t && state.costs ? { costs: state.costs, timeline: t, rows: state.rows } : null));
    compareBox.replaceChildren(compareTable(doc, m));
    if (!t || !state.costs || state.costs.n === 0 || !m.target) {
      return emptyPlot(providersPanel, m.notice ? String(m.notice) : m.target ? "No per-call costs." : "No provider target is simulated.");
    }
    const rows = windowRows();
    if (!hasCosts(state.costs, t, rows)) {
      return emptyPlot(providersPanel, noCostMessage(m));
    }
    const fig = costFigure(state.costs, t, rows, figureOptions());
    drawInto(providersPanel, fig, (point) => select(callOf(point) ?? -1), 2);
  }
  function drawDetail() {
    try {
      renderDetail(doc, detailPanel.body, {
        selected: selected(),
        detail: model.get("_detail") ?? null,
        timeline: state.timeline,
        costs: state.costs,
        meta: meta(),
      });
      detailPanel.error.textContent = "";
    } catch (err) {
      viewError(detailPanel, "the drift detail", err);
    }
    const t = state.timeline;
    for (const b of navButtons) b.button.disabled = !t || b.target() === null;
  }
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
    header.setStatus(String(model.get("status") ?? ""));
  }
  function drawAll() {
    drawHeader();
    guarded(overviewPanel, "the overview", drawOverview);
    guarded(timelinePanel, "the timeline", drawTimeline);
    guarded(shapePanel, "the cache shape map", drawShape);
    guarded(providersPanel, "the provider costs", drawCosts);
    drawDetail();
  }

  /** @param {PanelParts} p @param {string} what @param {() => void} fn */
  function guarded(p, what, fn) {
    try {
      p.error.textContent = "";
      fn();
    } catch (err) {
      viewError(p, what, err);
    }
  }
  /**
   * @param {PanelParts} p
   * @param {import("./lib/traces.js").Figure} fig
   * @param {(point: any) => void} onClick
   * @param {number} stagger first draw: paint the charts above first (see plot.draw)
   */
  function drawInto(p, fig, onClick, stagger) {
    p.empty.textContent = "";
    p.plot.hidden = false;
    plot.draw(p.plot, fig, onClick, stagger).catch((err) => viewError(p, "a chart", err));
  }
  /** @param {PanelParts} p @param {string} message */
  function emptyPlot(p, message) {
    p.empty.textContent = message;
    p.plot.hidden = true;
  }
  function updateSelection() {
    const call = selected();
    header.setSelection(call);
    const pos = selectedPosition();
    if (pos >= 0 && (pos < state.window.start || pos >= state.window.end)) {
      // selected from Python, the nav buttons or the report: bring it into the window
      state.window = windowShowing(state.window, pos, state.rows.length);
      drawAll();
      return;
    }
    for (const [p, along] of /** @type {const} */ ([[timelinePanel, "x"], [shapePanel, "y"], [providersPanel, "x"]])) {
      if (!p.plot.hidden) plot.setShapes(p.plot, selectionShapes(pos, along)).catch((err) => viewError(p, "the selection", err));
    }
    if (!overviewPanel.section.hidden && !overviewPanel.plot.hidden) {
      plot.setShapes(overviewPanel.plot, [windowShape(state.window)]).catch(() => undefined);
    }
    drawDetail();
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
    guarded(shapePanel, "the cache shape map", drawShape);
  });
  on("change:_costs", () => {
    state.costs = load("_costs", decodeCosts);
    showDataErrors();
    drawHeader();
    guarded(providersPanel, "the provider costs", drawCosts);
    drawDetail();
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
    appendTables(buffers);
  });
  /** @param {DataView[]} buffers */
  function appendTables(buffers) {
    if (state.timeline) state.timeline = appendRows(state.timeline, decodeTimeline(buffers[0]));
    if (state.shape) state.shape = appendRows(state.shape, decodeShape(buffers[1]));
    if (state.costs) state.costs = appendRows(state.costs, decodeCosts(buffers[2]));
  }
  on("change:selected_call", updateSelection);
  on("change:_detail", drawDetail);
  on("change:status", () => header.setStatus(String(model.get("status") ?? "")));

  // ---- first render ------------------------------------------------------------------
  state.timeline = load("_timeline", decodeTimeline);
  state.shape = load("_shape", decodeShape);
  state.costs = load("_costs", decodeCosts);
  for (const [table, trait, decode] of /** @type {const} */ ([
    ["timeline", "_timeline", decodeTimeline],
    ["shape", "_shape", decodeShape],
    ["costs", "_costs", decodeCosts],
  ])) {
    for (const more of APPENDED.get(model.get(trait)) ?? []) {
      const rows = /** @type {any} */ (state[table]);
      if (rows) state[table] = appendRows(rows, /** @type {any} */ (decode)(more));
    }
  }
  showDataErrors();
  updateRows();
  drawAll();

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
        for (const p of [overviewPanel, timelinePanel, shapePanel, providersPanel]) {
          if (!p.plot.hidden) plot.resize(p.plot).catch(() => undefined);
        }
      });
    });
    observer.observe(root);
  }

  return () => {
    observer?.disconnect();
    if (typeof model.off === "function") for (const [event, fn] of listeners) model.off(event, fn);
    for (const p of [overviewPanel, timelinePanel, shapePanel, providersPanel]) {
      try {
        plot.purge(p.plot);
      } catch {
        // already gone
      }
    }
    root.remove();
  };
}

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
function panel(doc, title, note, withPlot = true) {
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
 * Why the cost chart is empty, naming the models and what to do.
 *
 * @param {import("./lib/data.js").Meta} meta
 */
export function noCostMessage(meta) {
  const target = meta.target;
  const provider = target ? String(target.provider) : "the target";
  if (provider === "vllm" || provider === "sglang") {
    return `${provider} is a self-hosted engine: it has no prices, so there is no cost to chart. The table above shows the prefill tokens its prefix cache would save.`;
  }
  const models = meta.unpriced_models?.length ? meta.unpriced_models.join(", ") : target?.model ? String(target.model) : "the recorded models";
  const pick = meta.models?.length ? ` Pick a priced ${provider} model (e.g. ${meta.models.slice(0, 3).join(", ")}).` : " Pick a model with a price.";
  return `No ${provider} price for ${models}, so no cost to chart.${pick}`;
}

/**
 * @param {PanelParts} p
 * @param {string} what
 * @param {unknown} err
 */
function viewError(p, what, err) {
  console.error(`cacheviz inspector: could not draw ${what}`, err);
  p.error.textContent = `Could not draw ${what}: ${errorText(err)}. Details are in the browser console.`;
}

/**
 * @param {Document} doc
 * @param {string} text
 * @param {string} title
 * @param {() => number | null} target
 */
function navButton(doc, text, title, target) {
  const button = h(doc, "button", { className: "cacheviz-button", text, title, attrs: { type: "button" } });
  return { button, target };
}

