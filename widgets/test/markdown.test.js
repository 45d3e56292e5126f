import { describe, expect, it } from "vitest";
import { detailMarkdown, excerpts, fenced, inlineCode } from "../src/lib/markdown.js";

const meta = { path: "runs/a.jsonl", format: "claude_code", target: { provider: "anthropic", model: "claude-sonnet-4-5" } };

describe("detailMarkdown", () => {
  it("writes a drift: cause, where, numbers, both sides around the difference", () => {
    const before = "x".repeat(1000) + "Today is Monday." + "y".repeat(1000);
    const after = "x".repeat(1000) + "Today is Tuesday." + "y".repeat(1000);
    const md = detailMarkdown(
      {
        call: 7, drift: true, cause: "timestamp", label: "system#0", part: "system", position: 0,
        prev_common_tokens: 1234, tokens_lost: 5000, cost_usd: 0.0123, thread: "main", model: "claude-sonnet-4-5",
        detail: "a date in the system prompt changed",
        prev: { label: "system#0", text: before }, current: { label: "system#0", text: after },
      },
      meta,
    );
    expect(md.split("\n").slice(0, 7)).toEqual([
      "### cacheviz: drift (timestamp) at call 7",
      "",
      "- session: `runs/a.jsonl` (claude_code)",
      "- call 7 · thread `main` · model `claude-sonnet-4-5`",
      "- drift: **timestamp**, segment `system#0` in system #0",
      "- the prefix breaks at token 1,234; 5,000 tokens lost; drift cost $0.0123 (simulated, anthropic:claude-sonnet-4-5)",
      "- a date in the system prompt changed",
    ]);
    // 240 shared characters before the first difference ("Mon" / "Tues"), 240 after it
    const head = "x".repeat(231) + "Today is ";
    const tail = "day." + "y".repeat(236);
    expect(md).toContain(`**previous call · \`system#0\`**\n\n\`\`\`text\n…${head}Mon${tail}…\n\`\`\``);
    expect(md).toContain(`**this call · \`system#0\`**\n\n\`\`\`text\n…${head}Tues${tail}…\n\`\`\``);
    expect(md.length).toBeLessThan(2000); // excerpts, not the whole segments
  });

  it("writes a miss, and nothing for a call with neither", () => {
    const md = detailMarkdown(
      { call: 3, drift: false, miss: { cause: "ttl_expired", expected_read_tokens: 9000, reported_cache_read_tokens: 0, shortfall_tokens: 9000, cost_usd: 0.03 } },
      meta,
    );
    expect(md).toContain("### cacheviz: miss (ttl_expired) at call 3");
    expect(md).toContain("- miss: **ttl_expired**; expected cache read 9,000; reported 0; 9,000 tokens not read; miss cost $0.03");
    expect(md).not.toContain("```");
    expect(detailMarkdown({ call: 2, drift: false }, meta)).toBeNull();
  });

  it("keeps backticks in the data from breaking out of code", () => {
    expect(inlineCode("a `b` c")).toBe("``a `b` c``");
    expect(inlineCode("`x")).toBe("`` `x ``");
    expect(fenced("```\nrm -rf /\n```")).toBe("````text\n```\nrm -rf /\n```\n````");
    const md = detailMarkdown({ call: 1, drift: true, cause: "c", prev: { text: "```\na" }, current: { text: "```\nb" } }, meta);
    expect(md).toContain("````text\n```\na\n````");
  });
});

describe("excerpts", () => {
  it("keeps the shared text short and the differing parts", () => {
    expect(excerpts("abcXdef", "abcYdef")).toEqual(["abcXdef", "abcYdef"]);
    const [a] = excerpts("s".repeat(300) + "A" + "e".repeat(300), "s".repeat(300) + "B" + "e".repeat(300));
    expect(a).toBe(`…${"s".repeat(240)}A${"e".repeat(240)}…`);
  });
});
