// @vitest-environment happy-dom
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

vi.mock("../src/lib/plot.js", () => ({
  draw: vi.fn(() => Promise.resolve()),
  setShapes: vi.fn(() => Promise.resolve()),
  resize: vi.fn(() => Promise.resolve()),
  purge: vi.fn(),
}));

import widget from "../src/inspector.js";
import { render } from "../src/render.js";
import * as plot from "../src/lib/plot.js";
import { createMemoryModel } from "../src/lib/memory-model.js";
import { PAYLOADS, dataView, makeSession } from "./fixtures/session.js";

/** A model as anywidget gives it (DataViews), with spies on set/save_changes. */
function widgetModel(session, extra = {}) {
  const model = createMemoryModel({
    _timeline: dataView(session.timeline),
    _shape: dataView(session.shape),
    _costs: dataView(session.costs),
    meta: session.meta,
    selected_call: -1,
    _detail: {},
    status: "",
    ...extra,
  });
  vi.spyOn(model, "set");
  vi.spyOn(model, "save_changes");
  return model;
}

/** Elements that markup in the data could have smuggled in (Plotly is mocked: no SVG). */
const SMUGGLED = "img, script, svg:not(.cacheviz-info), iframe, a, object, embed"; // the ⓘ icons are our own SVG

let el;
let errors;
beforeEach(() => {
  el = document.createElement("div");
  document.body.append(el);
  errors = vi.spyOn(console, "error").mockImplementation(() => {});
  vi.mocked(plot.draw).mockClear();
  vi.mocked(plot.setShapes).mockClear();
  vi.mocked(plot.purge).mockClear();
});
afterEach(() => {
  el.remove();
  errors.mockRestore();
});

