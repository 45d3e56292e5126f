// @ts-check
/** The drift detail of the selected call: both sides of the first differing segment, token chips, cost. */
import { nameAt, stepCall, threadNames } from "../lib/data.js";
import { facts, h } from "../lib/dom.js";
import { splitDiff, truncate, visibleToken } from "../lib/escape.js";
import { formatMs, formatNumber, formatPercent, formatShare, formatTime, formatTokens, formatUsd, humanizeKey, isNumber } from "../lib/format.js";
import { detailMarkdown } from "../lib/markdown.js";
import { panel, viewError } from "./panel.js";

/**
 * @typedef {import("../lib/data.js").Meta} Meta
 * @typedef {import("../lib/data.js").Timeline} Timeline
 * @typedef {import("../lib/data.js").Costs} Costs
 * @typedef {{ label?: string | null, text?: string | null }} Side
 * @typedef {{ before?: string[], prev_after?: string[], current_after?: string[] }} Chips
 * @typedef {Record<string, any> & { call?: number, drift?: boolean, part?: string | null,
 *   label?: string | null, cause?: string | null, detail?: string | null, prev_common_tokens?: number | null,
 *   tokens_lost?: number | null, cost_usd?: number | null, prev?: Side | null, current?: Side | null,
 *   chips?: Chips | null, error?: string, message?: string }} Detail
 * @typedef {{ selected: number, detail: Detail | null, timeline: Timeline | null, costs: Costs | null, meta: Meta }} DetailState
 */

/** Keys the detail view lays out itself; any other key is listed as a plain fact. */
const KNOWN = new Set([
  "call", "drift", "input_tokens", "prefix_tokens", "new_tokens", "part", "position",
  "label", "cause", "detail", "prev_common_tokens", "tokens_lost", "cost_usd", "prev", "current", "chips",
  "error", "message", "segments", "segments_truncated", "content", "thread", "miss", "material",
]);

/** Keys the call summary shows when the timeline has the call. */
const SUMMARY_KEYS = new Set(["thread", "input_tokens", "prefix_tokens", "new_tokens", "billed_usd", "simulated_usd", "hit_ratio"]);

/**
 * Rebuild the detail body for the current selection.
 *
 * @param {Document} doc
 * @param {HTMLElement} body
 * @param {DetailState} state
 */
function renderDetail(doc, body, state) {
  const { selected, timeline } = state;
  if (!(selected >= 0)) {
    body.replaceChildren(
      h(doc, "p", {
        className: "cacheviz-panel__empty",
        text: "Click a call in the timeline, the shape map or the cost chart to see what changed.",
      }),
    );
    return;
  }
  /** @type {Node[]} */
  const out = [];
  const row = timeline?.rowOf.get(selected);
  if (timeline && row !== undefined) out.push(summary(doc, state, row));

  const detail = state.detail;
  if (!detail || detail.call !== selected) {
    out.push(h(doc, "p", { className: "cacheviz-detail__note", text: `Loading the detail of call ${selected}…` }));
  } else {
    if (detail.error) {
      out.push(h(doc, "p", { className: "cacheviz-detail__error", text: `Could not compute the detail: ${detail.error}` }));
    }
    if (detail.message) out.push(h(doc, "p", { className: "cacheviz-detail__note", text: String(detail.message) }));
    if (detail.miss && typeof detail.miss === "object") out.push(missPart(doc, detail.miss));
    if (detail.drift) {
      out.push(...driftParts(doc, detail, state.meta));
    } else if (!detail.error && !detail.message && !detail.miss) {
      out.push(
        h(doc, "p", {
          className: "cacheviz-detail__note",
          text: "No drift at this call: nothing its thread sent before was changed or removed.",
        }),
      );
    }
    const extra = extraFacts(detail, timeline !== null && row !== undefined);
    if (extra.length) out.push(facts(doc, "cacheviz-detail__facts", extra));
    if (detail.content && typeof detail.content === "object") out.push(contentBrowser(doc, detail.content));
    if (Array.isArray(detail.segments) && detail.segments.length) {
      out.push(segmentTable(doc, detail.segments, Number(detail.segments_truncated) || 0));
    }
  }
  body.replaceChildren(...out);
  scrollToMarks(body);
}

/**
 * Numbers of the call from the synced tables (there even before Python answers).
 *
 * @param {Document} doc
 * @param {DetailState} state
 * @param {number} row
 */
