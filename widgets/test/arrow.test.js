import { readFileSync } from "node:fs";
import { describe, expect, it, vi } from "vitest";

// decodeTable as it is, its calls recorded: the columns each decoder reads (required or defaulted)
vi.mock("../src/lib/arrow.js", async (importOriginal) => {
  const arrow = await importOriginal();
  return { ...arrow, decodeTable: vi.fn(arrow.decodeTable) };
});

import { base64ToBytes, decodeTable, toBytes } from "../src/lib/arrow.js";
import { decodeCosts, decodeShape, decodeTimeline } from "../src/lib/data.js";
import { dataView, makeSession, toBase64 } from "./fixtures/session.js";

const python = JSON.parse(readFileSync(new URL("./fixtures/python-report.json", import.meta.url), "utf8"));

/**
 * The property names a `@typedef {object}` of src/lib/data.js declares.
 *
 * @param {string} typedef
 */
function declared(typedef) {
  const source = readFileSync(new URL("../src/lib/data.js", import.meta.url), "utf8");
  const block = source.split("@typedef {object} ").find((b) => b.startsWith(`${typedef}\n`));
  if (!block) throw new Error(`src/lib/data.js has no @typedef {object} ${typedef}`);
  return [...block.slice(0, block.indexOf("*/")).matchAll(/@property \{.*\} \[?(\w+)\]?/g)].map((m) => m[1]).sort();
}

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

describe("the Python side's wire data (test/fixtures/python-report.json)", () => {
  // written by cacheviz.ui.report.report_data(); regenerate with make_python_fixture.py
  // (tests/ui/test_wire_fixture.py fails when the committed file is stale)
  it("carries every column the decoders read (none filled by a default)", () => {
    const decoders = { timeline: decodeTimeline, shape: decodeShape, costs: decodeCosts };
    for (const [key, decode] of Object.entries(decoders)) {
      vi.mocked(decodeTable).mockClear();
      decode(python[key]);
      expect(vi.mocked(decodeTable)).toHaveBeenCalledTimes(1);
      const [[, name, required, defaults = {}]] = vi.mocked(decodeTable).mock.calls;
      const sent = Object.keys(decodeTable(python[key], name, []).columns);
      const missing = [...required, ...Object.keys(defaults)].filter((column) => !sent.includes(column));
      expect(missing, `${name}: columns read here that the Python side does not send (it sends ${sent.join(", ")})`).toEqual([]);
    }
  });

  it("sends the meta fields the typedefs of src/lib/data.js declare, and no others", () => {
    const why = "the Python side's meta differs from src/lib/data.js's typedef: update the typedef and its readers";
    // a self-hosted engine's replay only (cacheviz/ui/_providers.py prefill_facts, compare_rows)
    const engineOnly = (/** @type {string} */ key) => key.startsWith("prefill_");
    expect(Object.keys(python.meta).sort(), `Meta: ${why}`).toEqual(declared("Meta"));
    expect(Object.keys(python.meta.target).sort(), `Target: ${why}`).toEqual(declared("Target").filter((k) => !engineOnly(k)));
    expect(python.meta.compare.length).toBeGreaterThan(1);
    for (const row of python.meta.compare) {
      expect(Object.keys(row).sort(), `CompareRow: ${why}`).toEqual(declared("CompareRow").filter((k) => !engineOnly(k)));
    }
    // the same session with a self-hosted target (llamacpp): every field, the prefill ones too
    const engine = python.engine_meta;
    expect(engine.target.self_hosted).toBe(true);
    expect(Object.keys(engine.target).sort(), `Target: ${why}`).toEqual(declared("Target"));
    expect(engine.target.prefill_drifts.length).toBe(engine.totals.drifts);
    for (const drift of engine.target.prefill_drifts) expect(Object.keys(drift).sort()).toEqual(declared("PrefillDrift"));
    const own = engine.compare.filter((/** @type {any} */ row) => row.target === "llamacpp");
    expect(own.length).toBe(1);
    expect(Object.keys(own[0]).sort(), `CompareRow: ${why}`).toEqual(declared("CompareRow"));
    expect(own[0].prefill_factor).toBe(engine.target.prefill_factor);
  });

  it("the engine's prefill factor is its prefill time over the same without drift", () => {
    const t = python.engine_meta.target;
    expect(t.prefill_factor).toBeCloseTo(t.prefill_ms / t.prefill_ms_stable, 9);
    expect(t.prefill_factor).toBeGreaterThan(1); // the sample refreshes a timestamp in its system prompt
    for (const d of t.prefill_drifts) expect(d.prefill_factor).toBeCloseTo(d.prefill_ms / d.prefill_ms_stable, 9);
  });

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
