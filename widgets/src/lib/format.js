// @ts-check
/** Number, money, time and percentage formatting (deterministic: en-US, UTC). */

const INTEGER = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const COMPACT = new Intl.NumberFormat("en-US", { notation: "compact", maximumFractionDigits: 1 });
// one formatter, reused: toLocaleString() builds a new one per call (slow over 2,000 calls)
const CENTS = new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });

/** @param {unknown} value @returns {value is number} */
export function isNumber(value) {
  return typeof value === "number" && Number.isFinite(value);
}

/**
 * A token count with thousands separators ("12,345"); "—" when missing.
 *
 * @param {number | null | undefined} value
 * @returns {string}
 */
export function formatTokens(value) {
  return isNumber(value) ? INTEGER.format(value) : "—";
}

/**
 * Milliseconds, whole and grouped ("1,064 ms"); "—" when missing.
 *
 * @param {number | null | undefined} value
 * @returns {string}
 */
export function formatMs(value) {
  return isNumber(value) ? `${INTEGER.format(Math.round(value))} ms` : "—";
}

/**
 * A token count in compact form ("12.3K") for tight places; "—" when missing.
 *
 * @param {number | null | undefined} value
 * @returns {string}
 */
export function formatCompact(value) {
  return isNumber(value) ? COMPACT.format(value) : "—";
}

/**
 * Dollars: cents for amounts of a dollar or more, three significant digits below
 * ("$0.00123"); "—" when missing (unpriced).
 *
 * @param {number | null | undefined} value
 * @returns {string}
 */
export function formatUsd(value) {
  if (!isNumber(value)) return "—";
  const sign = value < 0 ? "-" : "";
  const abs = Math.abs(value);
  if (abs === 0) return "$0";
  if (abs >= 1) {
    return `${sign}$${CENTS.format(abs)}`;
  }
  if (abs < 1e-6) return `${sign}<$0.000001`;
  return `${sign}$${Number(abs.toPrecision(3)).toString()}`;
}

/**
 * A ratio (0.452) as a percentage ("45.2%"); "—" when missing.
 *
 * @param {number | null | undefined} ratio
 * @param {number} [digits=1]
 * @returns {string}
 */
export function formatPercent(ratio, digits = 1) {
  if (!isNumber(ratio)) return "—";
  return `${(ratio * 100).toFixed(digits)}%`;
}

/**
 * `part / whole` as a percentage, "—" when the whole is zero or missing.
 *
 * @param {number | null | undefined} part
 * @param {number | null | undefined} whole
 * @returns {string}
 */
export function formatShare(part, whole) {
  if (!isNumber(part) || !isNumber(whole) || whole === 0) return "—";
  return formatPercent(part / whole);
}

/**
 * Epoch milliseconds as "2026-11-30 12:34:56Z" (UTC); "—" when missing.
 *
 * @param {number | null | undefined} ms
 * @returns {string}
 */
export function formatTime(ms) {
  if (!isNumber(ms)) return "—";
  const date = new Date(ms);
  if (Number.isNaN(date.getTime())) return "—";
  return `${date.toISOString().slice(0, 19).replace("T", " ")}Z`;
}

/**
 * Seconds as a short duration ("45s", "5m", "1h 30m", "2d 3h").
 *
 * @param {number | null | undefined} seconds
 * @returns {string}
 */
export function formatDuration(seconds) {
  if (!isNumber(seconds)) return "—";
  const s = Math.round(Math.abs(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) {
    const rest = s % 60;
    return rest ? `${Math.floor(s / 60)}m ${rest}s` : `${s / 60}m`;
  }
  if (s < 86400) {
    const rest = Math.floor((s % 3600) / 60);
    return rest ? `${Math.floor(s / 3600)}h ${rest}m` : `${Math.floor(s / 3600)}h`;
  }
  const rest = Math.floor((s % 86400) / 3600);
  return rest ? `${Math.floor(s / 86400)}d ${rest}h` : `${Math.floor(s / 86400)}d`;
}

/**
 * A plain number with up to `digits` decimals ("1.092").
 *
 * @param {number | null | undefined} value
 * @param {number} [digits=3]
 * @returns {string}
 */
export function formatNumber(value, digits = 3) {
  if (!isNumber(value)) return "—";
  return Number(value.toFixed(digits)).toString();
}

/**
 * A snake_case key as words ("tokens_lost" → "tokens lost").
 *
 * @param {string} key
 * @returns {string}
 */
export function humanizeKey(key) {
  return key.replace(/_/g, " ").trim();
}

/**
 * "1 call", "2 calls", "1,234 calls" (with thousands separators).
 *
 * @param {number} count
 * @param {string} one
 * @param {string} [many] default: `one` + "s"
 * @returns {string}
 */
export function plural(count, one, many) {
  return `${formatTokens(count)} ${count === 1 ? one : (many ?? `${one}s`)}`;
}

/**
 * Round tick values for a money axis from 0 to `max`: steps of 1, 2 or 5 × 10^k, at most
 * `count` + 1 of them, labelled like {@link formatUsd} but with no more digits than the
 * step needs ("$0.005", "$0.01", not "$0.0087").
 *
 * @param {number} max
 * @param {number} [count=5]
 * @returns {{ tickvals: number[], ticktext: string[] } | null} null when nothing to tick
 */
export function usdTicks(max, count = 5) {
  if (!isNumber(max) || max <= 0) return null;
  const raw = max / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? 10 * power;
  const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  const tickvals = [];
  const ticktext = [];
  for (let v = 0; v <= max + step * 1e-9; v += step) {
    const value = Number(v.toFixed(decimals + 2));
    tickvals.push(value);
    ticktext.push(`$${Number(value.toFixed(decimals)).toString()}`);
  }
  return { tickvals, ticktext };
}
