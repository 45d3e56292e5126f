// @vitest-environment happy-dom
// Each view module on its own: its panel, its figure, its events (Plotly mocked).
import { beforeEach, describe, expect, it, vi } from "vitest";

vi.mock("../../src/lib/plot.js", () => ({
  draw: vi.fn(() => Promise.resolve()),
  setShapes: vi.fn(() => Promise.resolve()),
  resize: vi.fn(() => Promise.resolve()),
  purge: vi.fn(),
}));

import * as plot from "../../src/lib/plot.js";
import { createCosts, noCostMessage } from "../../src/views/costs.js";
import { createDetail } from "../../src/views/detail.js";
import { createOverview } from "../../src/views/overview.js";
import { createShape } from "../../src/views/shape.js";
import { createTimeline } from "../../src/views/timeline.js";
import { viewContext } from "./context.js";

/** The last draw: [div, figure, onClick, stagger, handlers]. */
const lastDraw = () => vi.mocked(plot.draw).mock.calls.at(-1);

let errors;
beforeEach(() => {
  vi.mocked(plot.draw).mockClear();
  vi.mocked(plot.setShapes).mockClear();
  errors = vi.spyOn(console, "error").mockImplementation(() => {});
  return () => errors.mockRestore();
});

describe("views/overview.js", () => {
  it("stays hidden while the detail views draw every shown call", () => {
    const { ctx } = viewContext({ calls: 40 });
    const view = createOverview(ctx);
    view.draw();
    expect(view.panel.section.classList.contains("cacheviz-overview")).toBe(true);
    expect(view.panel.section.hidden).toBe(true);
    expect(plot.draw).not.toHaveBeenCalled();
  });

  it("bins a long session, names the window, and moves it on a brush or a click", () => {
    const { ctx } = viewContext({ calls: 2000, threads: 2 });
    const view = createOverview(ctx);
    view.draw();
    expect(view.panel.section.hidden).toBe(false);
    expect(view.panel.note.textContent).toContain("2,000 calls, binned; the views below draw calls 0–149 (150)");
    const [div, fig, onClick, stagger, handlers] = lastDraw();
    expect(div).toBe(view.panel.plot);
    expect(stagger).toBe(0);
    expect(fig.layout.dragmode).toBe("select");
    expect(fig.layout.shapes[0]).toMatchObject({ x0: -0.5, x1: 149.5 });
    handlers.plotly_selected({ range: { x: [99.6, 300.2] } });
    expect(ctx.setWindow).toHaveBeenLastCalledWith({ start: 100, end: 301 });
    onClick({ x: 1000 });
    expect(ctx.setWindow).toHaveBeenLastCalledWith({ start: 900, end: 1101 }) // the same width, centred;
    view.showSelection(-1);
    expect(vi.mocked(plot.setShapes).mock.calls.at(-1)[1][0]).toMatchObject({ x0: 899.5, x1: 1100.5 });
  });
});

describe("views/timeline.js", () => {
  it("says why it is empty", () => {
    const { ctx, state } = viewContext({ calls: 30, filter: { search: "no call has this text" } });
    const view = createTimeline(ctx);
    view.draw();
    expect(view.panel.empty.textContent).toBe("No call matches the filter.");
    expect(view.panel.plot.hidden).toBe(true);
    state.timeline = null;
    view.draw();
    expect(view.panel.empty.textContent).toBe("No calls to show.");
  });

  it("draws the window's calls, notes folded drifts, selects the clicked call", () => {
    const { ctx, state, timeline } = viewContext({ calls: 30, threads: 2 });
    const view = createTimeline(ctx);
    view.draw();
    const [, fig, onClick, stagger] = lastDraw();
    expect(stagger).toBe(0);
    expect(fig.data[0].customdata).toEqual(Array.from(timeline.call));
    expect(view.panel.note.textContent).toMatch(/costless drifts?” to show/);
    onClick({ customdata: 7 });
    expect(ctx.select).toHaveBeenLastCalledWith(7);
    onClick({ customdata: "not a call" });
    expect(ctx.select).toHaveBeenLastCalledWith(-1);
    view.showSelection(7);
    expect(vi.mocked(plot.setShapes).mock.calls.at(-1)[1][0]).toMatchObject({ xref: "x", x0: 6.5, x1: 7.5 });
    state.showCostless = true;
    view.draw();
    expect(view.panel.note.textContent).not.toContain("folded");
  });

  it("shows a failure in its panel instead of throwing", () => {
    const { ctx } = viewContext({ calls: 10 });
    ctx.meta = () => {
      throw new Error("meta went away");
    };
    const view = createTimeline(ctx);
    expect(() => view.draw()).not.toThrow();
    expect(view.panel.error.textContent).toContain("Could not draw the timeline: meta went away");
  });
});

