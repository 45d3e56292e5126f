// The loader (src/lib/loader.js, built from src/loader.js), every widget's `_esm`: the front end is evaluated once per
// page, taken from the model's own text or asked of the kernel once, and each widget is
// handed to it (cacheviz/ui/_frontend.py is the Python side).
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import loader, { ASK_AGAIN_MS, LOADING, REGISTRY, bytesOf, frontEnd } from "../src/lib/loader.js";

const encoder = new TextEncoder();
/** A front end as the kernel sends it: an ES module whose default export records its calls. */
function frontEndText(tag) {
  return encoder.encode(`
    const calls = (globalThis.__loaderTestCalls ??= []);
    calls.push(["evaluated", ${JSON.stringify(tag)}]);
    export default {
      initialize({ model }) {
        model.on("msg:custom", (msg) => calls.push(["initialize got", msg.type]));
        calls.push(["initialize", model.get("name")]);
      },
      render({ model, el }) { el.textContent = "drawn " + model.get("name"); calls.push(["render", model.get("name")]); },
    };`);
}

/** A model with the anywidget API; `sent` holds its custom messages to the kernel. */
function modelOf(traits) {
  const handlers = new Set();
  return {
    sent: [],
    get: (name) => traits[name],
    send(content) { this.sent.push(content); },
    on: (event, handler) => event === "msg:custom" && handlers.add(handler),
    off: (event, handler) => handlers.delete(handler),
    /** The kernel's custom message to this model. */
    receive: (msg, buffers) => [...handlers].forEach((h) => h(msg, buffers)),
    handlers,
  };
}

const el = () => ({ textContent: "" });

