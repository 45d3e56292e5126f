// @vitest-environment happy-dom
// The live inspector's "append" message (cacheviz/ui/live.py): new calls' rows are appended
// to the decoded tables and the views redrawn, as if the whole session had been sent.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

vi.mock("../src/lib/plot.js", () => ({
  draw: vi.fn(() => Promise.resolve()),
  setShapes: vi.fn(() => Promise.resolve()),
  resize: vi.fn(() => Promise.resolve()),
  purge: vi.fn(),
}));

import { bool, float64, int8, int32, tableFromArrays, tableFromIPC, tableToIPC, utf8 } from "@uwdata/flechette";
import widget from "../src/inspector.js";
import { render } from "../src/render.js";
import * as plot from "../src/lib/plot.js";
import { appendRows, decodeTimeline } from "../src/lib/data.js";
import { createMemoryModel } from "../src/lib/memory-model.js";
import { dataView, makeSession } from "./fixtures/session.js";

const TYPES = {
  timeline: {
    call: int32(), ts_ms: float64(), thread: int32(), input_tokens: int32(), prefix_tokens: int32(),
    new_tokens: int32(), drift: bool(), cause: int32(), label: utf8(), tokens_lost: int32(), idle_gap: bool(),
  },
  shape: { call: int32(), start: int32(), end: int32(), status: int8() },
  costs: { call: int32(), cost_usd: float64(), ideal_usd: float64(), cache_read_tokens: int32(), cache_write_tokens: int32(), uncached_tokens: int32() },
};

/** Rows of an Arrow IPC table whose call is at least `from`, as Arrow IPC (what Python sends). */
function rowsFrom(bytes, from, types) {
  const columns = tableFromIPC(bytes).toColumns();
  const keep = Array.from(columns.call, (call) => call >= from);
  const picked = Object.fromEntries(
    Object.entries(columns).map(([key, values]) => [key, Array.from(values).filter((_, i) => keep[i])]),
  );
  return dataView(tableToIPC(tableFromArrays(picked, { types }), { format: "stream" }));
}

function modelOf(session) {
  const listeners = {};
  const model = createMemoryModel({
    _timeline: dataView(session.timeline),
    _shape: dataView(session.shape),
    _costs: dataView(session.costs),
    meta: session.meta,
    selected_call: -1,
    _detail: {},
    status: "",
  });
  const on = model.on.bind(model);
  model.on = (event, callback) => {
    (listeners[event] ??= []).push(callback);
    on(event, callback);
  };
  model.emit = (event, ...args) => (listeners[event] ?? []).forEach((callback) => callback(...args));
  widget.initialize({ model }); // once per model, as anywidget does
  return model;
}

let el;
beforeEach(() => {
  el = document.createElement("div");
  document.body.append(el);
  vi.mocked(plot.draw).mockClear();
});
afterEach(() => el.remove());

describe("append", () => {
  it("appendRows puts the new rows after the old ones and re-indexes them", () => {
    const whole = makeSession({ calls: 12 });
    const head = decodeTimeline(dataView(makeSession({ calls: 8 }).timeline));
    const tail = decodeTimeline(rowsFrom(whole.timeline, 8, TYPES.timeline));
    const joined = appendRows(head, tail);
    const direct = decodeTimeline(dataView(whole.timeline));
    expect(joined.n).toBe(12);
    expect(Array.from(joined.input)).toEqual(Array.from(direct.input));
    expect(Array.from(joined.label)).toEqual(Array.from(direct.label));
    expect(joined.rowOf.get(11)).toBe(11);
  });

  it("draws what a full render of the grown session draws, without resending the old rows", async () => {
    const whole = makeSession({ calls: 40, threads: 3 });
    render({ model: modelOf(whole), el });
    const direct = vi.mocked(plot.draw).mock.calls.map((call) => call[1]);
    el.replaceChildren();
    vi.mocked(plot.draw).mockClear();

    const model = modelOf(makeSession({ calls: 30, threads: 3 }));
    render({ model, el });
    expect(el.querySelector(".cacheviz-header").textContent).toContain("30 calls");
    vi.mocked(plot.draw).mockClear();
    const buffers = [
      rowsFrom(whole.timeline, 30, TYPES.timeline),
      rowsFrom(whole.shape, 30, TYPES.shape),
      rowsFrom(whole.costs, 30, TYPES.costs),
    ];
    model.emit("msg:custom", { type: "append", meta: whole.meta }, buffers);
    await Promise.resolve(); // the new meta is set after every view appended
    const appended = vi.mocked(plot.draw).mock.calls.map((call) => call[1]);
    expect(appended).toHaveLength(3);
    expect(appended).toEqual(direct);
    expect(el.querySelector(".cacheviz-header").textContent).toContain("40 calls");
  });

  it("a view drawn after the append shows the appended rows; a replaced table drops them", async () => {
    const whole = makeSession({ calls: 40, threads: 3 });
    render({ model: modelOf(whole), el });
    const direct = vi.mocked(plot.draw).mock.calls.map((call) => call[1]);
    el.replaceChildren();

    const part = makeSession({ calls: 30, threads: 3 });
    const model = modelOf(part); // no view yet when the message comes
    const buffers = [
      rowsFrom(whole.timeline, 30, TYPES.timeline),
      rowsFrom(whole.shape, 30, TYPES.shape),
      rowsFrom(whole.costs, 30, TYPES.costs),
    ];
    model.emit("msg:custom", { type: "append", meta: whole.meta }, buffers);
    await Promise.resolve();
    vi.mocked(plot.draw).mockClear();
    render({ model, el });
    expect(vi.mocked(plot.draw).mock.calls.map((call) => call[1])).toEqual(direct);

    // Python replaces the tables (a call sorted before others): the old appends are gone
    el.replaceChildren();
    model.set("_timeline", dataView(whole.timeline));
    model.set("_shape", dataView(whole.shape));
    model.set("_costs", dataView(whole.costs));
    vi.mocked(plot.draw).mockClear();
    render({ model, el });
    expect(vi.mocked(plot.draw).mock.calls.map((call) => call[1])).toEqual(direct);
  });

  it("ignores other custom messages", () => {
    const model = modelOf(makeSession({ calls: 10 }));
    render({ model, el });
    vi.mocked(plot.draw).mockClear();
    model.emit("msg:custom", { type: "something-else" }, []);
    expect(plot.draw).not.toHaveBeenCalled();
  });
});
