// @vitest-environment happy-dom
// A self-hosted target's prefill factor, computed in Python (money/_simulate.py
// prefill_columns, ui/_providers.py prefill_facts) and only read here (issue 31).
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeEach, describe, expect, it, vi } from "vitest";

vi.mock("../../src/lib/plot.js", () => ({
  draw: vi.fn(() => Promise.resolve()),
  setShapes: vi.fn(() => Promise.resolve()),
  resize: vi.fn(() => Promise.resolve()),
  purge: vi.fn(),
}));

import { formatMs } from "../../src/lib/format.js";
import { createDetail } from "../../src/views/detail.js";
import { compareTable, prefillPairs, targetFacts } from "../../src/views/providers.js";
import { viewContext } from "./context.js";

// the same sample session with llamacpp as the target (make_python_fixture.py)
const python = JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), "..", "fixtures", "python-report.json"), "utf8"));
const engine = python.engine_meta;

let errors;
beforeEach(() => {
  errors = vi.spyOn(console, "error").mockImplementation(() => {});
  return () => errors.mockRestore();
});

describe("the prefill factor of a self-hosted target", () => {
  it("is shown with the target's numbers: the session's factor and its costliest drift point", () => {
    const pairs = prefillPairs(engine.target);
    const worst = engine.target.prefill_drifts.reduce((a, b) => (b.prefill_factor > a.prefill_factor ? b : a));
    expect(pairs.map((p) => p[0])).toEqual(["prefill (estimated)", "prefill factor", "costliest drift point"]);
    expect(pairs[0][1]).toBe(`${formatMs(engine.target.prefill_ms)} · ${formatMs(engine.target.prefill_ms_stable)} without drift`);
    expect(pairs[1][1]).toBe(`${Number(engine.target.prefill_factor.toFixed(2))}× the same session without drift`);
    expect(pairs[2][1]).toContain(`call ${worst.call}: ${Number(worst.prefill_factor.toFixed(1))}×`);
    expect(pairs[2][1]).toContain(`(${engine.target.prefill_drifts.length} drift points)`);
    const text = targetFacts(document, engine).textContent;
    expect(text).toContain("prefill factor");
    expect(text).toContain("the prefill tokens its prefix cache saves");
  });

  it("is not shown for a priced provider", () => {
    expect(prefillPairs(python.meta.target)).toEqual([]);
    expect(targetFacts(document, python.meta).textContent).not.toContain("prefill");
    const head = [...compareTable(document, python.meta).querySelectorAll("th")].map((th) => th.textContent);
    expect(head).not.toContain("prefill × no drift");
  });

  it("is a column of the comparison, filled on the engine's row only", () => {
    const table = compareTable(document, engine);
    const head = [...table.querySelectorAll("th")].map((th) => th.textContent);
    expect(head.at(-1)).toBe("prefill × no drift");
    const cells = [...table.querySelectorAll("tbody tr")].map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent));
    for (const row of cells) expect(row.length).toBe(head.length);
    const own = cells.find((row) => row[0] === "llamacpp");
    expect(own?.at(-1)).toBe(`${Number(engine.target.prefill_factor.toFixed(2))}×`);
    expect(cells.filter((row) => row[0] !== "llamacpp").every((row) => row.at(-1) === "—")).toBe(true);
  });

  it("is in the detail of each drift point", () => {
    const point = engine.target.prefill_drifts[0];
    const { ctx } = viewContext({ calls: 12, meta: { target: engine.target } });
    ctx.detail = () => ({ call: point.call, drift: true, cause: "volatile_value", label: "system[0]" });
    const view = createDetail(ctx);
    ctx.select(point.call);
    view.draw();
    const text = view.panel.body.textContent;
    expect(text).toContain("prefill factor (llamacpp)");
    expect(text).toContain(`${Number(point.prefill_factor.toFixed(1))}× (est. ${formatMs(point.prefill_ms)}; ${formatMs(point.prefill_ms_stable)} with the prefix kept)`);
  });
});
