// @vitest-environment happy-dom
// Issue 10: the inspector on real and long sessions (one test per defect where JS owns it).
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

vi.mock("../src/lib/plot.js", () => ({
  draw: vi.fn(() => Promise.resolve()),
  setShapes: vi.fn(() => Promise.resolve()),
  resize: vi.fn(() => Promise.resolve()),
  purge: vi.fn(),
}));

import * as plot from "../src/lib/plot.js";
import { render } from "../src/render.js";
import { createMemoryModel } from "../src/lib/memory-model.js";
import { decodeCosts, decodeShape, decodeTimeline, filterRows, threadTree, visibleRows } from "../src/lib/data.js";
import { plural, usdTicks } from "../src/lib/format.js";
import { costFigure, noCostMessage } from "../src/views/costs.js";
import { SHAPE_ROW_PX, foldUnlogged, shapeFigure, shapeHeight } from "../src/views/shape.js";
import { foldedDrifts, prefixSteps, timelineFigure } from "../src/views/timeline.js";
import { statusBars } from "../src/lib/geometry.js";
import { DEFAULT_WINDOW, DETAIL_MAX, clampWindow } from "../src/lib/window.js";
import { binRows, overviewFigure, windowFromSelection } from "../src/views/overview.js";
import { dataView, makeSession } from "./fixtures/session.js";
import { float64, int32, tableFromArrays, tableToIPC } from "@uwdata/flechette";

function load(options) {
  const s = makeSession(options);
  const timeline = decodeTimeline(dataView(s.timeline));
  return { s, timeline, shape: decodeShape(dataView(s.shape)), costs: decodeCosts(dataView(s.costs)) };
}

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
  return model;
}

let el;
beforeEach(() => {
  el = document.createElement("div");
  document.body.append(el);
  vi.mocked(plot.draw).mockClear();
  vi.mocked(plot.setShapes).mockClear();
});
afterEach(() => el.remove());

/** The figure passed to the n-th draw whose layout matches. */
const drawn = () => vi.mocked(plot.draw).mock.calls.map((c) => c[1]);

describe("defect 3: 2,000 calls stay readable", () => {
  const { s, timeline, shape, costs } = load({ calls: 2000, threads: 3 });
  const rows = visibleRows(timeline, -1);

  it("draws an overview of every call and a detail window of a few calls", () => {
    render({ model: widgetModel(s), el });
    expect(el.querySelector(".cacheviz-overview").hidden).toBe(false);
    const [overview, line, shapeFig, cost] = drawn();
    expect(overview.layout.dragmode).toBe("select");
    expect(overview.layout.selectdirection).toBe("h");
    expect(overview.data[0].x.length).toBeLessThanOrEqual(240); // binned
    expect(line.data[0].x).toHaveLength(DEFAULT_WINDOW);
    expect(cost.data[0].x).toHaveLength(DEFAULT_WINDOW);
    const shapeRows = new Set(shapeFig.data.slice(0, 5).flatMap((t) => t.y));
    expect(shapeRows.size).toBe(DEFAULT_WINDOW);
  });

  it("has no bar outlines anywhere", () => {
    const figs = [
      overviewFigure(timeline, rows, clampWindow(null, rows.length)),
      timelineFigure(timeline, rows.slice(0, 300), s.meta),
      shapeFigure(shape, timeline, rows.slice(0, 300)),
      costFigure(costs, timeline, rows.slice(0, 300)),
    ];
    for (const fig of figs) {
      for (const trace of fig.data.filter((t) => t.type === "bar")) expect(trace.marker.line.width).toBe(0);
    }
  });

  it("moves the detail window with the brush", () => {
    render({ model: widgetModel(s), el });
    const handlers = vi.mocked(plot.draw).mock.calls[0][4];
    vi.mocked(plot.draw).mockClear();
    handlers.plotly_selected({ range: { x: [999.6, 1100.2] } });
    const line = drawn()[1];
    expect(line.data[0].x[0]).toBe(1000);
    expect(line.data[0].customdata[0]).toBe(1000);
    expect(line.data[0].x).toHaveLength(101);
    expect(line.layout.xaxis.range).toEqual([999.5, 1100.5]);
  });

  it("clamps brushes to the window size and ignores empty ones", () => {
    expect(windowFromSelection({ range: { x: [-3, 5000] } }, 2000)).toEqual({ start: 0, end: DETAIL_MAX });
    expect(windowFromSelection({ range: { x: [10.6, 10.7] } }, 2000)).toBeNull();
    expect(windowFromSelection({}, 2000)).toBeNull();
  });

  it("bins drifts as counts instead of 1,000 overlapping markers", () => {
    const bins = binRows(timeline, rows);
    const total = bins.drifts.reduce((a, b) => a + b, 0);
    expect(total).toBe(Array.from(timeline.material).filter(Boolean).length); // costless ones folded
    expect(bins.count.reduce((a, b) => a + b, 0)).toBe(2000);
  });

  it("brings a call selected from Python into the window", () => {
    const model = widgetModel(s);
    render({ model, el });
    vi.mocked(plot.draw).mockClear();
    model.set("selected_call", 1500);
    const line = drawn()[1];
    expect(line.data[0].customdata).toContain(1500);
  });
});