beforeEach(() => {
  delete globalThis[REGISTRY];
  globalThis.__loaderTestCalls = [];
  // Node imports data: URLs, not blob: ones: the same bytes, another URL
  vi.spyOn(URL, "createObjectURL").mockImplementation(
    (blob) => `data:text/javascript;base64,${Buffer.from(blob.bytes).toString("base64")}`,
  );
  vi.spyOn(URL, "revokeObjectURL").mockImplementation(() => {});
  vi.stubGlobal(
    "Blob",
    class {
      constructor(parts) {
        this.bytes = parts[0];
      }
    },
  );
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

describe("bytesOf", () => {
  it("reads what front ends hand over for bytes", () => {
    const raw = new Uint8Array([1, 2, 3, 4]);
    expect(Array.from(bytesOf(new DataView(raw.buffer, 1, 2)))).toEqual([2, 3]);
    expect(Array.from(bytesOf(raw.buffer))).toEqual([1, 2, 3, 4]);
    expect(bytesOf(raw)).toBe(raw);
    expect(bytesOf(undefined).length).toBe(0);
  });
});

describe("the loader", () => {
  it("evaluates the model's own text once, and widgets without it use the page's copy", async () => {
    const first = modelOf({ _shared_esm_id: "v1", _shared_esm: new DataView(frontEndText("v1").buffer), name: "a" });
    const second = modelOf({ _shared_esm_id: "v1", _shared_esm: new DataView(new ArrayBuffer(0)), name: "b" });
    await loader.initialize({ model: first });
    const one = el();
    await loader.render({ model: first, el: one });
    await loader.initialize({ model: second });
    const two = el();
    await loader.render({ model: second, el: two });
    expect(one.textContent).toBe("drawn a");
    expect(two.textContent).toBe("drawn b");
    expect(globalThis.__loaderTestCalls.filter(([what]) => what === "evaluated")).toEqual([["evaluated", "v1"]]);
    expect(first.sent).toEqual([]);
    expect(second.sent).toEqual([]); // nothing asked: the page has it
  });

  it("asks the kernel once when the page lacks it, and shows that it waits", async () => {
    const models = [1, 2, 3].map((i) => modelOf({ _shared_esm_id: "v2", _shared_esm: undefined, name: `m${i}` }));
    const els = models.map(el);
    const drawn = models.map((model, i) => loader.render({ model, el: els[i] }));
    expect(els.map((e) => e.textContent)).toEqual([LOADING, LOADING, LOADING]);
    expect(models.map((m) => m.sent)).toEqual([[{ type: "shared_esm" }], [], []]);
    // another front end's answer (an old id) is not taken
    models[0].receive({ type: "shared_esm", id: "v0" }, [new DataView(frontEndText("v0").buffer)]);
    models[0].receive({ type: "shared_esm", id: "v2" }, [new DataView(frontEndText("v2").buffer)]);
    await Promise.all(drawn);
    expect(els.map((e) => e.textContent)).toEqual(["drawn m1", "drawn m2", "drawn m3"]);
    expect(globalThis.__loaderTestCalls.filter(([what]) => what === "evaluated")).toEqual([["evaluated", "v2"]]);
    expect(models[0].handlers.size).toBe(0); // its answer handler is gone
  });

  it("asks again through another widget when no answer comes", async () => {
    vi.useFakeTimers();
    const gone = modelOf({ _shared_esm_id: "v3", name: "gone" });
    const other = modelOf({ _shared_esm_id: "v3", name: "other" });
    frontEnd(gone);
    const waiting = frontEnd(other);
    expect(other.sent).toEqual([]);
    vi.advanceTimersByTime(ASK_AGAIN_MS);
    expect(other.sent).toEqual([{ type: "shared_esm" }]);
    vi.useRealTimers();
    other.receive({ type: "shared_esm", id: "v3" }, [frontEndText("v3")]);
    await waiting;
  });

  it("a widget carrying the text does not wait for an unanswered question", async () => {
    const asking = modelOf({ _shared_esm_id: "v4", name: "asking" });
    const waiting = frontEnd(asking);
    const carrying = modelOf({ _shared_esm_id: "v4", _shared_esm: frontEndText("v4"), name: "carrying" });
    const e = el();
    await loader.render({ model: carrying, el: e });
    await waiting;
    expect(e.textContent).toBe("drawn carrying");
  });

  it("returns from initialize before the kernel answers, and hands the front end the messages that came meanwhile", async () => {
    // anywidget holds a model's messages until its initialize returns: waiting there for
    // the answer would wait forever
    const model = modelOf({ _shared_esm_id: "v5", name: "live" });
    await loader.initialize({ model });
    expect(model.sent).toEqual([{ type: "shared_esm" }]);
    model.receive({ type: "append", meta: {} }, []);
    model.receive({ type: "shared_esm", id: "v5" }, [frontEndText("v5")]);
    const e = el();
    await loader.render({ model, el: e });
    const calls = globalThis.__loaderTestCalls;
    expect(calls).toContainEqual(["initialize", "live"]);
    expect(calls).toContainEqual(["initialize got", "append"]); // the append, replayed
    expect(e.textContent).toBe("drawn live");
    expect(calls.at(-1)).toEqual(["render", "live"]); // after the model's initialize
  });

  it("initialize waits for a front end at hand, so the first render finds the model ready", async () => {
    const model = modelOf({ _shared_esm_id: "v7", _shared_esm: frontEndText("v7"), name: "inline" });
    await loader.initialize({ model });
    expect(globalThis.__loaderTestCalls).toContainEqual(["initialize", "inline"]);
    expect(model.sent).toEqual([]);
  });

  it("says so, and lets a later widget try again, when the front end does not evaluate", async () => {
    const model = modelOf({ _shared_esm_id: "v6", _shared_esm: encoder.encode("this is not javascript ("), name: "x" });
    const e = el();
    await expect(loader.render({ model, el: e })).rejects.toThrow();
    expect(e.textContent).toMatch(/^cacheviz: the front end did not load/);
    expect(globalThis[REGISTRY].v6).toBeUndefined();
  });
});
