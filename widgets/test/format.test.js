import { describe, expect, it } from "vitest";
import {
  formatCompact,
  formatDuration,
  formatNumber,
  formatPercent,
  formatShare,
  formatTime,
  formatTokens,
  formatUsd,
  humanizeKey,
} from "../src/lib/format.js";

describe("formatting", () => {
  it("formats token counts with separators and a dash for missing", () => {
    expect(formatTokens(1234567)).toBe("1,234,567");
    expect(formatTokens(0)).toBe("0");
    expect(formatTokens(null)).toBe("—");
    expect(formatTokens(Number.NaN)).toBe("—");
    expect(formatCompact(12345)).toBe("12.3K");
  });

  it("formats dollars by size", () => {
    expect(formatUsd(1234.5)).toBe("$1,234.50");
    expect(formatUsd(0.04422975)).toBe("$0.0442");
    expect(formatUsd(0.00040231)).toBe("$0.000402");
    expect(formatUsd(0)).toBe("$0");
    expect(formatUsd(-2)).toBe("-$2.00");
    expect(formatUsd(1e-9)).toBe("<$0.000001");
    expect(formatUsd(null)).toBe("—");
  });

  it("formats percentages and shares", () => {
    expect(formatPercent(0.4567)).toBe("45.7%");
    expect(formatPercent(0.96, 0)).toBe("96%");
    expect(formatShare(1, 4)).toBe("25.0%");
    expect(formatShare(1, 0)).toBe("—");
  });

  it("formats times in UTC and durations", () => {
    expect(formatTime(Date.UTC(2026, 10, 30, 12, 34, 56))).toBe("2026-11-30 12:34:56Z");
    expect(formatTime(null)).toBe("—");
    expect(formatDuration(45)).toBe("45s");
    expect(formatDuration(300)).toBe("5m");
    expect(formatDuration(330)).toBe("5m 30s");
    expect(formatDuration(3600)).toBe("1h");
    expect(formatDuration(5400)).toBe("1h 30m");
    expect(formatDuration(90000)).toBe("1d 1h");
  });

  it("formats plain numbers and keys", () => {
    expect(formatNumber(1.09234)).toBe("1.092");
    expect(formatNumber(2)).toBe("2");
    expect(humanizeKey("tokens_lost")).toBe("tokens lost");
  });
});
