// @ts-check
/**
 * The kernel-less HTML report: the inspector's views over data embedded in the page.
 *
 * It reads `<script type="application/json" id="cacheviz-data">` ({timeline, shape,
 * costs: base64 Arrow IPC, meta, details: {"<call>": detail}}) and renders into
 * `#cacheviz-root` (created at the end of <body> when absent) through an in-memory model.
 */
import { render, showFatal } from "./render.js";
import { reportModel } from "./lib/memory-model.js";

const DATA_ID = "cacheviz-data";
const ROOT_ID = "cacheviz-root";
const HINT = "The report file may be truncated or written by another cacheviz version; write it again with `cacheviz report`.";

/**
 * Render the report of `doc`.
 *
 * @param {Document} doc
 * @returns {(() => void) | null} cleanup, or null when it failed (the error is shown)
 */
export function boot(doc) {
  let root = doc.getElementById(ROOT_ID);
  if (!root) {
    root = doc.createElement("div");
    root.id = ROOT_ID;
    doc.body.append(root);
  }
  try {
    const script = doc.getElementById(DATA_ID);
    if (!script) throw new Error(`the page has no <script id="${DATA_ID}"> holding the report's data`);
    let data;
    try {
      data = JSON.parse(script.textContent ?? "");
    } catch (err) {
      throw new Error(`the report's data is not valid JSON (${err instanceof Error ? err.message : err})`);
    }
    return render({ model: reportModel(data), el: root }, HINT);
  } catch (err) {
    showFatal(root, err, HINT);
    return null;
  }
}
