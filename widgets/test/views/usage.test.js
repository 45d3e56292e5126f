// @vitest-environment happy-dom
// Issue 20 (items 1, 5, 11): the bill of the shown calls, billed beside simulated per call,
// the per-request hit rate, and the self-hosted wording from meta rather than names.
import { beforeEach, describe, expect, it, vi } from "vitest";

vi.mock("../../src/lib/plot.js", () => ({
  draw: vi.fn(() => Promise.resolve()),
  setShapes: vi.fn(() => Promise.resolve()),
  resize: vi.fn(() => Promise.resolve()),
  purge: vi.fn(),
}));

import * as plot from "../../src/lib/plot.js";
import { filterRows } from "../../src/lib/data.js";
import { formatUsd } from "../../src/lib/format.js";
import { costFigure, createCosts, noCostMessage } from "../../src/views/costs.js";
import { createDetail } from "../../src/views/detail.js";
import { createHeader } from "../../src/views/header.js";
import { callHover } from "../../src/views/timeline.js";
import { viewContext } from "./context.js";

beforeEach(() => vi.mocked(plot.draw).mockClear());

/** The header's facts as { label: value }. */
function headerFacts(ctx, state, extra = {}) {
  const header = createHeader(document, { onThread() {}, onClear() {} });
  header.update({ meta: ctx.meta(), timeline: state.timeline, costs: state.costs, rows: state.rows, thread: state.thread, cause: state.cause, search: state.search, selected: -1, ...extra });
  const out = {};
  for (const item of header.el.querySelectorAll(".cacheviz-header__totals dt")) out[item.textContent.trim()] = item.nextElementSibling.textContent.trim();
  return out;
}

/** Sum of the billed cost of `rows`, by hand. */
function billedOf(state, rows) {
  let sum = 0;
  let any = false;
  for (const r of rows) {
    const b = state.costs.billed[state.costs.rowOf.get(Number(state.timeline.call[r]))];
    if (b !== null && b !== undefined) {
      sum += b;
      any = true;
    }
  }
  return any ? sum : null;
}

describe("the header's bill under a filter (item 1)", () => {
  it("is the session's bill, labelled plainly, with no filter", () => {
    const { ctx, state, meta } = viewContext({ calls: 30, usage: true });
    const shown = headerFacts(ctx, state);
    expect(shown.billed).toBe(formatUsd(meta.billed_usd));
    expect(Object.keys(shown).some((k) => k.includes("of the shown calls"))).toBe(false);
  });

  for (const filter of [{ cause: "miss" }, { cause: "drift" }, { thread: 1 }, { search: "#7" }, { cause: "truncated_front" }]) {
    it(`sums the shown calls' bill for ${JSON.stringify(filter)}`, () => {
      const { ctx, state, meta } = viewContext({ calls: 60, threads: 2, usage: true, filter });
      if (filter.cause === "miss") {
        // the fixture has no misses: mark three, as the provider would
        state.timeline.miss = Array.from({ length: state.timeline.n }, (_, i) => i % 9 === 2);
        state.rows = filterRows(state.timeline, meta, { thread: -1, cause: "miss", search: "" });
      }
      expect(state.rows.length).toBeGreaterThan(0);
      const expected = billedOf(state, state.rows);
      expect(expected).not.toBeNull();
      const shown = headerFacts(ctx, state);
      expect(shown.billed).toBeUndefined();
      const value = shown["billed (of the shown calls)"];
      expect(value).not.toContain("no usage reported");
      expect(value).toBe(formatUsd(expected));
      expect(expected).toBeLessThan(meta.billed_usd);
    });
  }

  it("says no usage reported only when none of the shown calls has usage", () => {
    // call 4 has no reported usage in the fixture
    const { ctx, state } = viewContext({ calls: 30, usage: true, filter: { search: "#4" } });
    expect(state.rows).toHaveLength(1);
    expect(headerFacts(ctx, state)["billed (of the shown calls)"]).toBe("— (no usage reported)");
    const none = viewContext({ calls: 30, usage: true, filter: { search: "no call has this text" } });
    expect(headerFacts(none.ctx, none.state)["billed (of the shown calls)"]).toBe("— (no call shown)");
  });
});

