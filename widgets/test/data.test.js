import { describe, expect, it } from "vitest";
import { decodeTimeline, threadCounts, nameAt, stepCall, sumRows, visibleRows } from "../src/lib/data.js";
import { dataView, makeSession } from "./fixtures/session.js";

const session = makeSession({ calls: 30, threads: 3 });
const t = decodeTimeline(dataView(session.timeline));

describe("rows", () => {
  it("shows all calls or one thread's, in call order", () => {
    expect(visibleRows(t, -1)).toHaveLength(30);
    const one = visibleRows(t, 1);
    expect(one.length).toBeGreaterThan(0);
    expect(one.every((r) => t.thread[r] === 1)).toBe(true);
    expect(threadCounts(t, 3).reduce((a, b) => a + b, 0)).toBe(30);
  });

  it("sorts rows that arrive out of call order", () => {
    const shuffled = { ...t, n: 3, call: [2, 0, 1], thread: [0, 0, 0] };
    expect(visibleRows(shuffled, -1)).toEqual([1, 2, 0]);
  });

  it("sums what the header shows for a thread", () => {
    const rows = visibleRows(t, -1);
    const sums = sumRows(t, rows);
    expect(sums.input_tokens).toBe(session.meta.totals.input_tokens);
    expect(sums.prefix_tokens + sums.new_tokens).toBe(sums.input_tokens);
    expect(sums.drifts).toBe(session.meta.totals.drifts);
  });
});

describe("stepCall", () => {
  const rows = visibleRows(t, -1);
  const drifts = rows.filter((r) => t.drift[r]).map((r) => t.call[r]);

  it("moves to the next and previous call", () => {
    expect(stepCall(t, rows, 4, 1, false)).toBe(5);
    expect(stepCall(t, rows, 4, -1, false)).toBe(3);
    expect(stepCall(t, rows, 29, 1, false)).toBeNull();
    expect(stepCall(t, rows, -1, 1, false)).toBe(0);
    expect(stepCall(t, rows, -1, -1, false)).toBe(29);
  });

  it("moves between drifts", () => {
    expect(stepCall(t, rows, -1, 1, true)).toBe(drifts[0]);
    expect(stepCall(t, rows, drifts[0], 1, true)).toBe(drifts[1]);
    expect(stepCall(t, rows, drifts[1], -1, true)).toBe(drifts[0]);
    expect(stepCall(t, rows, drifts[0], -1, true)).toBeNull();
  });
});

describe("nameAt", () => {
  it("names an index or says it is unknown", () => {
    expect(nameAt(["a", "b"], 1)).toBe("b");
    expect(nameAt(["a"], 3)).toBe("#3");
    expect(nameAt(undefined, 0)).toBe("#0");
    expect(nameAt(["a"], -1)).toBe("");
  });
});
