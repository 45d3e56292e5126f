// @vitest-environment happy-dom
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

vi.mock("../src/lib/plot.js", () => ({
  draw: vi.fn(() => Promise.resolve()),
  setShapes: vi.fn(() => Promise.resolve()),
  resize: vi.fn(() => Promise.resolve()),
  purge: vi.fn(),
}));

import * as plot from "../src/lib/plot.js";
import { boot } from "../src/report-app.js";
import { decodeTimeline } from "../src/lib/data.js";
import { NO_DETAIL, inflateJson } from "../src/lib/memory-model.js";
import { embedJson, makeSession, reportDocument } from "./fixtures/session.js";

const python = JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), "fixtures", "python-report.json"), "utf8"));

/** The page `cacheviz/ui/report.py` writes, minus the inlined bundle. */
function page(dataJson, { root = true } = {}) {
  document.body.innerHTML = ""; // test scaffolding only: the page skeleton, no data
  if (root) {
    const div = document.createElement("div");
    div.id = "cacheviz-root";
    document.body.append(div);
  }
  if (dataJson !== undefined) {
    const script = document.createElement("script");
    script.type = "application/json";
    script.id = "cacheviz-data";
    script.textContent = dataJson;
    document.body.append(script);
  }
}

let errors;
beforeEach(() => {
  errors = vi.spyOn(console, "error").mockImplementation(() => {});
  vi.mocked(plot.draw).mockClear();
});
afterEach(() => errors.mockRestore());

describe("the HTML report", () => {
  it("renders the embedded data into #cacheviz-root and selects the first drift", () => {
    const session = makeSession({ calls: 60, threads: 2 });
    page(embedJson(reportDocument(session)));
    const cleanup = boot(document);
    expect(cleanup).toBeTypeOf("function");
    const root = document.querySelector("#cacheviz-root .cacheviz-inspector");
    expect(root).not.toBeNull();
    expect(plot.draw).toHaveBeenCalledTimes(3);
    const first = Math.min(...Object.keys(session.details).map(Number));
    expect(root.querySelector(".cacheviz-header__selection").textContent).toBe(`selected: call ${first}`);
    expect(root.querySelector(".cacheviz-detail__cause")).not.toBeNull();
    expect(root.querySelectorAll("img, svg:not(.cacheviz-info), iframe, a")).toHaveLength(0); // the ⓘ icons are our own SVG
    expect(errors).not.toHaveBeenCalled();
  });

  it("shows precomputed details on click, and says so for calls without one", () => {
    const session = makeSession({ calls: 60 });
    page(embedJson(reportDocument(session)));
    boot(document);
    const clickTimeline = vi.mocked(plot.draw).mock.calls[0][2];
    clickTimeline({ x: 0, customdata: 0 });
    const body = document.querySelector(".cacheviz-detail .cacheviz-panel__body");
    expect(body.textContent).toContain(NO_DETAIL);
    expect(body.textContent).toContain("common prefix"); // the numbers still show, from the timeline
    const drift = Number(Object.keys(session.details)[2]);
    clickTimeline({ x: drift, customdata: drift });
    expect(body.textContent).not.toContain(NO_DETAIL);
    expect(body.querySelector(".cacheviz-detail__cause").textContent).toBe(session.details[drift].cause);
  });

  it("creates the root when the page has none", () => {
    page(embedJson(reportDocument(makeSession({ calls: 5 }))), { root: false });
    boot(document);
    expect(document.querySelector("#cacheviz-root .cacheviz-inspector")).not.toBeNull();
  });

  it("shows a visible error for missing or broken data", () => {
    page(undefined);
    expect(boot(document)).toBeNull();
    expect(document.querySelector(".cacheviz-inspector__error").textContent).toContain('no <script id="cacheviz-data">');
    page("{not json");
    boot(document);
    const box = document.querySelector(".cacheviz-inspector__error");
    expect(box.textContent).toContain("not valid JSON");
    expect(box.textContent).toContain("cacheviz report");
    expect(errors).toHaveBeenCalled();
  });

  it("renders what the Python side writes (sample_sessions/timestamp_in_system.jsonl)", async () => {
    page(embedJson(python));
    boot(document);
    const root = document.querySelector(".cacheviz-inspector");
    // every call's detail travels gzip-compressed: inflated after the first draw
    await vi.waitFor(() => expect(root.querySelector(".cacheviz-detail__cause")).not.toBeNull());
    // it opens on the costliest drift, not the first call; look at call 1's drift
    expect(root.querySelector(".cacheviz-header__selection").textContent).toBe(`selected: call ${python.selected_call}`);
    vi.mocked(plot.draw).mock.calls[0][2]({ x: 1, customdata: 1 });
    expect(root.querySelector(".cacheviz-inspector > .cacheviz-panel__error").textContent).toBe("");
    expect(root.querySelector(".cacheviz-header").textContent).toContain(`${python.meta.n_calls} calls`);
    const detail = root.querySelector(".cacheviz-detail");
    expect(detail.querySelector(".cacheviz-detail__cause").textContent).toBe("volatile_value");
    const marks = [...detail.querySelectorAll(".cacheviz-detail__mark")].map((m) => m.textContent);
    expect(marks).toEqual(["0:42", "1:33"]);
    const details = await inflateJson(python.details_gz);
    expect(detail.querySelectorAll(".cacheviz-detail__chip--current")).toHaveLength(details.calls["1"].chips.current_after.length);
    // what the call sent, from the shared texts
    const sent = detail.querySelector(".cacheviz-content__sent");
    expect(sent.querySelectorAll(".cacheviz-content__item").length).toBe(details.calls["1"].content.sent.length);
    expect(sent.querySelector("pre").textContent).toBe(details.texts[details.calls["1"].content.sent[0].hash]);
    expect(root.querySelectorAll(".cacheviz-providers__table tbody tr")).toHaveLength(python.meta.compare.length);
    const [timeline, shape, costs] = vi.mocked(plot.draw).mock.calls.map((c) => c[1]);
    expect(timeline.data[0].x).toHaveLength(python.meta.n_calls);
    expect(shape.data.slice(0, 5).some((t) => t.y.length > 0)).toBe(true);
    expect(costs.data[3].y.at(-1)).toBeCloseTo(python.meta.target.total_cost_usd, 9);
    expect(errors).not.toHaveBeenCalled();
  });

  it("gets from the Python side a detail per call, the drift's on each drift, every listed text", async () => {
    const details = await inflateJson(python.details_gz);
    const calls = Object.keys(details.calls).map(Number).sort((a, b) => a - b);
    expect(calls).toEqual([...Array(python.meta.n_calls).keys()]);
    // the page marks drifts from the timeline and shows their detail from here
    const timeline = decodeTimeline(python.timeline);
    const drifts = calls.filter((call) => details.calls[call].drift);
    expect(drifts).toEqual(calls.filter((call) => timeline.drift[timeline.rowOf.get(call)]));
    expect(drifts).toHaveLength(python.meta.totals.drifts);
    for (const call of drifts) expect(details.calls[call].cause).toBe(python.meta.causes[timeline.cause[timeline.rowOf.get(call)]]);
    // content items carry a hash into the shared texts (a missing one would show as empty)
    const items = Object.values(details.calls).flatMap((d) => [...d.content.sent, ...d.content.context]);
    expect(items.length).toBeGreaterThan(python.meta.n_calls);
    expect(items.filter((item) => !(item.hash in details.texts))).toEqual([]);
  });
});