describe("views/shape.js", () => {
  it("explains the statuses and selects the call drawn at the clicked row", () => {
    const { ctx, state, timeline } = viewContext({ calls: 30, threads: 2, filter: { thread: 1 } });
    const view = createShape(ctx);
    expect([...view.panel.note.querySelectorAll("span")].map((s) => s.textContent)).toContain("unlogged");
    view.draw();
    const [, fig, onClick, stagger] = lastDraw();
    expect(stagger).toBe(1);
    expect(fig.layout.yaxis.range[0]).toBeGreaterThan(fig.layout.yaxis.range[1]);
    // positions are among the shown (thread 1) calls, not call numbers
    onClick({ y: 2 });
    expect(ctx.select).toHaveBeenLastCalledWith(Number(timeline.call[state.rows[2]]));
    onClick({ y: 999 });
    expect(ctx.select).toHaveBeenLastCalledWith(-1);
    view.showSelection(2);
    expect(vi.mocked(plot.setShapes).mock.calls.at(-1)[1][0]).toMatchObject({ yref: "y", y0: 1.5, y1: 2.5 });
  });

  it("says when there is no shape data", () => {
    const { ctx, state } = viewContext({ calls: 5 });
    state.shape = null;
    const view = createShape(ctx);
    view.draw();
    expect(view.panel.empty.textContent).toBe("No shape data.");
  });
});

describe("views/costs.js", () => {
  it("shows the target, the comparison and the per-call costs; a click selects", () => {
    const { ctx } = viewContext({ calls: 30 });
    const view = createCosts(ctx);
    view.draw();
    const section = view.panel.section;
    expect(section.classList.contains("cacheviz-providers")).toBe(true);
    expect(section.querySelector(".cacheviz-providers__target")).not.toBeNull();
    expect(section.querySelector(".cacheviz-providers__table tbody").children.length).toBeGreaterThan(0);
    // the target's facts above the chart, the comparison below it
    const order = [...section.children].map((c) => c.className || c.firstElementChild?.className || "");
    expect(order.indexOf("cacheviz-panel__plot")).toBeGreaterThan(order.indexOf("cacheviz-panel__empty"));
    const [, fig, onClick, stagger] = lastDraw();
    expect(stagger).toBe(2);
    expect(fig.data[0].name).toBe("simulated per call");
    onClick({ customdata: 3 });
    expect(ctx.select).toHaveBeenLastCalledWith(3);
  });

  it("sums the target's costs over the shown calls when a filter is on", () => {
    const { ctx } = viewContext({ calls: 30, threads: 2, filter: { thread: 1 } });
    const view = createCosts(ctx);
    view.draw();
    expect(view.panel.section.querySelector(".cacheviz-providers__target").textContent).toMatch(/simulated cost \(\d+ shown calls\)/);
  });

  it("says why there is no chart", () => {
    const { ctx, meta } = viewContext({ calls: 10, meta: { target: null, notice: null } });
    const view = createCosts(ctx);
    view.draw();
    expect(view.panel.empty.textContent).toBe("No provider target is simulated.");
    expect(noCostMessage({ ...meta, target: { provider: "vllm", self_hosted: true } })).toContain("self-hosted");
    expect(noCostMessage({ target: { provider: "openai", model: "gpt-x" }, models: ["gpt-5", "gpt-4o"] })).toBe(
      "No openai price for gpt-x, so no cost to chart. Pick a priced openai model (e.g. gpt-5, gpt-4o).",
    );
  });

  it("shows a failed comparison row's error in that row, and the other rows' numbers", () => {
    const numbers = { cache_read_tokens: 900, cache_write_tokens: 100, uncached_tokens: 5, error: null };
    const failed = "replay failed: internal error KeyError: 'ab12@v1' (a cacheviz bug: please report it)";
    const unpriced = "no price for 'glm-5.1' on anthropic: pass a price file (--prices FILE, prices= in Python)";
    const compare = [
      { target: "anthropic:glm-5.1", cost_usd: null, ideal_usd: null, ...numbers, error: unpriced },
      { target: "openai:gpt-5", cost_usd: 0.5, ideal_usd: 0.25, ...numbers },
      { target: "deepseek:deepseek-chat", cost_usd: null, ideal_usd: null, cache_read_tokens: null, cache_write_tokens: null, uncached_tokens: null, error: failed },
      { target: "google:gemini-2.5-pro", cost_usd: 0.75, ideal_usd: 0.5, ...numbers },
    ];
    const { ctx } = viewContext({ calls: 10, meta: { compare } });
    const view = createCosts(ctx);
    view.draw();
    const section = view.panel.section;
    const rows = [...section.querySelectorAll(".cacheviz-providers__table tbody tr")];
    expect(rows).toHaveLength(4);
    const cells = rows.map((tr) => [...tr.children].map((td) => td.textContent));
    // the failed target: its error in place of its numbers, on one row
    expect(cells[2]).toEqual(["deepseek:deepseek-chat", failed]);
    expect(rows[2].children[1].getAttribute("colspan")).toBe("6");
    expect(rows[2].classList.contains("cacheviz-providers__row--failed")).toBe(true);
    // the unpriced one: its tokens, "no price" (not $0), and why below the table
    expect(cells[0].slice(0, 3)).toEqual(["anthropic:glm-5.1", "no price", "—"]);
    expect(cells[0][4]).toBe(rows[1].children[4].textContent);
    const notes = [...section.querySelectorAll("p.cacheviz-providers__row-error")].map((p) => p.textContent);
    expect(notes).toEqual([`anthropic:glm-5.1: ${unpriced}`]);
    // the other rows are drawn as usual
    expect(cells[1].slice(0, 4)).toEqual(["openai:gpt-5", "$0.5", "$0.25", "2×"]);
    expect(cells[3].slice(0, 4)).toEqual(["google:gemini-2.5-pro", "$0.75", "$0.5", "1.5×"]);
  });
});