describe("defect 4: the unlogged prefix of rebuilt requests", () => {
  // 20 calls whose first 18,000 tokens are unlogged, then 1,000–3,000 logged tokens
  const shape = { n: 0, call: [], start: [], end: [], status: [] };
  const t = { call: [], prefix: [], thread: [] };
  for (let c = 0; c < 20; c++) {
    const logged = 1000 + c * 100;
    for (const [a, b, st] of [[0, 18000, 4], [18000, 18000 + logged - 200, 0], [18000 + logged - 200, 18000 + logged, 3]]) {
      shape.call.push(c);
      shape.start.push(a);
      shape.end.push(b);
      shape.status.push(st);
      shape.n++;
    }
    t.call.push(c);
    t.prefix.push(18000 + logged - 200);
    t.thread.push(0);
  }
  const timeline = { ...t, n: 20 };
  const rows = t.call.map((_, i) => i);

  it("collapses it to one narrow labelled band", () => {
    const fig = shapeFigure(shape, timeline, rows);
    const unlogged = fig.data[4];
    const same = fig.data[0];
    const widest = Math.max(...same.base.map((b, k) => b + same.x[k]));
    // the band takes a small share of the axis: the logged part is most of the row
    expect(Math.max(...unlogged.x)).toBeLessThan(0.15 * fig.layout.xaxis.range[1]);
    expect(unlogged.text[0]).toBe("≈18K");
    expect(unlogged.name).toContain("collapsed");
    expect(widest).toBeGreaterThan(0.8 * fig.layout.xaxis.range[1]);
    expect(fig.layout.xaxis.ticktext[0]).toBe("unlogged");
  });

  it("keeps logged offsets to scale and the prefix line on them", () => {
    const fold = foldUnlogged(statusBars(shape, () => true, 5).bars, 4);
    expect(fold.map(0, 18000)).toBe(fold.band);
    expect(fold.map(0, 18500) - fold.map(0, 18000)).toBe(500);
    const fig = shapeFigure(shape, timeline, rows);
    const line = fig.data[5];
    expect(line.x[0]).toBe(fold.map(0, t.prefix[0]));
  });

  it("gives each row a minimum height (the panel scrolls)", () => {
    expect(shapeFigure(shape, timeline, rows).layout.height).toBeGreaterThanOrEqual(20 * SHAPE_ROW_PX);
    expect(shapeHeight(300)).toBeGreaterThanOrEqual(300 * SHAPE_ROW_PX);
  });
});

describe("defect 5: the thread filter", () => {
  it("leaves no empty slots, and keeps call numbers on the axis", () => {
    const { s } = load({ calls: 60, threads: 3 });
    render({ model: widgetModel(s), el });
    vi.mocked(plot.draw).mockClear();
    const select = el.querySelector(".cacheviz-header__thread select");
    select.value = "1";
    select.dispatchEvent(new Event("change"));
    const line = drawn()[0];
    const n = line.data[0].x.length;
    expect(line.data[0].x).toEqual([...Array(n).keys()]);
    expect(line.layout.xaxis.range).toEqual([-0.5, n - 0.5]);
  });

  it("drops a selection the filter hides", () => {
    const { s, timeline } = load({ calls: 60, threads: 3 });
    const hidden = Array.from(timeline.call).find((c, i) => timeline.thread[i] === 0);
    const model = widgetModel(s, { selected_call: hidden });
    render({ model, el });
    const select = el.querySelector(".cacheviz-header__thread select");
    select.value = "1";
    select.dispatchEvent(new Event("change"));
    expect(model.get("selected_call")).toBe(-1);
  });

  it("sums the Providers panel over the shown calls too", () => {
    const { s } = load({ calls: 60, threads: 3 });
    render({ model: widgetModel(s), el });
    const before = el.querySelector(".cacheviz-providers__target").textContent;
    const select = el.querySelector(".cacheviz-header__thread select");
    select.value = "1";
    select.dispatchEvent(new Event("change"));
    const after = el.querySelector(".cacheviz-providers__target").textContent;
    expect(after).not.toBe(before);
    expect(after).toMatch(/shown call/);
  });
});

