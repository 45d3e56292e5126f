// @ts-check
/** Arrow IPC bytes → plain column arrays (flechette), and the wire forms they arrive in. */
import { tableFromIPC } from "@uwdata/flechette";

/**
 * @typedef {ArrayLike<any>} ColumnArray
 * @typedef {{ numRows: number, columns: Record<string, ColumnArray> }} DecodedTable
 */

/**
 * Bytes from any form a binary trait can take: a `DataView` (anywidget), an
 * `ArrayBuffer`, a typed array, or a base64 string (the HTML report).
 *
 * @param {unknown} value
 * @returns {Uint8Array} empty for null/undefined
 */
export function toBytes(value) {
  if (value === null || value === undefined) return new Uint8Array(0);
  if (value instanceof Uint8Array) return value;
  if (typeof value === "string") return base64ToBytes(value);
  if (ArrayBuffer.isView(value)) {
    return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  }
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  throw new TypeError(`expected Arrow IPC bytes (DataView or base64 string), got ${describe(value)}`);
}

/**
 * Decode standard base64 (whitespace ignored).
 *
 * @param {string} text
 * @returns {Uint8Array}
 */
export function base64ToBytes(text) {
  const clean = text.replace(/\s+/g, "");
  if (clean === "") return new Uint8Array(0);
  const binary = atob(clean);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/**
 * Decode an Arrow IPC stream (or file) into columns.
 *
 * Empty input is an empty table (the traits start as `b""`). Every name in `required`
 * must be a column; other columns of `defaults` are filled with the default value when
 * absent, so the Python side can add columns later without breaking older front ends.
 *
 * @param {unknown} value bytes in any form {@link toBytes} accepts
 * @param {string} name the trait, for error messages
 * @param {string[]} required
 * @param {Record<string, unknown>} [defaults]
 * @returns {DecodedTable}
 */
export function decodeTable(value, name, required, defaults = {}) {
  const bytes = toBytes(value);
  if (bytes.byteLength === 0) return { numRows: 0, columns: emptyColumns([...required, ...Object.keys(defaults)]) };
  let table;
  try {
    // int64 arrives as numbers (useBigInt false): counts stay far below 2^53
    table = tableFromIPC(bytes, { useBigInt: false, useDate: false });
  } catch (err) {
    throw new Error(`\`${name}\` is not a readable Arrow IPC stream (${errorText(err)}).`);
  }
  /** @type {Record<string, ColumnArray>} */
  const columns = table.toColumns();
  const missing = required.filter((column) => !(column in columns));
  if (missing.length) {
    const have = Object.keys(columns).join(", ") || "none";
    throw new Error(
      `\`${name}\` lacks column(s) ${missing.map((m) => `\`${m}\``).join(", ")} (it has: ${have}).`,
    );
  }
  const numRows = table.numRows;
  for (const [column, fill] of Object.entries(defaults)) {
    if (!(column in columns)) columns[column] = new Array(numRows).fill(fill);
  }
  return { numRows, columns };
}

/** @param {string[]} names */
function emptyColumns(names) {
  /** @type {Record<string, ColumnArray>} */
  const out = {};
  for (const column of names) out[column] = [];
  return out;
}

/** @param {unknown} value */
function describe(value) {
  if (typeof value !== "object") return typeof value;
  return value === null ? "null" : value.constructor?.name ?? "object";
}

/**
 * @param {unknown} err
 * @returns {string}
 */
export function errorText(err) {
  if (err instanceof Error) return err.message;
  return String(err);
}