function summary(doc, state, row) {
  const t = /** @type {Timeline} */ (state.timeline);
  /** @type {[string, string][]} */
  const pairs = [
    ["call", String(t.call[row])],
    ["thread", nameAt(threadNames(state.meta), t.thread[row])],
  ];
  const ts = t.tsMs[row];
  if (isNumber(ts)) pairs.push(["time", formatTime(ts)]);
  pairs.push(
    ["input", formatTokens(t.input[row])],
    ["common prefix", `${formatTokens(t.prefix[row])} (${formatShare(t.prefix[row], t.input[row])})`],
    ["new", formatTokens(t.fresh[row])],
  );
  const hit = t.hitRatio[row];
  pairs.push(["hit rate (reported)", isNumber(hit) ? formatPercent(hit, 1) : "n/a"]);
  const costs = state.costs;
  const i = costs?.rowOf.get(Number(t.call[row]));
  if (costs && i !== undefined) {
    const target = state.meta.target;
    const under = target ? ` (${target.model ? `${target.provider}:${target.model}` : target.provider})` : "";
    // the provider's bill for this call beside the simulated cost (null: no usage or no price)
    const billed = costs.billed[i];
    const reported = isNumber(t.reportedRead[row]) || isNumber(hit);
    const why = reported ? "the model has no price" : "no usage reported";
    pairs.push(
      [`simulated cost${under}`, formatUsd(costs.cost[i])],
      ["billed", isNumber(billed) ? formatUsd(billed) : `— (${why})`],
      ["ideal", formatUsd(costs.ideal[i])],
      ["read / write / uncached", `${formatTokens(costs.read[i])} / ${formatTokens(costs.write[i])} / ${formatTokens(costs.uncached[i])}`],
    );
  }
  return facts(doc, "cacheviz-detail__summary", pairs);
}

/**
 * @param {Document} doc
 * @param {Detail} d
 * @param {Meta} meta
 * @returns {Node[]}
 */
function driftParts(doc, d, meta) {
  /** @type {[string, string | Node][]} */
  const pairs = [
    ["cause", h(doc, "span", { className: "cacheviz-detail__cause", text: d.cause ? String(d.cause) : "unknown" })],
  ];
  const where = [d.part, isNumber(d.position) ? `#${d.position}` : null].filter(Boolean).join(" ");
  if (d.label) pairs.push(["segment", truncate(String(d.label), 200)]);
  if (where) pairs.push(["part", where]);
  if (isNumber(d.prev_common_tokens)) pairs.push(["prefix breaks at token", formatTokens(d.prev_common_tokens)]);
  if (d.tokens_lost !== undefined) pairs.push(["tokens lost", formatTokens(d.tokens_lost)]);
  const target = meta.target;
  const under = target ? ` (${target.model ? `${target.provider}:${target.model}` : target.provider})` : "";
  if (d.cost_usd !== undefined) pairs.push([`drift cost${under}`, formatUsd(d.cost_usd)]);
  // a self-hosted target: this drift point's estimated prefill against the same call's with its prefix kept
  const prefill = (target?.prefill_drifts ?? []).find((p) => p.call === d.call);
  if (prefill && isNumber(prefill.prefill_factor)) {
    pairs.push([
      `prefill factor${under}`,
      `${formatNumber(prefill.prefill_factor, 1)}× (est. ${formatMs(prefill.prefill_ms)}; ${formatMs(prefill.prefill_ms_stable)} with the prefix kept)`,
    ]);
  }
  /** @type {Node[]} */
  const parts = [facts(doc, "cacheviz-detail__facts", pairs)];
  if (d.detail) parts.push(h(doc, "p", { className: "cacheviz-detail__note", text: String(d.detail) }));
  const chips = chipRows(doc, d.chips ?? null);
  if (chips) parts.push(chips);
  parts.push(sides(doc, d.prev ?? null, d.current ?? null));
  return parts;
}

/**
 * The tokens around the first differing one: shared tokens in neutral, then each side's
 * continuation highlighted.
 *
 * @param {Document} doc
 * @param {Chips | null} chips
 * @returns {HTMLElement | null}
 */
