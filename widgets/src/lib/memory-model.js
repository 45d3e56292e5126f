// @ts-check
/**
 * An in-memory stand-in for an anywidget model, for the kernel-less HTML report (and
 * tests): get/set/on/off/save_changes, with Backbone's "change:<name>" events fired
 * only when a value actually changes.
 */
import { base64ToBytes } from "./arrow.js";
import { searchContents } from "./search.js";

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
 * @property {Record<string, Record<string, any>>} [details] detail per call ("12": {...})
 * @property {string} [details_gz] gzip + base64 of {calls: {"12": detail}, texts: {hash: text}}
 * @property {number} [selected_call] initially selected call (default: the first drift, else none)
 */

/** What the detail view says for a call the report has no detail for. */
export const NO_DETAIL = "No precomputed detail for this call in this report.";

/**
 * Gzip-compressed, base64-encoded JSON, inflated with the browser's DecompressionStream.
 *
 * @param {string} text
 * @returns {Promise<any>}
 */
export async function inflateJson(text) {
  const bytes = base64ToBytes(text);
  const stream = new Blob([/** @type {Uint8Array<ArrayBuffer>} */ (bytes)]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text());
}

/**
 * A detail with the texts of its content items filled in from the shared `texts`.
 *
 * @param {Record<string, any>} detail
 * @param {Record<string, string>} texts
 */
function withTexts(detail, texts) {
  const content = detail.content;
  if (!content || typeof content !== "object") return detail;
  const fill = (/** @type {any[]} */ items) =>
    Array.isArray(items) ? items.map((item) => (item && item.text === undefined && typeof item.hash === "string" ? { ...item, text: texts[item.hash] ?? "" } : item)) : [];
  return { ...detail, content: { ...content, sent: fill(content.sent), context: fill(content.context) } };
}

/**
 * A model holding a report's data: selecting a call sets `_detail` from the details (every
 * call's, gzip-compressed in `details_gz`, inflated once after the first draw; or plain
 * `details`), or a message for calls without one.
 *
 * @param {ReportData} data
 * @returns {MemoryModel}
 */
export function reportModel(data) {
  if (!data || typeof data !== "object") throw new Error("the report's data is not a JSON object");
  /** @type {Record<string, Record<string, any>>} */
  let details = data.details && typeof data.details === "object" ? data.details : {};
  /** @type {Record<string, string>} */
  let texts = {};
  let pending = typeof data.details_gz === "string" && data.details_gz.length > 0;
  /** @param {number} call */
  const detailFor = (call) => {
    if (!(call >= 0)) return {};
    if (pending) return {}; // "Loading the detail…" until inflated
    const found = Object.prototype.hasOwnProperty.call(details, String(call)) ? details[String(call)] : null;
    return found ? withTexts({ ...found, call }, texts) : { call, drift: false, message: NO_DETAIL };
  };
  const first = Number.isInteger(data.selected_call) ? /** @type {number} */ (data.selected_call) : firstDrift(details);
  const model = createMemoryModel(
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
      afterSet(name, value, m) {
        if (name === "selected_call") m.set("_detail", detailFor(Number(value)));
      },
    },
  );
  // the full-text search, as the notebook's kernel answers it (`_found`)
  /** @type {string | null} */
  let searchLater = null;
  model.send = (/** @type {any} */ content) => {
    if (content?.type !== "search") return;
    const text = String(content.text ?? "");
    if (pending) {
      searchLater = text; // answered once the details are inflated
      return;
    }
    model.set("_found", searchContents(details, texts, text));
  };
  // inflate once the charts are drawn (the browser is idle), not in their way
  const later = (/** @type {() => void} */ fn) =>
    typeof requestIdleCallback === "function" ? requestIdleCallback(fn, { timeout: 1000 }) : setTimeout(fn, 0);
  if (pending) {
    new Promise((resolve) => later(() => resolve(undefined)))
      .then(() => inflateJson(/** @type {string} */ (data.details_gz)))
      .then((inflated) => {
        details = inflated?.calls ?? {};
        texts = inflated?.texts ?? {};
      })
      .catch((err) => {
        console.error("cacheviz report: could not read the call details", err);
        model.set("status", `could not read the call details: ${err instanceof Error ? err.message : err}`);
      })
      .finally(() => {
        pending = false;
        model.set("_detail", detailFor(Number(model.get("selected_call"))));
        if (searchLater !== null) model.send({ type: "search", text: searchLater });
      });
  }
  return model;
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
