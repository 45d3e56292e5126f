// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { segmentTable } from "../src/views/detail.js";
import { PAYLOADS } from "./fixtures/session.js";

describe("segmentTable", () => {
  it("lists the call's segments as text, payloads included", () => {
    const segments = PAYLOADS.map((payload, i) => ({
      label: payload,
      part: "messages",
      tokens: 10 * (i + 1),
      token_offset: 100 * i,
      hash: `h${i}`,
      status: i === 0 ? "changed" : "same",
    }));
    const table = segmentTable(document, segments, 7);
    document.body.replaceChildren(table);
    const cells = [...table.querySelectorAll("tbody tr")].map((row) => row.firstChild.textContent);
    expect(cells).toEqual(PAYLOADS);
    expect(table.querySelectorAll("img, script, svg, iframe").length).toBe(0);
    expect(table.querySelector("summary").textContent).toContain("7 more not shown");
    expect(table.querySelector("tbody tr").className).toContain("cacheviz-detail__segment--changed");
  });
});
