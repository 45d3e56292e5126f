// @ts-check
/** Names and colours shared by the plots, the legend and the CSS. */

/** Run status codes of `_shape.status`, in code order. */
export const STATUS_NAMES = /** @type {const} */ (["same", "changed", "invalidated", "new", "unlogged"]);

/** What each status means, for legends and hover text. */
export const STATUS_HELP = [
  "inside the common prefix (cacheable)",
  "bytes differ from the previous call",
  "same bytes as before, but past the break",
  "not sent before",
  "unlogged prefix of a rebuilt request (size inferred)",
];

/** Colour-blind-safe palette (Okabe–Ito based). */
export const COLORS = {
  same: "#009e73",
  changed: "#d55e00",
  invalidated: "#e69f00",
  new: "#0072b2",
  unlogged: "#999999",
  drift: "#d55e00",
  idle: "#7f7f7f",
  cost: "#cc79a7",
  ideal: "#009e73",
  billed: "#000000",
  miss: "#a40000",
  reported: "#56b4e9",
  selection: "rgba(240, 200, 0, 0.28)",
};

/** @type {string[]} colour per status code */
export const STATUS_COLORS = [COLORS.same, COLORS.changed, COLORS.invalidated, COLORS.new, COLORS.unlogged];

export const UNLOGGED = 4;