describe("views/detail.js", () => {
  it("asks for a click until a call is selected, then steps through calls and drifts", () => {
    const { ctx, timeline } = viewContext({ calls: 30 });
    const view = createDetail(ctx);
    view.draw();
    expect(view.panel.section.classList.contains("cacheviz-detail")).toBe(true);
    expect(view.panel.body.textContent).toContain("Click a call in the timeline");
    const buttons = [...view.panel.section.querySelectorAll(".cacheviz-detail__nav button")];
    expect(buttons.map((b) => b.textContent)).toEqual(["◀ drift", "◀ call", "call ▶", "drift ▶", "copy as markdown"]);
    buttons[2].click(); // call ▶ with nothing selected: the first call
    expect(ctx.select).toHaveBeenLastCalledWith(Number(timeline.call[0]));
    view.draw();
    buttons[2].click();
    expect(ctx.select).toHaveBeenLastCalledWith(Number(timeline.call[1]));
    view.draw();
    expect(view.panel.body.textContent).toContain("Loading the detail of call 1");
    buttons[3].click(); // drift ▶: the next drift or miss
    const next = ctx.select.mock.calls.at(-1)[0];
    expect(next).toBeGreaterThan(1);
    const r = timeline.rowOf.get(next);
    expect(Boolean(timeline.drift[r] || timeline.miss[r])).toBe(true);
  });

  it("copies the selected drift as Markdown, or shows it selected when the clipboard is refused", async () => {
    const { ctx, session } = viewContext({ calls: 30 });
    const drift = Object.values(session.details).find((d) => d.drift);
    let detail = null;
    ctx.detail = () => detail;
    const view = createDetail(ctx);
    const copy = view.panel.section.querySelector(".cacheviz-detail__copy");
    const status = view.panel.section.querySelector(".cacheviz-detail__copied");
    view.draw();
    expect(copy.disabled).toBe(true); // nothing selected
    ctx.select(drift.call);
    view.draw();
    expect(copy.disabled).toBe(true); // the detail is still on its way
    detail = drift;
    view.draw();
    expect(copy.disabled).toBe(false);
    const writeText = vi.fn(() => Promise.resolve());
    Object.defineProperty(window.navigator, "clipboard", { value: { writeText }, configurable: true });
    try {
      copy.click();
      await vi.waitFor(() => expect(status.textContent).toBe(`copied call ${drift.call} as Markdown`));
      const text = writeText.mock.calls[0][0];
      expect(text).toMatch(new RegExp(`^### cacheviz: drift \\(${drift.cause}\\) at call ${drift.call}\n`));
      expect(text).toContain("**previous call");
      writeText.mockImplementation(() => Promise.reject(new Error("denied")));
      copy.click();
      await vi.waitFor(() => expect(status.textContent).toContain("did not allow copying"));
      expect(view.panel.section.querySelector("textarea.cacheviz-detail__markdown").value).toBe(text);
      // another call: the old copy is gone
      ctx.select(drift.call + 1);
      detail = { call: drift.call + 1, drift: false };
      view.draw();
      expect(status.textContent).toBe("");
      expect(view.panel.section.querySelector("textarea")).toBeNull();
      expect(copy.disabled).toBe(true); // no drift, no miss
    } finally {
      delete window.navigator.clipboard;
    }
  });

  it("disables its buttons without a timeline", () => {
    const { ctx, state } = viewContext({ calls: 5 });
    state.timeline = null;
    const view = createDetail(ctx);
    view.draw();
    for (const b of view.panel.section.querySelectorAll(".cacheviz-detail__nav button")) expect(b.disabled).toBe(true);
  });
});
