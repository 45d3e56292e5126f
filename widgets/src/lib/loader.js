// @ts-check
/**
 * The `_esm` of every cacheviz widget: a few hundred bytes that load the front end (plotly
 * and the inspector, ~1.3 MB: `cacheviz/static/__init__.py`'s `bundle("inspector.js")`)
 * once per page and hand each widget to it.
 *
 * The front end is a module kept on `globalThis` under its id (a digest of its text, so a
 * page that outlives a kernel never runs an older build for a newer kernel). A widget
 * whose page does not have it yet takes it from its own model (the Python side
 * `cacheviz/ui/_frontend.py`):
 *
 * | trait            | dir    | contents                                                    |
 * |------------------|--------|-------------------------------------------------------------|
 * | `_shared_esm_id` | Py→JS  | the front end's id                                          |
 * | `_shared_esm`    | Py→JS  | its text (bytes), on the first widget of a kernel only      |
 *
 * or, when the model does not carry it, asks the kernel with a custom message
 * `{type: "shared_esm"}`, answered by `{type: "shared_esm", id}` with the text as the one
 * buffer. The text evaluated is the package's own build, never anything from a
 * transcript. Only the anywidget API is used (`get`, `send`, `on`/`off("msg:custom")`), so
 * every front end that runs anywidgets runs this (JupyterLab, Notebook 7, VS Code, marimo).
 */

/** @typedef {(msg: any, buffers?: any[]) => void} Handler */
/**
 * @typedef {{
 *   get(name: string): any,
 *   send(content: any, callbacks?: any, buffers?: any[]): void,
 *   on(name: string, handler: Handler): void,
 *   off(name: string, handler?: Handler): void,
 * }} ModelLike
 */
/** @typedef {{ initialize?: (ctx: any) => any, render: (ctx: any) => any }} Widget */
/**
 * @typedef {{
 *   promise: Promise<Widget>,
 *   resolve: (text: Uint8Array) => void,
 *   settled: boolean,
 *   asked: number,
 * }} Entry
 */

/** The page-wide registry: front-end id → its entry. */
export const REGISTRY = "__cachevizFrontEnds";
export const LOADING = "cacheviz: loading the front end from the kernel…";

/** @returns {Record<string, Entry>} */
function registry() {
  const root = /** @type {any} */ (globalThis);
  return (root[REGISTRY] ??= {});
}

/**
 * A synced bytes trait or a message buffer as bytes (front ends hand over a DataView, an
 * ArrayBuffer or a typed array).
 *
 * @param {unknown} value
 * @returns {Uint8Array}
 */
export function bytesOf(value) {
  if (value instanceof Uint8Array) return value;
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  return new Uint8Array(0);
}

/**
 * Evaluate the front end's text as an ES module; its default export is the widget.
 *
 * @param {Uint8Array} text
 * @returns {Promise<Widget>}
 */
async function evaluate(text) {
  const url = URL.createObjectURL(new Blob([/** @type {BlobPart} */ (text)], { type: "text/javascript" }));
  try {
    const module = await import(/* @vite-ignore */ url);
    return module.default;
  } finally {
    URL.revokeObjectURL(url);
  }
}

/**
 * The entry of front end `id`, made on first use: a promise that the first text given to
 * `resolve` (the model's own, or the kernel's answer) settles.
 *
 * @param {string} id
 * @returns {Entry}
 */
function entryOf(id) {
  const known = registry();
  const found = known[id];
  if (found) return found;
  /** @type {(text: Uint8Array) => void} */
  let resolve = () => {};
  /** @type {Entry} */
  const entry = {
    promise: new Promise((done, fail) => {
      resolve = (text) => {
        if (entry.settled) return;
        entry.settled = true;
        evaluate(text).then(done, (err) => {
          // a failed evaluation is not kept: the next widget tries again
          if (known[id] === entry) delete known[id];
          fail(err);
        });
      };
    }),
    resolve: (text) => resolve(text),
    settled: false,
    asked: -Infinity,
  };
  known[id] = entry;
  return entry;
}

/** Milliseconds after which another widget asks again (the first one's model may be gone). */
export const ASK_AGAIN_MS = 20_000;