describe("billed beside simulated per call (item 5)", () => {
  it("draws billed per call for a vendor's target, not only a self-hosted one", () => {
    const { ctx, state } = viewContext({ calls: 30, usage: true });
    expect(ctx.meta().target.provider).toBe("anthropic");
    createCosts(ctx).draw();
    const fig = vi.mocked(plot.draw).mock.calls.at(-1)[1];
    const billed = fig.data.find((d) => d.name === "billed per call");
    expect(billed.visible).toBe(true);
    expect(billed.showlegend).toBe(true);
    const rows = ctx.windowRows();
    expect(billed.y).toEqual(rows.map((r) => state.costs.billed[state.costs.rowOf.get(Number(state.timeline.call[r]))] ?? null));
    expect(billed.y.filter((v) => v !== null).length).toBeGreaterThan(20);
    const bar = fig.data.find((d) => d.name === "simulated per call");
    expect(bar.hovertext[3]).toMatch(/simulated \$[\d.]+ · ideal \$[\d.]+ · billed \$[\d.]+/);
  });

  it("hides the billed series when no call has a bill", () => {
    const { state, meta } = viewContext({ calls: 30 });
    const fig = costFigure(state.costs, state.timeline, state.rows);
    const billed = fig.data.find((d) => d.name === "billed per call");
    expect(billed.visible).toBe("legendonly");
    expect(meta.billed_usd).toBeUndefined();
  });

  it("puts the shown calls' bill beside their simulated cost in the target's facts", () => {
    const { ctx, state } = viewContext({ calls: 30, threads: 2, usage: true, filter: { thread: 1 } });
    const view = createCosts(ctx);
    view.draw();
    const labels = [...view.panel.section.querySelectorAll(".cacheviz-providers__target dt")].map((d) => d.textContent.trim());
    const n = state.rows.length;
    expect(labels.slice(2, 5)).toEqual([`simulated cost (${n} shown calls)`, `billed (${n} shown calls)`, `ideal (${n} shown calls)`]);
  });

  it("shows the selected call's bill next to its simulated cost in the detail", () => {
    const { ctx, state } = viewContext({ calls: 30, usage: true });
    const view = createDetail(ctx);
    ctx.select(3);
    view.draw();
    const dts = [...view.panel.body.querySelectorAll(".cacheviz-detail__summary dt")].map((d) => d.textContent.trim());
    const dds = [...view.panel.body.querySelectorAll(".cacheviz-detail__summary dd")].map((d) => d.textContent.trim());
    const at = dts.indexOf("simulated cost (anthropic:claude-sonnet-4-5)");
    expect(at).toBeGreaterThan(0);
    expect(dts[at + 1]).toBe("billed");
    const i = state.costs.rowOf.get(3);
    expect(dds[at]).toBe(formatUsd(state.costs.cost[i]));
    expect(dds[at + 1]).toBe(formatUsd(state.costs.billed[i]));
    expect(dds[dts.indexOf("hit rate (reported)")]).toBe(`${(state.timeline.hitRatio[state.timeline.rowOf.get(3)] * 100).toFixed(1)}%`);
    // a call without reported usage says so
    ctx.select(4);
    view.draw();
    const text = view.panel.body.querySelector(".cacheviz-detail__summary").textContent;
    expect(text).toContain("billed— (no usage reported)");
    expect(text).toContain("hit rate (reported)n/a");
  });

  it("lists the detail's own dollars as dollars when the tables lack the call", () => {
    const { ctx } = viewContext({ calls: 30, usage: true });
    ctx.state.timeline = null;
    ctx.state.costs = null;
    ctx.detail = () => ({ call: 2, drift: false, billed_usd: 0.63, simulated_usd: 0.0217, hit_ratio: 0.5 });
    const view = createDetail(ctx);
    ctx.select(2);
    view.draw();
    const text = view.panel.body.textContent;
    expect(text).toContain("billed usd$0.63");
    expect(text).toContain("simulated usd$0.0217");
    expect(text).toContain("hit ratio50.0%");
  });
});

describe("the timeline tooltip's hit rate (item 11)", () => {
  it("shows the reported hit rate per request, n/a when not reported", () => {
    const { state, meta } = viewContext({ calls: 30, usage: true });
    const t = state.timeline;
    const r = t.rowOf.get(3);
    expect(callHover(t, r, meta)).toContain(`hit rate (reported) ${(t.hitRatio[r] * 100).toFixed(1)}%`);
    expect(callHover(t, t.rowOf.get(4), meta)).toContain("hit rate (reported) n/a");
    const bare = viewContext({ calls: 5 });
    expect(callHover(bare.state.timeline, 1, bare.meta)).toContain("hit rate (reported) n/a");
  });
});

describe("the empty cost chart's wording (meta.target.self_hosted)", () => {
  it("comes from the flag, not the provider's name", () => {
    expect(noCostMessage({ target: { provider: "my-engine", self_hosted: true } })).toMatch(/^my-engine is a self-hosted engine: it has no prices/);
    expect(noCostMessage({ target: { provider: "vllm", self_hosted: false }, models: [] })).toMatch(/^No vllm price/);
  });
});
