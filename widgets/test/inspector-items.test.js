// @vitest-environment happy-dom
// Issue 33 in the front end: the controls inside the widget (17), the full-text search's
// results (12), "no calls in this filter" (6), the comparison asked for lazily (32).
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

vi.mock("../src/lib/plot.js", () => ({
  draw: vi.fn(() => Promise.resolve()),
  setShapes: vi.fn(() => Promise.resolve()),
  resize: vi.fn(() => Promise.resolve()),
  purge: vi.fn(),
}));

import { render } from "../src/render.js";
import { createMemoryModel } from "../src/lib/memory-model.js";
import { searchContents, snippet } from "../src/lib/search.js";
import { dataView, makeSession } from "./fixtures/session.js";

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
  model.sent = [];
  model.send = (content) => model.sent.push(content);
  vi.spyOn(model, "set");
  vi.spyOn(model, "save_changes");
  return model;
}

let el;
let errors;
beforeEach(() => {
  el = document.createElement("div");
  document.body.append(el);
  errors = vi.spyOn(console, "error").mockImplementation(() => {});
});
afterEach(() => {
  el.remove();
  errors.mockRestore();
});

const CHOICES = {
  provider: [["anthropic", "anthropic"], ["openai", "openai"]],
  model: [["recorded models", ""], ["claude-sonnet-4-5", "claude-sonnet-4-5"]],
  ttl: [["as recorded", ""], ["5m", "5m"], ["1h", "1h"]],
  breakpoints: [["recorded", ""], ["none", "none"]],
};

describe("the target controls", () => {
  it("are the widget's own selects, and set its traits", () => {
    const model = widgetModel(makeSession({ calls: 12 }), { _choices: CHOICES, provider: "anthropic", model: "", ttl: "", breakpoints: "" });
    render({ model, el });
    const provider = el.querySelector("select[data-control=provider]");
    expect(provider.value).toBe("anthropic");
    expect(el.querySelector("select[data-control=model]").value).toBe("");
    provider.value = "openai";
    provider.dispatchEvent(new Event("change"));
    expect(model.set).toHaveBeenCalledWith("provider", "openai");
    expect(model.save_changes).toHaveBeenCalled();
    // the kernel answers: the model control follows
    model.set("model", "claude-sonnet-4-5");
    expect(el.querySelector("select[data-control=model]").value).toBe("claude-sonnet-4-5");
  });

  it("are hidden without choices (the report)", () => {
    render({ model: widgetModel(makeSession({ calls: 12 })), el });
    expect(el.querySelector(".cacheviz-header__target").hidden).toBe(true);
  });
});

describe("the full-text search", () => {
  it("asks the kernel, lists the results and selects the call clicked", async () => {
    const model = widgetModel(makeSession({ calls: 12 }));
    render({ model, el });
    const input = el.querySelector("input[type=search]");
    input.value = "needle";
    input.dispatchEvent(new Event("input"));
    await new Promise((r) => setTimeout(r, 200));
    expect(model.sent).toContainEqual({ type: "search", text: "needle" });
    model.set("_found", { text: "needle", results: [{ call: 7, label: "messages[3]", part: "messages", snippet: "a needle here", calls: 2 }], more: 0 });
    const item = el.querySelector(".cacheviz-header__found-item");
    expect(item.textContent).toContain("call 7");
    expect(item.textContent).toContain("a needle here");
    item.click();
    expect(model.get("selected_call")).toBe(7);
  });

  it("searches the report's texts as the kernel does: each segment at its first call", () => {
    const calls = {
      0: { content: { sent: [{ label: "system[0]", part: "system", hash: "h1" }], context: [] } },
      1: { content: { sent: [{ label: "messages[1]", part: "messages", hash: "h2" }], context: [{ label: "system[0]", part: "system", hash: "h1" }] } },
    };
    const texts = { h1: "You are a careful engineer.", h2: "please Fix the Needle bug" };
    expect(searchContents(calls, texts, "needle").results).toEqual([
      { call: 1, label: "messages[1]", part: "messages", snippet: "please Fix the Needle bug", calls: 1 },
    ]);
    const engineer = searchContents(calls, texts, "careful");
    expect(engineer.results).toHaveLength(1);
    expect(engineer.results[0]).toMatchObject({ call: 0, calls: 2 });
    expect(searchContents(calls, texts, "x").results).toEqual([]); // one character: nothing
    expect(snippet("a".repeat(100) + "NEEDLE", 100, 6)).toBe(`…${"a".repeat(60)}NEEDLE`);
  });
});

describe("the Providers panel", () => {
  it("says 'No calls in this filter.' when a filter shows none, not that models have no price", () => {
    const model = widgetModel(makeSession({ calls: 12 }));
    render({ model, el });
    const input = el.querySelector("input[type=search]");
    input.value = "#999"; // a call that does not exist: no call shown
    input.dispatchEvent(new Event("input"));
    return new Promise((r) => setTimeout(r, 200)).then(() => {
      const providers = [...el.querySelectorAll(".cacheviz-panel")].find((p) => p.querySelector(".cacheviz-panel__title").textContent === "Providers");
      expect(providers.querySelector(".cacheviz-panel__empty").textContent).toBe("No calls in this filter.");
      expect(providers.textContent).not.toContain("No anthropic price");
    });
  });

  it("asks for the comparison once, when the panel comes into view", () => {
    /** @type {Array<(entries: any[]) => void>} */
    const watchers = [];
    const saved = window.IntersectionObserver;
    window.IntersectionObserver = class {
      constructor(callback) {
        watchers.push(callback);
      }
      observe() {}
      disconnect() {}
    };
    try {
      const session = makeSession({ calls: 12 });
      const model = widgetModel(session, { meta: { ...session.meta, compare: [], compare_built: false } });
      render({ model, el });
      expect(el.textContent).toContain("Comparing with the other providers…");
      expect(model.sent.filter((m) => m.type === "compare")).toHaveLength(0); // not yet seen
      watchers[0]([{ isIntersecting: true }]);
      watchers[0]([{ isIntersecting: true }]);
      expect(model.sent.filter((m) => m.type === "compare")).toHaveLength(1);
    } finally {
      window.IntersectionObserver = saved;
    }
  });
});
