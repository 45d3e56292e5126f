// @ts-check
/**
 * The selected drift or miss as Markdown, for a bug report ("copy as markdown" in the
 * call detail): what broke the cache, where, what it cost, and both sides of the first
 * difference as fenced excerpts. Texts are the detail's, already redacted by Python.
 */
import { splitDiff, truncate } from "./escape.js";
import { formatTokens, formatUsd, isNumber } from "./format.js";

/** Characters of context kept on each side of the first difference. */
const CONTEXT = 240;
/** At most this many characters of each side's differing part. */
const MIDDLE = 800;

/**
 * `text` as inline code whatever backticks it holds (CommonMark: a longer fence).
 *
 * @param {unknown} value
 * @param {number} [limit]
 */
export function inlineCode(value, limit = 200) {
  const text = truncate(String(value ?? "").replace(/\s+/g, " "), limit);
  const runs = text.match(/`+/g) ?? [];
  const fence = "`".repeat(Math.max(0, ...runs.map((r) => r.length)) + 1);
  const pad = text.startsWith("`") || text.endsWith("`") ? " " : "";
  return `${fence}${pad}${text}${pad}${fence}`;
}

/**
 * `text` as a fenced code block whose fence no line of it can close.
 *
 * @param {string} text
 */
export function fenced(text) {
  const runs = text.match(/`{3,}/g) ?? [];
  const fence = "`".repeat(Math.max(3, ...runs.map((r) => r.length + 1)));
  return `${fence}text\n${text}\n${fence}`;
}

/**
 * The part of both sides around their first difference: some shared text before, the
 * differing middles (cut), some shared text after.
 *
 * @param {string} a
 * @param {string} b
 * @returns {[string, string]}
 */
export function excerpts(a, b) {
  const { prefix, aMiddle, bMiddle, suffix } = splitDiff(a, b);
  const head = prefix.length > CONTEXT ? `…${prefix.slice(prefix.length - CONTEXT)}` : prefix;
  const tail = suffix.length > CONTEXT ? `${suffix.slice(0, CONTEXT)}…` : suffix;
  return [head + truncate(aMiddle, MIDDLE) + tail, head + truncate(bMiddle, MIDDLE) + tail];
}

/**
 * The drift and/or miss of `detail` as Markdown, or null when the call has neither.
 *
 * @param {import("../views/detail.js").Detail} detail
 * @param {import("./data.js").Meta} meta
 * @returns {string | null}
 */
export function detailMarkdown(detail, meta) {
  const miss = detail.miss && typeof detail.miss === "object" ? detail.miss : null;
  if (!detail.drift && !miss) return null;
  const call = detail.call;
  const what = [detail.drift ? `drift (${detail.cause ?? "unknown cause"})` : null, miss ? `miss (${miss.cause ?? "unknown cause"})` : null]
    .filter(Boolean)
    .join(" and ");
  const target = meta.target;
  const under = target ? (target.model ? `${target.provider}:${target.model}` : String(target.provider)) : null;
  const lines = [`### cacheviz: ${what} at call ${call}`, ""];
  const session = [meta.path ? inlineCode(meta.path) : "session", meta.format ? `(${meta.format})` : ""].filter(Boolean).join(" ");
  lines.push(`- session: ${session}`);
  const about = [`call ${call}`];
  if (detail.thread) about.push(`thread ${inlineCode(detail.thread, 80)}`);
  if (detail.model) about.push(`model ${inlineCode(detail.model, 80)}`);
  lines.push(`- ${about.join(" · ")}`);
  if (detail.drift) {
    const where = [];
    if (detail.label) where.push(`segment ${inlineCode(detail.label)}`);
    const part = [detail.part, isNumber(detail.position) ? `#${detail.position}` : null].filter(Boolean).join(" ");
    if (part) where.push(`in ${part}`);
    lines.push(`- drift: **${detail.cause ?? "unknown"}**${where.length ? `, ${where.join(" ")}` : ""}`);
    const numbers = [];
    if (isNumber(detail.prev_common_tokens)) numbers.push(`the prefix breaks at token ${formatTokens(detail.prev_common_tokens)}`);
    if (isNumber(detail.tokens_lost)) numbers.push(`${formatTokens(detail.tokens_lost)} tokens lost`);
    if (isNumber(detail.cost_usd)) numbers.push(`drift cost ${formatUsd(detail.cost_usd)}${under ? ` (simulated, ${under})` : ""}`);
    if (numbers.length) lines.push(`- ${numbers.join("; ")}`);
    if (detail.detail) lines.push(`- ${truncate(String(detail.detail).replace(/\s+/g, " "), 500)}`);
  }
  if (miss) {
    const numbers = [
      `expected cache read ${formatTokens(miss.expected_read_tokens)}`,
      `reported ${formatTokens(miss.reported_cache_read_tokens)}`,
      `${formatTokens(miss.shortfall_tokens)} tokens not read`,
    ];
    if (isNumber(miss.cost_usd)) numbers.push(`miss cost ${formatUsd(miss.cost_usd)}`);
    lines.push(`- miss: **${miss.cause ?? "unknown"}**; ${numbers.join("; ")}`);
    if (miss.detail) lines.push(`- ${truncate(String(miss.detail).replace(/\s+/g, " "), 500)}`);
  }
  if (detail.drift && (detail.prev || detail.current)) {
    const [a, b] = excerpts(String(detail.prev?.text ?? ""), String(detail.current?.text ?? ""));
    /** @param {string} heading @param {import("../views/detail.js").Side | null | undefined} side @param {string} text */
    const side = (heading, side, text) => {
      const title = side?.label ? `${heading} · ${inlineCode(side.label)}` : heading;
      return side ? ["", `**${title}**`, "", fenced(text)] : ["", `**${heading}**: (no such segment)`];
    };
    lines.push(...side("previous call", detail.prev, a), ...side("this call", detail.current, b));
  }
  return `${lines.join("\n")}\n`;
}
