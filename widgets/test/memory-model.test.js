import { describe, expect, it, vi } from "vitest";
import { NO_DETAIL, createMemoryModel, firstDrift, reportModel } from "../src/lib/memory-model.js";
import { makeSession, reportDocument } from "./fixtures/session.js";

describe("createMemoryModel", () => {
  it("fires change events only when a value changes", () => {
    const model = createMemoryModel({ a: 1 });
    const seen = vi.fn();
    model.on("change:a", seen);
    model.set("a", 1);
    expect(seen).not.toHaveBeenCalled();
    model.set("a", 2);
    expect(seen).toHaveBeenCalledTimes(1);
    expect(model.get("a")).toBe(2);
    model.off("change:a", seen);
    model.set("a", 3);
    expect(seen).toHaveBeenCalledTimes(1);
    expect(() => model.save_changes()).not.toThrow();
  });
});

describe("reportModel", () => {
  const session = makeSession({ calls: 30 });
  const doc = reportDocument(session);

  it("holds the tables as DataViews and selects the first drift", () => {
    const model = reportModel(doc);
    expect(model.get("_timeline")).toBeInstanceOf(DataView);
    expect(model.get("_timeline").byteLength).toBe(session.timeline.byteLength);
    const first = firstDrift(session.details);
    expect(model.get("selected_call")).toBe(first);
    expect(model.get("_detail")).toMatchObject({ call: first, drift: true });
  });

  it("sets _detail from the precomputed details when a call is selected", () => {
    const model = reportModel(doc);
    const calls = Object.keys(session.details).map(Number);
    const onDetail = vi.fn();
    model.on("change:_detail", onDetail);
    model.set("selected_call", calls[1]);
    expect(model.get("_detail")).toMatchObject({ call: calls[1], drift: true });
    expect(onDetail).toHaveBeenCalledTimes(1);
  });

  it("says there is no precomputed detail for other calls, and clears on -1", () => {
    const model = reportModel(doc);
    model.set("selected_call", 0);
    expect(model.get("_detail")).toEqual({ call: 0, drift: false, message: NO_DETAIL });
    model.set("selected_call", -1);
    expect(model.get("_detail")).toEqual({});
  });

  it("does not read inherited keys as details", () => {
    const model = reportModel({ ...doc, details: {} });
    expect(model.get("selected_call")).toBe(-1);
    model.set("selected_call", 0);
    expect(model.get("_detail").message).toBe(NO_DETAIL);
  });

  it("refuses data that is not an object", () => {
    expect(() => reportModel(null)).toThrow(/not a JSON object/);
  });
});