describe("defect 6: mixed threads on one timeline", () => {
  it("never runs a thread's prefix line across another thread's bars", () => {
    // main: 0,1,2 · side: 3,4 · main: 5
    const t = { call: [0, 1, 2, 3, 4, 5], prefix: [10, 20, 30, 5, 6, 40], thread: [0, 0, 0, 1, 1, 0] };
    const rows = [0, 1, 2, 3, 4, 5];
    const line = prefixSteps(t, rows, 0, (r) => t.prefix[r]);
    // every drawn segment stays within one bar, or joins two neighbouring bars of one thread
    const segments = [];
    for (let k = 0; k + 1 < line.x.length; k++) {
      if (line.x[k] === null || line.x[k + 1] === null) continue;
      segments.push([line.x[k], line.x[k + 1], line.y[k], line.y[k + 1]]);
    }
    for (const [x0, x1] of segments) expect(Math.abs(x1 - x0)).toBeLessThanOrEqual(1);
    // no segment from call 2 (main) to call 5 (main) over the side calls
    expect(segments.some(([x0, x1]) => x0 < 3 && x1 > 4)).toBe(false);
    // joins from 2 to 3 (other thread) are broken
    expect(segments.some(([x0, x1, y0, y1]) => x0 === 2.5 && x1 === 2.5 && y0 === 30 && y1 === 5)).toBe(false);
  });
});

describe("defect 7: a provider without a price", () => {
  it("names the models and what to do, for every kind of target", () => {
    expect(noCostMessage({ target: { provider: "openai", model: "x" }, unpriced_models: ["claude-sonnet-4"], models: ["gpt-5", "gpt-5-mini"] })).toMatch(
      /No openai price for claude-sonnet-4.*gpt-5, gpt-5-mini/,
    );
    expect(noCostMessage({ target: { provider: "vllm", self_hosted: true } })).toMatch(/self-hosted/);
  });

  it("shows the message instead of an empty chart", () => {
    const session = makeSession({ calls: 20 });
    const n = 20;
    const unpriced = tableFromArrays(
      {
        call: Int32Array.from({ length: n }, (_, i) => i),
        cost_usd: new Array(n).fill(null),
        ideal_usd: new Array(n).fill(null),
        cache_read_tokens: new Int32Array(n),
        cache_write_tokens: new Int32Array(n),
        uncached_tokens: new Int32Array(n),
      },
      { types: { call: int32(), cost_usd: float64(), ideal_usd: float64(), cache_read_tokens: int32(), cache_write_tokens: int32(), uncached_tokens: int32() } },
    );
    const meta = { ...session.meta, target: { ...session.meta.target, provider: "google", model: null }, unpriced_models: ["claude-x"], models: ["gemini-2.5-pro"] };
    render({ model: widgetModel(session, { meta, _costs: dataView(tableToIPC(unpriced, { format: "stream" })) }), el });
    const panel = el.querySelector(".cacheviz-providers");
    expect(panel.querySelector(".cacheviz-panel__plot").hidden).toBe(true);
    expect(panel.querySelector(".cacheviz-panel__empty").textContent).toMatch(/No google price for claude-x.*gemini-2\.5-pro/);
    expect(drawn()).toHaveLength(2); // the timeline and the shape map; no empty cost chart
  });

  it("shows the tokenizer warning", () => {
    const { s } = load({ calls: 20 });
    const meta = { ...s.meta, target: { ...s.meta.target, warning: "priced under google's rules with tokens counted by o200k_base" } };
    render({ model: widgetModel(s, { meta }), el });
    expect(el.querySelector(".cacheviz-providers__warning").textContent).toContain("o200k_base");
  });
});

describe("defect 9: ticks and plurals", () => {
  it("ticks money at round steps", () => {
    const ticks = usdTicks(0.0175);
    expect(ticks.ticktext).toEqual(["$0", "$0.005", "$0.01", "$0.015"]);
    expect(usdTicks(0.0875).ticktext).toEqual(["$0", "$0.02", "$0.04", "$0.06", "$0.08"]);
    expect(usdTicks(0)).toBeNull();
  });

  it("says 1 call, 2 calls", () => {
    expect(plural(1, "call")).toBe("1 call");
    expect(plural(2, "call")).toBe("2 calls");
    expect(plural(1, "miss", "misses")).toBe("1 miss");
    const { s } = load({ calls: 20, threads: 3 });
    render({ model: widgetModel(s), el });
    expect(el.querySelector(".cacheviz-header__thread select").textContent).not.toMatch(/\(1 calls\)/);
  });
});

