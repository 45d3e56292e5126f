import { describe, expect, it, vi } from "vitest";

// the figures are plain data; the view modules that own them also draw (Plotly needs a DOM)
vi.mock("../src/lib/plot.js", () => ({}));
import { decodeCosts, decodeShape, decodeTimeline, visibleRows } from "../src/lib/data.js";
import { costFigure } from "../src/views/costs.js";
import { runHover, shapeFigure } from "../src/views/shape.js";
import { MAX_DRIFT_LABELS, callHover, timelineFigure } from "../src/views/timeline.js";
import { selectionShapes } from "../src/lib/figure.js";
import { PAYLOADS, dataView, makeSession } from "./fixtures/session.js";

/** Every string anywhere in a figure. */
function strings(value, out = []) {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) for (const v of value) strings(v, out);
  else if (value && typeof value === "object") for (const v of Object.values(value)) strings(v, out);
  return out;
}

/** Markup Plotly would render, other than the tags the figures use on purpose. */
const UNSAFE = /<(?!\/?(?:b|i|br)>)[^>]*>?|javascript:/i;

function load(options) {
  const s = makeSession(options);
  const timeline = decodeTimeline(dataView(s.timeline));
  return {
    s,
    timeline,
    shape: decodeShape(dataView(s.shape)),
    costs: decodeCosts(dataView(s.costs)),
    rows: visibleRows(timeline, -1),
  };
}

describe("figures for 2,000 calls", () => {
  const { s, timeline, shape, costs, rows } = load({ calls: 2000, threads: 4 });

  it("keep a fixed, small number of traces", () => {
    expect(timelineFigure(timeline, rows, s.meta).data).toHaveLength(8);
    const shapeFig = shapeFigure(shape, timeline, rows);
    expect(shapeFig.data).toHaveLength(6); // one bar trace per status + the prefix line
    expect(shapeFig.data.slice(0, 5).reduce((n, t) => n + t.y.length, 0)).toBe(shape.n);
    expect(costFigure(costs, timeline, rows).data).toHaveLength(6);
  });

  it("escape every string that came from the data", () => {
    const figures = [timelineFigure(timeline, rows, s.meta), shapeFigure(shape, timeline, rows), costFigure(costs, timeline, rows)];
    const all = figures.flatMap((f) => strings(f));
    const unsafe = all.filter((text) => UNSAFE.test(text));
    expect(unsafe).toEqual([]);
    // the payloads are there, as text
    expect(all.some((text) => text.includes("&lt;svg onload=alert(1)&gt;"))).toBe(true);
    expect(all.some((text) => text.includes("&lt;/script&gt;&lt;script&gt;"))).toBe(true);
  });

  it("label drift markers only when there are few", () => {
    const fig = timelineFigure(timeline, rows, s.meta);
    const drift = fig.data[4];
    expect(drift.x.length).toBeGreaterThan(MAX_DRIFT_LABELS);
    expect(drift.mode).toBe("markers");
    expect(drift.text).toBeUndefined();
  });
});

describe("timelineFigure", () => {
  const { s, timeline, rows } = load({ calls: 30, threads: 2 });
  const fig = timelineFigure(timeline, rows, s.meta, { selected: 4, revision: "r" });

  it("stacks prefix and new tokens per call", () => {
    expect(fig.layout.barmode).toBe("stack");
    const [prefix, fresh] = fig.data;
    for (let k = 0; k < rows.length; k++) {
      expect(prefix.y[k] + fresh.y[k]).toBe(timeline.input[rows[k]]);
    }
  });

  it("labels drifts with their cause and marks idle gaps", () => {
    const drift = fig.data[4];
    expect(drift.mode).toBe("markers+text");
    expect(drift.text).toHaveLength(Array.from(timeline.material).filter(Boolean).length); // costless ones folded
    expect(drift.text.length).toBeLessThan(s.meta.totals.drifts);
    expect(s.meta.causes).toContain(drift.text[0]);
    const idle = fig.data[6];
    expect(idle.x.length).toBe(Array.from(timeline.idleGap).filter(Boolean).length);
  });

  it("highlights the selected call", () => {
    expect(fig.layout.shapes).toHaveLength(1);
    expect(fig.layout.shapes[0]).toMatchObject({ xref: "x", x0: 3.5, x1: 4.5 });
    expect(fig.layout.uirevision).toBe("r");
  });

  it("writes hover text with the numbers", () => {
    const r = rows.find((row) => timeline.drift[row]);
    const text = callHover(timeline, r, s.meta);
    expect(text).toContain(`<b>call ${timeline.call[r]}</b>`);
    expect(text).toContain("drift");
    expect(text).toContain("tokens lost");
    expect(text).not.toMatch(UNSAFE);
  });
});

describe("shapeFigure", () => {
  const { timeline, shape, rows } = load({ calls: 30, threads: 2 });

  it("draws horizontal bars from run start to end, unlogged runs hatched", () => {
    const fig = shapeFigure(shape, timeline, rows);
    const same = fig.data[0];
    expect(same.orientation).toBe("h");
    expect(same.base.length).toBe(same.x.length);
    expect(fig.data[4].marker.pattern.shape).toBe("/");
    expect(fig.layout.yaxis.range[0]).toBeGreaterThan(fig.layout.yaxis.range[1]); // first call on top
  });

  it("filters by thread", () => {
    const one = visibleRows(timeline, 1);
    const fig = shapeFigure(shape, timeline, one);
    // rows sit at their position among the shown calls: no empty rows for other threads
    for (const trace of fig.data.slice(0, 5)) for (const y of trace.y) expect(y >= 0 && y < one.length).toBe(true);
    const drawn = new Set(fig.data.slice(0, 5).flatMap((trace) => trace.y));
    expect(drawn.size).toBe(one.length);
  });

  it("hover names the status and the token range", () => {
    expect(runHover(3, 2, 100, 250)).toBe(
      "<b>call 3</b> · invalidated<br>tokens 100–250 (150)<br><i>same bytes as before, but past the break</i>",
    );
    expect(runHover(0, 4, 0, 800)).toContain("≈800");
  });
});

describe("costFigure", () => {
  const { timeline, costs, rows } = load({ calls: 30, threads: 1 });

  it("plots per-call and cumulative cost with the ideal bound", () => {
    const fig = costFigure(costs, timeline, rows);
    const [perCall, , ideal, cumCost, cumIdeal] = fig.data;
    expect(perCall.y[8]).toBeNull(); // unpriced call
    const total = perCall.y.reduce((a, b) => a + (b ?? 0), 0);
    expect(cumCost.y.at(-1)).toBeCloseTo(total, 12);
    expect(cumIdeal.y.at(-1)).toBeCloseTo(ideal.y.reduce((a, b) => a + (b ?? 0), 0), 12);
    expect(cumCost.yaxis).toBe("y2");
  });
});

describe("selectionShapes", () => {
  it("draws nothing without a selection", () => {
    expect(selectionShapes(-1, "x")).toEqual([]);
  });

  it("draws a band along the axis that carries calls", () => {
    expect(selectionShapes(7, "y")[0]).toMatchObject({ xref: "paper", yref: "y", y0: 6.5, y1: 7.5 });
  });
});

it("payload fixture covers the four classic vectors", () => {
  expect(PAYLOADS.join(" ")).toMatch(/<img src=x onerror=/);
  expect(PAYLOADS.join(" ")).toMatch(/<script>/);
  expect(PAYLOADS.join(" ")).toMatch(/<\/script><script>/);
  expect(PAYLOADS.join(" ")).toMatch(/<svg onload=/);
});
