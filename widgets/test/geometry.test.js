import { describe, expect, it } from "vitest";
import { cumulativeSum, plotHeight, statusBars } from "../src/lib/geometry.js";

describe("cumulativeSum", () => {
  it("adds up and carries over missing values", () => {
    expect(cumulativeSum([1, null, 2, undefined, Number.NaN, 3])).toEqual([1, 1, 3, 3, 3, 6]);
    expect(cumulativeSum(new Float64Array([0.5, 0.25]))).toEqual([0.5, 0.75]);
    expect(cumulativeSum([])).toEqual([]);
  });
});

describe("statusBars", () => {
  const shape = {
    n: 6,
    call: [0, 0, 1, 1, 1, 2],
    start: [0, 100, 0, 80, 90, 0],
    end: [100, 150, 80, 90, 200, 0],
    status: [0, 3, 0, 1, 7, 4],
  };

  it("groups runs by status as base/length arrays", () => {
    const { bars, maxEnd } = statusBars(shape, () => true, 5);
    expect(bars[0]).toEqual({ y: [0, 1], base: [0, 0], x: [100, 80], runs: [0, 2] });
    expect(bars[1]).toEqual({ y: [1], base: [80], x: [10], runs: [3] });
    // unknown status 7 falls back to "new"; the empty run of call 2 is dropped
    expect(bars[3]).toEqual({ y: [0, 1], base: [100, 90], x: [50, 110], runs: [1, 4] });
    expect(bars[4].y).toEqual([]);
    expect(maxEnd).toBe(200);
  });

  it("keeps only visible calls", () => {
    const { bars } = statusBars(shape, (call) => call === 1, 5);
    expect(bars.flatMap((b) => b.y)).toEqual([1, 1, 1]);
  });
});

describe("plotHeight", () => {
  it("clamps", () => {
    expect(plotHeight(0, 4, 220, 640)).toBe(220);
    expect(plotHeight(50, 4, 220, 640)).toBe(290);
    expect(plotHeight(2000, 4, 220, 640)).toBe(640);
  });
});
