import { describe, expect, it } from "vitest";
import { escapeHtml, splitDiff, truncate, visibleToken } from "../src/lib/escape.js";
import { PAYLOADS } from "./fixtures/session.js";

describe("escapeHtml", () => {
  it.each([
    ["<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;"],
    ["<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"],
    ["</script><script>alert(1)</script>", "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"],
    ["<svg onload=alert(1)>", "&lt;svg onload=alert(1)&gt;"],
    ['"><a href="javascript:alert(1)">x</a>', "&#34;&gt;&lt;a href=&#34;javascript:alert(1)&#34;&gt;x&lt;/a&gt;"],
    ["Tom & Jerry's", "Tom &amp; Jerry&#39;s"],
    ["&lt; already escaped", "&amp;lt; already escaped"],
  ])("escapes %j", (input, expected) => {
    expect(escapeHtml(input)).toBe(expected);
  });

  it("leaves no markup characters in any payload", () => {
    for (const payload of PAYLOADS) {
      expect(escapeHtml(payload)).not.toMatch(/[<>"']/);
    }
  });

  it("turns null and undefined into empty text and stringifies the rest", () => {
    expect(escapeHtml(null)).toBe("");
    expect(escapeHtml(undefined)).toBe("");
    expect(escapeHtml(42)).toBe("42");
  });

  it("uses only entities Plotly decodes (no &quot;)", () => {
    // Plotly's pseudo-HTML knows amp, lt, gt, nbsp, … and numeric references, not quot
    const out = escapeHtml(`"'&<>`);
    expect(out).toBe("&#34;&#39;&amp;&lt;&gt;");
    expect(out).not.toContain("&quot;");
  });
});

describe("truncate", () => {
  it("keeps short text and cuts long text with an ellipsis", () => {
    expect(truncate("abc", 5)).toBe("abc");
    expect(truncate("abcdef", 4)).toBe("abc…");
    expect(truncate("abcdef", 4)).toHaveLength(4);
  });
});

describe("visibleToken", () => {
  it("makes whitespace visible and marks the empty token", () => {
    expect(visibleToken(" is")).toBe("·is");
    expect(visibleToken("\n\t")).toBe("↵⇥");
    expect(visibleToken("")).toBe("∅");
    expect(visibleToken(null)).toBe("∅");
  });
});

describe("splitDiff", () => {
  it("finds the differing middles between a common head and tail", () => {
    const d = splitDiff("Today is 2026-11-29. Be concise.", "Today is 2026-11-30. Be concise.");
    expect(d).toEqual({ prefix: "Today is 2026-11-", aMiddle: "29", bMiddle: "30", suffix: ". Be concise." });
  });

  it("handles pure insertions, deletions and identical texts", () => {
    expect(splitDiff("ab", "aXb")).toEqual({ prefix: "a", aMiddle: "", bMiddle: "X", suffix: "b" });
    expect(splitDiff("aXb", "ab")).toEqual({ prefix: "a", aMiddle: "X", bMiddle: "", suffix: "b" });
    expect(splitDiff("same", "same")).toEqual({ prefix: "same", aMiddle: "", bMiddle: "", suffix: "" });
    expect(splitDiff("", "new")).toEqual({ prefix: "", aMiddle: "", bMiddle: "new", suffix: "" });
  });

  it("never lets the tail overlap the head (repeated characters)", () => {
    const d = splitDiff("aaa", "aaaa");
    expect(d.prefix + d.aMiddle + d.suffix).toBe("aaa");
    expect(d.prefix + d.bMiddle + d.suffix).toBe("aaaa");
  });

  it("does not split a surrogate pair", () => {
    const d = splitDiff("x😀", "x😃");
    expect(d.prefix).toBe("x");
    expect(d.aMiddle).toBe("😀");
    expect(d.bMiddle).toBe("😃");
  });
});