function chipRows(doc, chips) {
  if (!chips) return null;
  const before = chips.before ?? [];
  const prev = chips.prev_after ?? [];
  const current = chips.current_after ?? [];
  if (!before.length && !prev.length && !current.length) return null;
  /**
   * @param {string} label
   * @param {string[]} after
   * @param {"prev" | "current"} side
   */
  const row = (label, after, side) =>
    h(doc, "div", { className: "cacheviz-detail__chip-row" }, [
      h(doc, "span", { className: "cacheviz-detail__chip-label", text: label }),
      ...before.map((tok) => chip(doc, tok, "")),
      h(doc, "span", { className: "cacheviz-detail__divider", title: "first differing token" }),
      ...(after.length
        ? after.map((tok) => chip(doc, tok, `cacheviz-detail__chip--${side}`))
        : [h(doc, "span", { className: `cacheviz-detail__chip cacheviz-detail__chip--${side}`, text: "(end)" })]),
    ]);
  return h(doc, "div", { className: "cacheviz-detail__chips" }, [
    row("previous", prev, "prev"),
    row("this call", current, "current"),
  ]);
}

/**
 * @param {Document} doc
 * @param {unknown} token
 * @param {string} modifier
 */
function chip(doc, token, modifier) {
  const text = token === null || token === undefined ? "" : String(token);
  return h(doc, "span", {
    className: modifier ? `cacheviz-detail__chip ${modifier}` : "cacheviz-detail__chip",
    text: visibleToken(text),
    title: JSON.stringify(text),
  });
}

/**
 * Previous vs current text of the first differing segment, the differing middle marked.
 *
 * @param {Document} doc
 * @param {Side | null} prev
 * @param {Side | null} current
 */
export function sides(doc, prev, current) {
  const a = prev?.text ?? "";
  const b = current?.text ?? "";
  const diff = splitDiff(String(a), String(b));
  /**
   * @param {string} heading
   * @param {Side | null} side
   * @param {string} middle
   * @param {"prev" | "current"} kind
   */
  const column = (heading, side, middle, kind) => {
    const title = side?.label ? `${heading} · ${side.label}` : heading;
    const text = side
      ? h(doc, "pre", { className: "cacheviz-detail__text" }, [
          diff.prefix,
          h(doc, "mark", { className: `cacheviz-detail__mark cacheviz-detail__mark--${kind}`, text: middle }),
          diff.suffix,
        ])
      : h(doc, "p", { className: "cacheviz-detail__note", text: kind === "prev" ? "(no such segment before)" : "(segment removed)" });
    return h(doc, "div", { className: "cacheviz-detail__side" }, [
      h(doc, "p", { className: "cacheviz-detail__side-title", text: truncate(title, 300) }),
      text,
    ]);
  };
  return h(doc, "div", { className: "cacheviz-detail__sides" }, [
    column("previous call", prev, diff.aMiddle, "prev"),
    column("this call", current, diff.bMiddle, "current"),
  ]);
}

/**
 * Facts of the detail dict the layout above does not show (e.g. `model`).
 *
 * @param {Detail} detail
 * @param {boolean} haveSummary the timeline already shows the token numbers
 * @returns {[string, string][]}
 */
function extraFacts(detail, haveSummary) {
  /** @type {[string, string][]} */
  const out = [];
  for (const [key, value] of Object.entries(detail)) {
    if (value === null || value === undefined) continue;
    if (KNOWN.has(key) && !(SUMMARY_KEYS.has(key) && !haveSummary)) continue;
    out.push([humanizeKey(key), displayValue(value, key)]);
  }
  return out;
}

/**
 * @param {unknown} value
 * @param {string} [key] the detail's key (`*_usd` are dollars, `hit_ratio` a share)
 * @returns {string}
 */
function displayValue(value, key = "") {
  if (key.endsWith("_usd") && isNumber(value)) return formatUsd(value);
  if (key === "hit_ratio" && isNumber(value)) return formatPercent(value, 1);
  if (typeof value === "number") return Number.isInteger(value) ? formatTokens(value) : formatNumber(value, 6);
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (typeof value === "string") return truncate(value, 500);
  return truncate(JSON.stringify(value) ?? "", 500);
}

/**
 * Scroll each text box so its mark (the first difference) is in view.
 *
 * @param {HTMLElement} body
 */
function scrollToMarks(body) {
  const view = body.ownerDocument.defaultView;
  if (!view || typeof view.requestAnimationFrame !== "function") return;
  view.requestAnimationFrame(() => {
    for (const pre of body.querySelectorAll(".cacheviz-detail__text")) {
      const mark = /** @type {HTMLElement | null} */ (pre.querySelector(".cacheviz-detail__mark"));
      if (mark) pre.scrollTop = Math.max(0, mark.offsetTop - 48);
    }
  });
}

