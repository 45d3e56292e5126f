// @ts-check
// Waste is computed in Python (money/_metrics.py): the header shows the target's figure,
// or sums the shown calls' per-call waste with what it sums (issue 33 items 4 and 5).
import { describe, expect, it } from "vitest";
import { wasteOf, wasteText } from "../../src/views/header.js";

/** @param {Array<[number | null, number | null, number | null, number | null]>} rows cost, ideal, billed, waste */
function shownOf(rows) {
  const n = rows.length;
  const call = Int32Array.from({ length: n }, (_, i) => i);
  const costs = /** @type {any} */ ({
    n,
    call,
    cost: rows.map((r) => r[0]),
    ideal: rows.map((r) => r[1]),
    billed: rows.map((r) => r[2]),
    waste: rows.map((r) => r[3]),
    rowOf: new Map([...call].map((c, i) => [c, i])),
  });
  return { costs, timeline: /** @type {any} */ ({ n, call }), rows: [...call].map((_, i) => i) };
}

describe("wasteOf", () => {
  const of = { basis: "billed", spent_usd: 9, ideal_usd: 7.5, calls: 3, excluded: 1 };
  const meta = /** @type {any} */ ({ target: { provider: "anthropic", own: true, waste_usd: 1.5, waste_of: of } });

  it("is the target's figure, computed in Python, without a filter", () => {
    expect(wasteOf(meta, null)).toEqual({ usd: 1.5, of });
  });

  it("sums the shown calls' waste, billed and ideal over the same calls, and counts the excluded", () => {
    const shown = shownOf([
      [3, 2, 2.5, 0.5],
      [3, 2, null, null], // no usage: excluded, its ideal not summed
      [4, 1, 2, 1],
    ]);
    expect(wasteOf(meta, shown)).toEqual({ usd: 1.5, of: { basis: "billed", spent_usd: 4.5, ideal_usd: 3, calls: 2, excluded: 1 } });
  });

  it("is null when no shown call counts, or without a target", () => {
    expect(wasteOf(meta, shownOf([[3, 2, null, null]]))).toBeNull();
    expect(wasteOf(/** @type {any} */ ({}), null)).toBeNull();
  });

  it("says what it sums, and adds up", () => {
    expect(wasteText(1.5, of)).toBe("$1.50 = billed $9.00 − ideal $7.50 of 3 calls with usage (1 without a billed cost excluded)");
    expect(wasteText(2, { ...of, excluded: 0 })).toContain("summed per call, none below 0");
  });
});