/**
 * Ask the kernel for the front end through `model`: one question per page (another after
 * `ASK_AGAIN_MS` without an answer); a model that carries the text never asks.
 *
 * @param {ModelLike} model
 * @param {Entry} entry
 * @param {string} id
 */
function ask(model, entry, id) {
  if (entry.settled) return;
  const now = Date.now();
  const wait = entry.asked + ASK_AGAIN_MS - now;
  if (wait > 0) {
    setTimeout(() => ask(model, entry, id), wait);
    return;
  }
  entry.asked = now;
  /** @type {Handler} */
  const handler = (msg, buffers) => {
    if (msg?.type !== "shared_esm" || msg.id !== id) return;
    const text = bytesOf(buffers?.[0]);
    if (!text.length) return;
    model.off("msg:custom", handler);
    entry.resolve(text);
  };
  model.on("msg:custom", handler);
  model.send({ type: "shared_esm" });
}

/**
 * The front end `model` names, from the page if it has it, else from the model's own
 * text, else asked of the kernel.
 *
 * @param {ModelLike} model
 * @returns {Promise<Widget>}
 */
export function frontEnd(model) {
  const id = String(model.get("_shared_esm_id") ?? "");
  const entry = entryOf(id);
  if (!entry.settled) {
    const text = bytesOf(model.get("_shared_esm"));
    if (text.length) entry.resolve(text);
    else ask(model, entry, id);
  }
  return entry.promise;
}

/**
 * `model` for the front end's `initialize`: a handler of custom messages it adds is first
 * given those that arrived while the front end loaded (the live inspector's appends).
 *
 * @param {ModelLike} model
 * @param {[any, any[] | undefined][]} early
 * @returns {ModelLike}
 */
function replaying(model, early) {
  return new Proxy(model, {
    get(target, name) {
      if (name === "on") {
        return (/** @type {string} */ event, /** @type {Handler} */ handler) => {
          target.on(event, handler);
          if (event === "msg:custom") for (const [msg, buffers] of early) handler(msg, buffers);
        };
      }
      const value = Reflect.get(target, name);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * Whether the front end `model` names is at hand without the kernel: on the page already,
 * or in the model's own state.
 *
 * @param {ModelLike} model
 */
function atHand(model) {
  const entry = registry()[String(model.get("_shared_esm_id") ?? "")];
  return Boolean(entry?.settled) || bytesOf(model.get("_shared_esm")).length > 0;
}

/** @type {Widget} */
export default {
  /**
   * Give the model to the front end's `initialize` once it is loaded. anywidget holds a
   * model's messages until its `initialize` returns, the kernel's answer included: when
   * the front end must be asked for, this returns at once, keeps the messages that come
   * before the front end (the answer, a live inspector's appends) and hands them to the
   * handlers the front end's `initialize` adds.
   */
  async initialize(ctx) {
    /** @type {[any, any[] | undefined][]} */
    const early = [];
    /** @type {Handler} */
    const keep = (msg, buffers) => {
      early.push([msg, buffers]);
    };
    ctx.model.on("msg:custom", keep);
    /** @type {unknown} */
    let cleanup;
    const ready = frontEnd(ctx.model).then(
      (widget) => {
        ctx.model.off("msg:custom", keep);
        cleanup = widget.initialize?.({ ...ctx, model: replaying(ctx.model, early) });
        return cleanup;
      },
      (err) => {
        ctx.model.off("msg:custom", keep);
        throw err;
      },
    );
    if (atHand(ctx.model)) return ready;
    ready.catch(() => {}); // render says why
    return () => {
      if (typeof cleanup === "function") cleanup();
    };
  },
  async render(ctx) {
    const pending = frontEnd(ctx.model);
    if (!atHand(ctx.model)) ctx.el.textContent = LOADING;
    let widget;
    try {
      widget = await pending;
    } catch (err) {
      ctx.el.textContent = `cacheviz: the front end did not load (${err}). Re-run the cell.`;
      throw err;
    }
    if (ctx.el.textContent === LOADING) ctx.el.textContent = "";
    return widget.render(ctx);
  },
};