/**
 * The selected call's segments (label, part, tokens, offset, hash, status), as text cells.
 *
 * @param {Document} doc
 * @param {Array<Record<string, unknown>>} segments
 * @param {number} truncated segments left out (the list is capped by Python)
 * @returns {HTMLElement}
 */
export function segmentTable(doc, segments, truncated) {
  const columns = ["label", "part", "tokens", "token_offset", "status", "preview"];
  const head = h(doc, "tr", {}, columns.map((name) => h(doc, "th", { text: name.replace("_", " ") })));
  const rows = segments.map((segment) =>
    h(
      doc,
      "tr",
      { className: `cacheviz-detail__segment cacheviz-detail__segment--${String(segment.status ?? "")}` },
      columns.map((name) => {
        const value = segment[name];
        return h(doc, "td", { text: typeof value === "number" ? formatNumber(value) : String(value ?? "") });
      }),
    ),
  );
  const caption = truncated > 0 ? `segments of this call (${formatNumber(truncated)} more not shown)` : "segments of this call";
  return h(doc, "details", { className: "cacheviz-detail__segments" }, [
    h(doc, "summary", { text: caption }),
    h(doc, "table", {}, [h(doc, "thead", {}, [head]), h(doc, "tbody", {}, rows)]),
  ]);
}


/**
 * What the call sent: the segments past the common prefix (the new messages, tool calls
 * and tool results), then the system prompt and tool definitions when logged. Text only.
 *
 * @param {Document} doc
 * @param {Record<string, any>} content {sent, sent_more, context, context_more, unlogged_tokens}
 * @returns {HTMLElement}
 */
export function contentBrowser(doc, content) {
  const sent = Array.isArray(content.sent) ? content.sent : [];
  const context = Array.isArray(content.context) ? content.context : [];
  let sentTokens = 0;
  for (const item of sent) if (isNumber(item?.tokens)) sentTokens += item.tokens;
  /** @type {Node[]} */
  const parts = [];
  const more = (/** @type {unknown} */ n) => (Number(n) > 0 ? ` (+${formatNumber(Number(n))} more not listed)` : "");
  parts.push(
    h(doc, "details", { className: "cacheviz-content__sent", attrs: { open: "" } }, [
      h(doc, "summary", {
        text: sent.length
          ? `What this call sent past the common prefix: ${sent.length} segment${sent.length === 1 ? "" : "s"}, ${formatTokens(sentTokens)} tokens${more(content.sent_more)}`
          : "Nothing past the common prefix: this call re-sent what was cached.",
      }),
      ...sent.map((item) => contentItem(doc, item)),
    ]),
  );
  if (context.length) {
    parts.push(
      h(doc, "details", { className: "cacheviz-content__context" }, [
        h(doc, "summary", { text: `System prompt and tools as logged: ${context.length} segment${context.length === 1 ? "" : "s"}${more(content.context_more)}` }),
        ...context.map((item) => contentItem(doc, item)),
      ]),
    );
  }
  if (isNumber(content.unlogged_tokens) && content.unlogged_tokens > 0) {
    parts.push(
      h(doc, "p", {
        className: "cacheviz-detail__note",
        text: `≈${formatTokens(content.unlogged_tokens)} tokens of unlogged prefix (the transcript does not hold the system prompt and tool definitions; their size is inferred).`,
      }),
    );
  }
  return h(doc, "div", { className: "cacheviz-content" }, parts);
}

/**
 * @param {Document} doc
 * @param {Record<string, any>} item
 */
function contentItem(doc, item) {
  const bits = [item.part, item.role, isNumber(item.tokens) ? `${formatTokens(item.tokens)} tokens` : null, item.status && item.status !== "same" ? String(item.status) : null];
  return h(doc, "div", { className: "cacheviz-content__item" }, [
    h(doc, "span", { className: "cacheviz-content__label", text: truncate(String(item.label ?? ""), 200) }),
    h(doc, "span", { className: "cacheviz-content__meta", text: bits.filter(Boolean).join(" · ") }),
    h(doc, "pre", { text: String(item.text ?? "") }),
  ]);
}


/**
 * A miss the provider reported: it read less than the common prefix and its rules offered.
 *
 * @param {Document} doc
 * @param {Record<string, any>} miss
 */
