// @ts-check
/**
 * An in-memory stand-in for an anywidget model, for the kernel-less HTML report (and
 * tests): get/set/on/off/save_changes, with Backbone's "change:<name>" events fired
 * only when a value actually changes.
 */
import { base64ToBytes } from "./arrow.js";

/**
 * @typedef {object} MemoryModel
 * @property {(name: string) => any} get
 * @property {(name: string, value: any) => void} set
 * @property {(event: string, callback: (...args: any[]) => void) => void} on
 * @property {(event?: string, callback?: (...args: any[]) => void) => void} off
 * @property {() => void} save_changes
 * @property {(content: unknown) => void} send
 */

/**
 * @param {Record<string, any>} initial
 * @param {{ afterSet?: (name: string, value: any, model: MemoryModel) => void }} [hooks]
 * @returns {MemoryModel}
 */
export function createMemoryModel(initial, hooks = {}) {
  /** @type {Map<string, any>} */
  const state = new Map(Object.entries(initial));
  /** @type {Map<string, Set<(...args: any[]) => void>>} */
  const listeners = new Map();
  /** @type {MemoryModel} */
  const model = {
    get: (name) => state.get(name),
    set(name, value) {
      const changed = !Object.is(state.get(name), value);
      state.set(name, value);
      if (changed) {
        for (const callback of [...(listeners.get(`change:${name}`) ?? [])]) callback(model, value);
      }
      hooks.afterSet?.(name, value, model);
    },
    on(event, callback) {
      let set = listeners.get(event);
      if (!set) listeners.set(event, (set = new Set()));
      set.add(callback);
    },
    off(event, callback) {
      if (event === undefined) listeners.clear();
      else if (callback === undefined) listeners.delete(event);
      else listeners.get(event)?.delete(callback);
    },
    save_changes() {},
    send() {},
  };
  return model;
}

/**
 * The report's data document (the JSON in `<script id="cacheviz-data">`).
 *
 * @typedef {object} ReportData
 * @property {string} timeline base64 Arrow IPC
 * @property {string} shape base64 Arrow IPC
 * @property {string} costs base64 Arrow IPC
 * @property {import("./data.js").Meta} meta
 * @property {Record<string, Record<string, any>>} [details] drift detail per call ("12": {...})
 * @property {number} [selected_call] initially selected call (default: the first drift, else none)
 */

/** What the detail view says for a call the report has no detail for. */
export const NO_DETAIL =
  "No precomputed detail for this call: the HTML report includes the drift detail of drift calls only.";

/**
 * A model holding a report's data: selecting a call sets `_detail` from `details`, or a
 * "no precomputed detail" message for calls without one.
 *
 * @param {ReportData} data
 * @returns {MemoryModel}
 */
export function reportModel(data) {
  if (!data || typeof data !== "object") throw new Error("the report's data is not a JSON object");
  const details = data.details && typeof data.details === "object" ? data.details : {};
  /** @param {number} call */
  const detailFor = (call) => {
    if (!(call >= 0)) return {};
    const found = Object.prototype.hasOwnProperty.call(details, String(call)) ? details[String(call)] : null;
    return found ? { ...found, call } : { call, drift: false, message: NO_DETAIL };
  };
  const first = Number.isInteger(data.selected_call) ? /** @type {number} */ (data.selected_call) : firstDrift(details);
  return createMemoryModel(
    {
      _timeline: toView(data.timeline),
      _shape: toView(data.shape),
      _costs: toView(data.costs),
      meta: data.meta ?? {},
      selected_call: first,
      _detail: detailFor(first),
      status: "",
    },
    {
      afterSet(name, value, model) {
        if (name === "selected_call") model.set("_detail", detailFor(Number(value)));
      },
    },
  );
}

/**
 * The lowest call with a drift detail, or -1.
 *
 * @param {Record<string, Record<string, any>>} details
 */
export function firstDrift(details) {
  let best = -1;
  for (const [key, value] of Object.entries(details)) {
    const call = Number(key);
    if (Number.isInteger(call) && call >= 0 && value?.drift && (best < 0 || call < best)) best = call;
  }
  return best;
}

/**
 * Base64 (or nothing) as the DataView a binary trait arrives as.
 *
 * @param {unknown} value
 * @returns {DataView}
 */
function toView(value) {
  const bytes = typeof value === "string" ? base64ToBytes(value) : new Uint8Array(0);
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
