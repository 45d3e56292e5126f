// @ts-check
/**
 * cacheviz's notebook inspector: an anywidget front end (`export default { render }`).
 *
 * Synced traits (the Python side is `cacheviz/ui/widget.py`):
 *
 * | trait           | dir    | read / written here                                        |
 * |-----------------|--------|------------------------------------------------------------|
 * | `_timeline`     | Py→JS  | read: Arrow IPC, one row per call                          |
 * | `_shape`        | Py→JS  | read: Arrow IPC, status runs per call on the token axis    |
 * | `_costs`        | Py→JS  | read: Arrow IPC, per-call cost under the target            |
 * | `meta`          | Py→JS  | read: totals, names, target, provider comparison           |
 * | `selected_call` | both   | read, and written on click (`set` + `save_changes`)        |
 * | `_detail`       | Py→JS  | read: the selected call's drift detail                     |
 * | `status`        | Py→JS  | read: a message ("simulating…" or an error)                |
 *
 * Custom message `{type: "append", meta}` with three Arrow buffers (`cacheviz/ui/live.py`):
 * the new calls' rows of `_timeline`, `_shape`, `_costs`, appended in place.
 *
 * UI-only state (the thread filter) stays here and is never synced.
 */
import { render, rememberAppend } from "./render.js";

/** @typedef {import("./render.js").Model} Model */

/** @type {import("@anywidget/types").AnyWidget<Model>} */
export default { initialize: ({ model }) => rememberAppend(model), render };
