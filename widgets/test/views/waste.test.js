// Waste has one definition (cacheviz.metrics): billed − ideal where billed, else
// simulated − ideal; never negative. The header uses it, not simulated − ideal.
import { describe, expect, it } from "vitest";

import { wasteOf } from "../../src/views/header.js";

describe("wasteOf", () => {
  const own = { own: true };
  const other = { own: false };

  it("is the analysis' own figure for the whole session under its own provider", () => {
    expect(wasteOf({ waste_usd: 1.5 }, own, { billed: 9, cost: 3, ideal: 2, shown: false })).toBe(1.5);
  });

  it("is billed minus ideal for the shown calls under the own provider", () => {
    expect(wasteOf({ waste_usd: 1.5 }, own, { billed: 4, cost: 3, ideal: 2.5, shown: true })).toBe(1.5);
  });

  it("is simulated minus ideal where nothing was billed", () => {
    expect(wasteOf({}, own, { billed: null, cost: 3, ideal: 2, shown: true })).toBe(1);
  });

  it("is simulated minus ideal for another provider, whatever was billed", () => {
    expect(wasteOf({ waste_usd: 7 }, other, { billed: 9, cost: 3, ideal: 2, shown: false })).toBe(1);
  });

  it("is never negative, and unknown without an ideal", () => {
    expect(wasteOf({}, own, { billed: 1, cost: 3, ideal: 2, shown: true })).toBe(0);
    expect(wasteOf({}, own, { billed: 1, cost: 3, ideal: null, shown: true })).toBeNull();
  });
});