describe("render", () => {
  it("is the default export's render, the entry's only export (anywidget warns about named ones)", async () => {
    expect(widget.render).toBe(render);
    expect(Object.keys(await import("../src/inspector.js"))).toEqual(["default"]);
  });

  it("draws the header, the three charts and the panels", () => {
    const session = makeSession({ calls: 40, threads: 3 });
    render({ model: widgetModel(session), el });
    const root = el.querySelector(".cacheviz-inspector");
    expect(root).not.toBeNull();
    expect(root.querySelector("style").textContent).toContain(".cacheviz-inspector");
    expect(root.querySelectorAll(".cacheviz-panel")).toHaveLength(5);
    expect(root.querySelector(".cacheviz-overview").hidden).toBe(true); // 40 calls: no overview needed
    expect(plot.draw).toHaveBeenCalledTimes(3);
    const header = root.querySelector(".cacheviz-header").textContent;
    expect(header).toContain("40 calls");
    expect(header).toContain("≈ approximate tokens");
    expect(root.querySelectorAll(".cacheviz-header__thread option")).toHaveLength(4);
    expect(root.querySelector(".cacheviz-providers__table tbody").children).toHaveLength(3);
    expect(root.querySelector(".cacheviz-providers__row--current").textContent).toContain("anthropic:claude-sonnet-4-5");
    expect(errors).not.toHaveBeenCalled();
  });

  it("shows hostile text as text, never as markup", () => {
    const session = makeSession({ calls: 40, threads: 3 });
    const drift = Object.values(session.details).find((d) => d.label === PAYLOADS[1]);
    const model = widgetModel(session, { selected_call: drift.call, _detail: drift });
    render({ model, el });
    const root = el.querySelector(".cacheviz-inspector");
    expect(root.querySelectorAll(SMUGGLED)).toHaveLength(0);
    const text = root.textContent;
    expect(text).toContain(PAYLOADS[0]); // the path, in the header
    expect(text).toContain(PAYLOADS[1]); // the label, in the detail
    expect(root.querySelector(".cacheviz-header__thread select").textContent).toContain("<script>alert(1)</script>");
    // text nodes serialize escaped; no element carries an event handler attribute
    expect(root.innerHTML).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    const handlers = [...root.querySelectorAll("*")].flatMap((node) =>
      [...node.attributes].filter((a) => /^on/i.test(a.name)).map((a) => `${node.tagName} ${a.name}`),
    );
    expect(handlers).toEqual([]);
  });

  it("shows the drift detail: cause, both sides with the difference marked, chips", () => {
    const session = makeSession({ calls: 40 });
    const drift = Object.values(session.details)[0];
    render({ model: widgetModel(session, { selected_call: drift.call, _detail: drift }), el });
    const detail = el.querySelector(".cacheviz-detail");
    expect(detail.querySelector(".cacheviz-detail__cause").textContent).toBe(drift.cause);
    const marks = detail.querySelectorAll(".cacheviz-detail__mark");
    expect([...marks].map((m) => m.textContent)).toEqual(["29", "30"]);
    const texts = detail.querySelectorAll(".cacheviz-detail__text");
    expect(texts[0].textContent).toBe(drift.prev.text);
    expect(texts[1].textContent).toBe(drift.current.text);
    const rows = detail.querySelectorAll(".cacheviz-detail__chip-row");
    expect(rows).toHaveLength(2);
    expect(rows[0].querySelectorAll(".cacheviz-detail__chip--prev")).toHaveLength(drift.chips.prev_after.length);
    expect(rows[1].querySelectorAll(".cacheviz-detail__chip--current")).toHaveLength(drift.chips.current_after.length);
    expect(rows[0].querySelector(".cacheviz-detail__chip").textContent).toBe("Today");
    expect(rows[0].querySelectorAll(".cacheviz-detail__chip")[1].textContent).toBe("·is");
    expect(detail.textContent).toContain("tokens lost");
    expect(detail.textContent).toContain("claude-sonnet-4-5"); // `model`, an extra key
  });

  it("sets selected_call and saves when a call is clicked", () => {
    const session = makeSession({ calls: 40 });
    const model = widgetModel(session);
    render({ model, el });
    const onClick = vi.mocked(plot.draw).mock.calls[0][2]; // the timeline's click handler
    onClick({ x: 12, y: 3000, customdata: 12 });
    expect(model.set).toHaveBeenCalledWith("selected_call", 12);
    expect(model.save_changes).toHaveBeenCalledTimes(1);
    // the shape map reports calls on its y axis
    vi.mocked(plot.draw).mock.calls[1][2]({ x: 100, y: 7 });
    expect(model.get("selected_call")).toBe(7);
  });

  it("selects the call a search names (#5), and keeps a text search a filter", async () => {
    vi.useFakeTimers();
    try {
      const session = makeSession({ calls: 40, threads: 2 });
      const model = widgetModel(session);
      render({ model, el });
      const search = el.querySelector(".cacheviz-header input[type=search]");
      search.value = "#5";
      search.dispatchEvent(new Event("input"));
      await vi.advanceTimersByTimeAsync(200);
      expect(model.set).toHaveBeenCalledWith("selected_call", 5);
      expect(model.save_changes).toHaveBeenCalledTimes(1);
      expect(el.querySelector(".cacheviz-header__selection").textContent).toBe("selected: call 5");
      expect(el.querySelector(".cacheviz-detail .cacheviz-panel__body").textContent).toContain("Loading the detail of call 5");
      // a number no shown call has: nothing selected (the filter hides the old selection)
      search.value = "#999";
      search.dispatchEvent(new Event("input"));
      await vi.advanceTimersByTimeAsync(200);
      expect(model.get("selected_call")).toBe(-1);
      // a text search filters and selects nothing
      search.value = "user";
      search.dispatchEvent(new Event("input"));
      await vi.advanceTimersByTimeAsync(200);
      expect(model.get("selected_call")).toBe(-1);
    } finally {
      vi.useRealTimers();
    }
  });

  it("follows selected_call and _detail set from Python", () => {
    const session = makeSession({ calls: 40 });
    const model = widgetModel(session);
    render({ model, el });
    const body = () => el.querySelector(".cacheviz-detail .cacheviz-panel__body").textContent;
    expect(body()).toContain("Click a call");
    model.set("selected_call", 3);
    expect(plot.setShapes).toHaveBeenCalledTimes(3);
    expect(vi.mocked(plot.setShapes).mock.calls[0][1][0]).toMatchObject({ x0: 2.5, x1: 3.5 });
    expect(body()).toContain("Loading the detail of call 3");
    expect(el.querySelector(".cacheviz-header__selection").textContent).toBe("selected: call 3");
    model.set("_detail", { call: 3, drift: false, thread: "main", model: "m", input_tokens: 1 });
    expect(body()).toContain("No drift at this call");
    expect(body()).not.toContain("Loading");
  });

  it("shows a Python error for the detail", () => {
    const session = makeSession({ calls: 10 });
    render({ model: widgetModel(session, { selected_call: 2, _detail: { call: 2, drift: false, error: "no call 2" } }), el });
    expect(el.querySelector(".cacheviz-detail__error").textContent).toContain("no call 2");
  });

  it("steps through drifts with the navigation buttons", () => {
    const session = makeSession({ calls: 40 });
    const model = widgetModel(session);
    render({ model, el });
    const [prevDrift, , nextCall, nextDrift] = el.querySelectorAll(".cacheviz-detail__nav button");
    expect(prevDrift.disabled).toBe(false);
    nextDrift.click();
    const drifts = Object.keys(session.details).map(Number);
    expect(model.get("selected_call")).toBe(drifts[0]);
    nextDrift.click();
    expect(model.get("selected_call")).toBe(drifts[1]);
    nextCall.click();
    expect(model.get("selected_call")).toBe(drifts[1] + 1);
  });

  it("filters every view by thread without touching the model", () => {
    const session = makeSession({ calls: 40, threads: 3 });
    const model = widgetModel(session);
    render({ model, el });
    vi.mocked(plot.draw).mockClear();
    const select = el.querySelector(".cacheviz-header__thread select");
    select.value = "1";
    select.dispatchEvent(new Event("change"));
    expect(plot.draw).toHaveBeenCalledTimes(3);
    const timeline = vi.mocked(plot.draw).mock.calls[0][1];
    expect(timeline.data[0].x.length).toBeLessThan(40);
    expect(timeline.layout.uirevision).toContain("thread:1");
    // calls sit at their position among the shown ones: no empty slots
    expect(timeline.data[0].x).toEqual(timeline.data[0].x.map((_, k) => k));
    expect(timeline.layout.xaxis.ticktext.map(Number)).toEqual(timeline.layout.xaxis.tickvals.map((k) => timeline.data[0].customdata[k]));
    expect(el.querySelector(".cacheviz-header").textContent).toContain("calls shown");
    expect(model.set).not.toHaveBeenCalled();
  });

  it("shows the status message, as an error unless it is work in progress", () => {
    const session = makeSession({ calls: 10 });
    const model = widgetModel(session);
    render({ model, el });
    const status = el.querySelector(".cacheviz-header__status");
    model.set("status", "simulating…");
    expect(status.textContent).toMatch(/^simulating… \d\.\d s$/);
    expect(status.classList.contains("cacheviz-header__status--error")).toBe(false);
    model.set("status", "openai: unknown model 'x'");
    expect(status.textContent).toBe("openai: unknown model 'x'");
    expect(status.classList.contains("cacheviz-header__status--error")).toBe(true);
    model.set("status", "");
    expect(status.textContent).toBe("");
  });

  it("shows that a re-simulation runs, how long, and then its result", async () => {
    vi.useFakeTimers();
    try {
      const session = makeSession({ calls: 10 });
      const model = widgetModel(session);
      const cleanup = render({ model, el });
      const root = el.querySelector(".cacheviz-inspector");
      const status = el.querySelector(".cacheviz-header__status");
      const was = session.meta.target;
      model.set("status", "simulating…");
      expect(status.classList.contains("cacheviz-header__status--busy")).toBe(true);
      expect(root.classList.contains("cacheviz-inspector--busy")).toBe(true);
      expect(el.querySelector(".cacheviz-header").getAttribute("aria-busy")).toBe("true");
      await vi.advanceTimersByTimeAsync(3000);
      expect(status.textContent).toMatch(/^simulating… 3\.\d s$/);
      // Python sends the new numbers, then clears the status
      model.set("meta", { ...session.meta, target: { ...was, provider: "openai", model: "gpt-5", total_cost_usd: 0.5 } });
      expect(status.classList.contains("cacheviz-header__status--busy")).toBe(true); // still running
      model.set("status", "");
      expect(status.classList.contains("cacheviz-header__status--busy")).toBe(false);
      expect(status.classList.contains("cacheviz-header__status--done")).toBe(true);
      expect(root.classList.contains("cacheviz-inspector--busy")).toBe(false);
      expect(status.textContent).toMatch(/^re-simulated in 3\.\d s: openai:gpt-5 \$0\.5 \(was anthropic:claude-sonnet-4-5 \$\d/);
      // a redraw keeps the result; the next run replaces it, and its error is shown as such
      model.set("selected_call", 2);
      expect(status.textContent).toContain("re-simulated");
      model.set("status", "simulating…");
      model.set("status", "openai: no such model");
      expect(status.textContent).toBe("openai: no such model");
      expect(status.classList.contains("cacheviz-header__status--error")).toBe(true);
      const timers = vi.getTimerCount(); // others' (e.g. the detail's scrolling), not the status'
      model.set("status", "simulating…");
      expect(vi.getTimerCount()).toBe(timers + 1);
      cleanup(); // stops the progress timer
      expect(vi.getTimerCount()).toBe(timers);
    } finally {
      vi.useRealTimers();
    }
  });

  it("redraws when Python replaces the data", () => {
    const model = widgetModel(makeSession({ calls: 10 }));
    render({ model, el });
    vi.mocked(plot.draw).mockClear();
    const bigger = makeSession({ calls: 25 });
    model.set("meta", bigger.meta);
    model.set("_timeline", dataView(bigger.timeline));
    const timeline = vi.mocked(plot.draw).mock.calls.at(-3)[1];
    expect(timeline.data[0].x).toHaveLength(25);
  });

  it("starts empty (the traits' defaults) without errors", () => {
    const model = createMemoryModel({
      _timeline: new DataView(new ArrayBuffer(0)),
      _shape: new DataView(new ArrayBuffer(0)),
      _costs: new DataView(new ArrayBuffer(0)),
      meta: {},
      selected_call: -1,
      _detail: {},
      status: "",
    });
    render({ model, el });
    expect(el.querySelector(".cacheviz-panel:not([hidden]) .cacheviz-panel__empty").textContent).toBe("No calls to show.");
    expect(plot.draw).not.toHaveBeenCalled();
    expect(errors).not.toHaveBeenCalled();
  });

  it("shows a visible error and logs it when a table cannot be read", () => {
    const session = makeSession({ calls: 10 });
    const model = widgetModel(session, { _timeline: dataView(session.shape) });
    render({ model, el });
    const message = el.querySelector(".cacheviz-inspector > .cacheviz-panel__error").textContent;
    expect(message).toContain("`_timeline` lacks column(s)");
    expect(message).toContain("browser console");
    expect(errors).toHaveBeenCalled();
  });

  it("shows a visible error when a chart fails to draw", async () => {
    vi.mocked(plot.draw).mockImplementationOnce(() => Promise.reject(new Error("WebGL is tired")));
    render({ model: widgetModel(makeSession({ calls: 10 })), el });
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(el.querySelector(".cacheviz-panel:not([hidden]) .cacheviz-panel__error").textContent).toContain("WebGL is tired");
    expect(errors).toHaveBeenCalled();
  });

  it("shows a visible error when rendering itself fails", () => {
    const model = { get() { throw new Error("model exploded"); }, on() {}, set() {}, save_changes() {} };
    render({ model, el });
    const box = el.querySelector(".cacheviz-inspector__error");
    expect(box.textContent).toContain("model exploded");
    expect(box.getAttribute("role")).toBe("alert");
    expect(errors).toHaveBeenCalled();
  });

  it("cleans up: listeners off, plots purged, DOM removed", () => {
    const model = widgetModel(makeSession({ calls: 10 }));
    const cleanup = render({ model, el });
    cleanup();
    expect(el.querySelector(".cacheviz-inspector")).toBeNull();
    expect(plot.purge).toHaveBeenCalledTimes(4);
    vi.mocked(plot.draw).mockClear();
    model.set("selected_call", 2);
    model.set("meta", {});
    expect(plot.draw).not.toHaveBeenCalled();
  });
});
