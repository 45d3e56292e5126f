import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { base64ToBytes, decodeTable, toBytes } from "../src/lib/arrow.js";
import { decodeCosts, decodeShape, decodeTimeline } from "../src/lib/data.js";
import { dataView, makeSession, toBase64 } from "./fixtures/session.js";

const python = JSON.parse(readFileSync(new URL("./fixtures/python-report.json", import.meta.url), "utf8"));

describe("toBytes", () => {
  it("accepts a DataView over part of a buffer", () => {
    const buffer = new Uint8Array([9, 1, 2, 3, 9]).buffer;
    expect(Array.from(toBytes(new DataView(buffer, 1, 3)))).toEqual([1, 2, 3]);
  });

  it("accepts ArrayBuffer, Uint8Array, base64 and nothing", () => {
    expect(Array.from(toBytes(new Uint8Array([1, 2]).buffer))).toEqual([1, 2]);
    expect(Array.from(toBytes(new Uint8Array([3])))).toEqual([3]);
    expect(Array.from(toBytes("AQID"))).toEqual([1, 2, 3]);
    expect(toBytes(null).byteLength).toBe(0);
    expect(toBytes(undefined).byteLength).toBe(0);
  });

  it("rejects other values with a message naming what it got", () => {
    expect(() => toBytes(42)).toThrow(/got number/);
    expect(() => toBytes({})).toThrow(/got Object/);
  });

  it("decodes base64 with line breaks", () => {
    expect(Array.from(base64ToBytes("AQ\nID"))).toEqual([1, 2, 3]);
    expect(base64ToBytes("").byteLength).toBe(0);
  });
});

describe("decodeTable", () => {
  it("reads an empty trait as an empty table", () => {
    const t = decodeTimeline(new DataView(new ArrayBuffer(0)));
    expect(t.n).toBe(0);
    expect(t.call).toHaveLength(0);
  });

  it("names the missing columns", () => {
    const s = makeSession({ calls: 3 });
    expect(() => decodeTable(dataView(s.shape), "_timeline", ["call", "prefix_tokens"])).toThrow(
      /`_timeline` lacks column\(s\) `prefix_tokens` \(it has: call, start, end, status\)/,
    );
  });

  it("says when the bytes are not Arrow", () => {
    expect(() => decodeTable(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]), "_shape", [])).toThrow(/`_shape` is not a readable Arrow IPC stream/);
  });

  it("fills optional columns the sender left out", () => {
    const s = makeSession({ calls: 3 });
    const table = decodeTable(dataView(s.shape), "_shape", ["call"], { extra: 7 });
    expect(Array.from(table.columns.extra)).toEqual(new Array(table.numRows).fill(7));
  });
});

describe("the synthetic wire tables", () => {
  const s = makeSession({ calls: 50, threads: 3 });

  it("decode into typed columns with nulls kept", () => {
    const t = decodeTimeline(dataView(s.timeline));
    expect(t.n).toBe(50);
    expect(t.tsMs[5]).toBeNull();
    expect(typeof t.drift[0]).toBe("boolean");
    expect(t.rowOf.get(49)).toBe(49);
    const costs = decodeCosts(toBase64(s.costs));
    expect(costs.cost[8]).toBeNull();
    const shape = decodeShape(dataView(s.shape));
    expect(shape.n).toBeGreaterThan(50);
    expect([...new Set(Array.from(shape.status))].sort()).toEqual([0, 1, 2, 3, 4]);
  });
});

describe("the Python side's tables (test/fixtures/python-report.json)", () => {
  // written by cacheviz.ui.views through report_data(); regenerate with make_python_fixture.py
  it("decode with every column this front end reads", () => {
    const t = decodeTimeline(python.timeline);
    expect(t.n).toBe(python.meta.n_calls);
    expect(Array.from(t.call)).toEqual([...Array(t.n).keys()]);
    for (let r = 0; r < t.n; r++) {
      expect(t.input[r]).toBe(t.prefix[r] + t.fresh[r]);
      expect(typeof t.idleGap[r]).toBe("boolean");
      expect(t.cause[r] >= -1 && t.cause[r] < python.meta.causes.length).toBe(true);
    }
    const drifts = Array.from(t.drift).filter(Boolean).length;
    expect(drifts).toBe(python.meta.totals.drifts);
    const shape = decodeShape(python.shape);
    for (let i = 0; i < shape.n; i++) {
      expect(shape.end[i]).toBeGreaterThanOrEqual(shape.start[i]);
      expect(shape.status[i]).toBeGreaterThanOrEqual(0);
      expect(shape.status[i]).toBeLessThanOrEqual(4);
    }
    const costs = decodeCosts(python.costs);
    expect(costs.n).toBe(t.n);
    const total = Array.from(costs.cost).reduce((a, b) => a + (b ?? 0), 0);
    expect(total).toBeCloseTo(python.meta.target.total_cost_usd, 9);
  });
});
