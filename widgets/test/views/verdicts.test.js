// @vitest-environment happy-dom
// Issue 28: the provider's own verdicts in the header: how often cacheviz agrees, and
// each disagreement with both readings.
import { describe, expect, it } from "vitest";

import { createHeader } from "../../src/views/header.js";
import { viewContext } from "./context.js";

function render(verdicts, extra = {}) {
  const { ctx, state } = viewContext({ calls: 12, usage: true });
  const meta = { ...ctx.meta(), verdicts };
  const header = createHeader(document, { onThread() {}, onClear() {} });
  header.update({ meta, timeline: state.timeline, costs: state.costs, rows: state.rows, thread: -1, selected: -1, ...extra });
  const facts = {};
  for (const item of header.el.querySelectorAll(".cacheviz-header__totals dt")) facts[item.textContent.trim()] = item.nextElementSibling.textContent.trim();
  return { el: header.el, facts };
}

describe("provider verdicts in the header", () => {
  it("shows nothing when no call asked for a verdict", () => {
    const { el, facts } = render(null);
    expect(facts["provider verdicts"]).toBeUndefined();
    expect(el.querySelector(".cacheviz-header__disagreements")).toBeNull();
  });

  it("gives the agreement rate and lists each disagreement with both readings", () => {
    const verdicts = {
      compared: 4,
      agree: 3,
      agree_rate: 0.75,
      populated: 5,
      disagreements: [
        { call: 7, provider: "tools_changed", provider_missed_tokens: 12000, cacheviz: "no change found", detail: "the request is logged byte-exact: its tools did not change" },
      ],
    };
    const { el, facts } = render(verdicts);
    expect(facts["provider verdicts"]).toBe("cacheviz agrees on 3 of 4 compared (75%)");
    const list = el.querySelector(".cacheviz-header__disagreements");
    expect(list.querySelector("summary").textContent).toBe("1 disagreement with the provider's verdict");
    const item = list.querySelector("li").textContent;
    expect(item).toContain("call 7: the provider says tools_changed (12,000 tokens missed)");
    expect(item).toContain("cacheviz reads no change found: the request is logged byte-exact");
  });

  it("lists no disagreement when cacheviz agrees on all", () => {
    const { el, facts } = render({ compared: 2, agree: 2, agree_rate: 1, populated: 2, disagreements: [] });
    expect(facts["provider verdicts"]).toBe("cacheviz agrees on 2 of 2 compared (100%)");
    expect(el.querySelector(".cacheviz-header__disagreements")).toBeNull();
  });
});