describe("filters by cause and search; the thread tree", () => {
  const { s, timeline } = load({ calls: 60, threads: 2 });

  it("keeps drifts of one cause, or the calls whose segment matches", () => {
    const drifts = filterRows(timeline, s.meta, { thread: -1, cause: "drift", search: "" });
    expect(drifts.every((r) => timeline.drift[r])).toBe(true);
    const cause = s.meta.causes[timeline.cause[drifts[0]]];
    const one = filterRows(timeline, s.meta, { thread: -1, cause, search: "" });
    expect(one.length).toBeGreaterThan(0);
    expect(one.every((r) => s.meta.causes[timeline.cause[r]] === cause)).toBe(true);
    expect(filterRows(timeline, s.meta, { thread: -1, cause: "", search: "#12" })).toEqual([12]);
    const bySegment = filterRows(timeline, s.meta, { thread: -1, cause: "", search: "user#" });
    expect(bySegment.length).toBeGreaterThan(0);
    expect(bySegment.every((r) => String(timeline.label[r]).includes("user#"))).toBe(true);
  });

  it("nests sub-agents under their parent", () => {
    expect(threadTree(["main", "agent-a", "side", "agent-b"], [-1, 0, -1, 1])).toEqual([
      { index: 0, depth: 0 },
      { index: 1, depth: 1 },
      { index: 3, depth: 2 },
      { index: 2, depth: 0 },
    ]);
  });
});

describe("costless drifts are folded", () => {
  it("says how many, and shows them on request", () => {
    const { s, timeline } = load({ calls: 40 });
    const model = widgetModel(s);
    render({ model, el });
    const material = Array.from(timeline.material).filter(Boolean).length;
    expect(material).toBeGreaterThan(0);
    expect(material).toBeLessThan(Array.from(timeline.drift).filter(Boolean).length);
    expect(el.querySelector(".cacheviz-panel:not([hidden]) .cacheviz-panel__note").textContent).toMatch(/\+\d+ costless drifts? folded/);
    const line = drawn()[0];
    expect(line.data[4].x).toHaveLength(material);
    vi.mocked(plot.draw).mockClear();
    const box = el.querySelector(".cacheviz-header__costless input");
    box.checked = true;
    box.dispatchEvent(new Event("change"));
    const all = drawn()[0];
    expect(all.data[4].x).toHaveLength(Array.from(timeline.drift).filter(Boolean).length);
  });

  it("counts the folded drifts in the timeline's note", () => {
    const t = { drift: [true, true, false, true], material: [false, true, false, false] };
    expect(foldedDrifts(t, [0, 1, 2, 3])).toBe(2);
  });
});

describe("defect 11: the content browser", () => {
  it("lists what the call sent and the logged system prompt and tools, as text", async () => {
    const { contentBrowser } = await import("../src/views/detail.js");
    const hostile = "<img src=x onerror=alert(1)>";
    const box = contentBrowser(document, {
      sent: [
        { label: "user#4", part: "messages", role: "user", tokens: 120, status: "new", text: `run the tests ${hostile}` },
        { label: "assistant#5", part: "messages", role: "assistant", tokens: 40, status: "new", text: "tool_use bash\n{\"cmd\": \"pytest\"}" },
      ],
      sent_more: 3,
      context: [{ label: "system[0]", part: "system", tokens: 900, status: "same", text: "You are Claude Code." }],
      unlogged_tokens: 18000,
    });
    expect(box.querySelector(".cacheviz-content__sent summary").textContent).toBe(
      "What this call sent past the common prefix: 2 segments, 160 tokens (+3 more not listed)",
    );
    const items = box.querySelectorAll(".cacheviz-content__sent .cacheviz-content__item");
    expect(items).toHaveLength(2);
    expect(items[0].querySelector("pre").textContent).toBe(`run the tests ${hostile}`);
    expect(items[0].querySelector(".cacheviz-content__meta").textContent).toBe("messages · user · 120 tokens · new");
    expect(box.querySelector(".cacheviz-content__context").textContent).toContain("You are Claude Code.");
    expect(box.textContent).toContain("≈18,000 tokens of unlogged prefix");
    expect(box.querySelectorAll("img, script")).toHaveLength(0);
  });
});