function missPart(doc, miss) {
  /** @type {[string, string | Node][]} */
  const pairs = [
    ["miss", h(doc, "span", { className: "cacheviz-detail__cause", text: miss.cause ? String(miss.cause) : "unknown" })],
    ["expected cache read", formatTokens(miss.expected_read_tokens)],
    ["reported cache read", formatTokens(miss.reported_cache_read_tokens)],
    ["tokens not read", formatTokens(miss.shortfall_tokens)],
  ];
  if (miss.cost_usd !== undefined) pairs.push(["miss cost", formatUsd(miss.cost_usd)]);
  return h(doc, "div", { className: "cacheviz-detail__miss" }, [
    facts(doc, "cacheviz-detail__facts", pairs),
    miss.detail ? h(doc, "p", { className: "cacheviz-detail__note", text: String(miss.detail) }) : "",
  ]);
}

/**
 * The call detail panel, with buttons that step to the previous/next call or drift
 * among the shown calls.
 *
 * @param {import("./panel.js").ViewContext} ctx
 * @returns {import("./panel.js").View}
 */
export function createDetail(ctx) {
  const { state, doc } = ctx;
  const p = panel(doc, "Call detail", "", false);
  const nav = h(doc, "div", { className: "cacheviz-detail__nav" });
  p.head.append(nav);
  p.section.classList.add("cacheviz-detail");
  /** @param {1 | -1} step @param {boolean} driftsOnly */
  const stepper = (step, driftsOnly) => () =>
    state.timeline ? stepCall(state.timeline, state.rows, ctx.selected(), step, driftsOnly) : null;
  const buttons = /** @type {const} */ ([
    ["◀ drift", "previous drift or miss", stepper(-1, true)],
    ["◀ call", "previous call", stepper(-1, false)],
    ["call ▶", "next call", stepper(1, false)],
    ["drift ▶", "next drift or miss", stepper(1, true)],
  ]).map(([text, title, target]) => {
    const button = h(doc, "button", { className: "cacheviz-button", text, title, attrs: { type: "button" } });
    button.addEventListener("click", () => {
      const call = target();
      if (call !== null) ctx.select(call);
    });
    return { button, target };
  });
  nav.append(...buttons.map((b) => b.button));

  // "copy as markdown": the selected drift or miss, for a bug report
  const copy = h(doc, "button", {
    className: "cacheviz-button cacheviz-detail__copy",
    text: "copy as markdown",
    title: "Copy this call's drift or miss as Markdown (for a bug report or an issue)",
    attrs: { type: "button" },
  });
  const copied = h(doc, "span", { className: "cacheviz-detail__copied", attrs: { role: "status", "aria-live": "polite" } });
  const copyBox = h(doc, "div", { className: "cacheviz-detail__copybox" });
  nav.append(copy, copied);
  p.body.before(copyBox);
  /** The Markdown of the shown detail, or null (no drift or miss, or not loaded yet). */
  const markdown = () => {
    const detail = ctx.detail();
    return detail && detail.call === ctx.selected() ? detailMarkdown(detail, ctx.meta()) : null;
  };
  copy.addEventListener("click", () => {
    const text = markdown();
    if (text === null) return;
    const clipboard = doc.defaultView?.navigator?.clipboard;
    const fallback = () => {
      // no clipboard access (an insecure page, a denied permission): show it selected
      const area = /** @type {HTMLTextAreaElement} */ (
        h(doc, "textarea", { className: "cacheviz-detail__markdown", attrs: { readonly: "", rows: "8", "aria-label": "the call as Markdown" } })
      );
      area.value = text;
      copyBox.replaceChildren(area);
      area.select();
      copied.textContent = "the browser did not allow copying: the Markdown is selected below (Ctrl+C / ⌘C)";
    };
    if (!clipboard?.writeText) return fallback();
    clipboard.writeText(text).then(() => {
      copyBox.replaceChildren();
      copied.textContent = `copied call ${ctx.selected()} as Markdown`;
    }, fallback);
  });

  /** @type {number | null} */
  let drawnFor = null;
  function draw() {
    try {
      renderDetail(doc, p.body, {
        selected: ctx.selected(),
        detail: ctx.detail() ?? null,
        timeline: state.timeline,
        costs: state.costs,
        meta: ctx.meta(),
      });
      p.error.textContent = "";
    } catch (err) {
      viewError(p, "the drift detail", err);
    }
    for (const b of buttons) b.button.disabled = !state.timeline || b.target() === null;
    copy.disabled = markdown() === null;
    if (drawnFor !== ctx.selected()) {
      // another call: what was copied was the previous one's
      copied.textContent = "";
      copyBox.replaceChildren();
      drawnFor = ctx.selected();
    }
  }

  return { panel: p, chart: false, draw, showSelection: draw };
}
