// A view context as render.js builds it, over a synthetic session, for mounting one view
// module on its own (Plotly is mocked by each test file).
import { vi } from "vitest";
import { decodeCosts, decodeShape, decodeTimeline, filterRows } from "../../src/lib/data.js";
import { callTicks, clampWindow, positionsOf } from "../../src/lib/window.js";
import { dataView, makeSession } from "../fixtures/session.js";

/**
 * @param {Parameters<typeof makeSession>[0] & { filter?: { thread?: number, cause?: string, search?: string }, meta?: object }} [options]
 */
export function viewContext(options = {}) {
  const session = makeSession(options);
  const meta = { ...session.meta, ...(options.meta ?? {}) };
  const timeline = decodeTimeline(dataView(session.timeline));
  const filter = { thread: -1, cause: "", search: "", ...(options.filter ?? {}) };
  const rows = filterRows(timeline, meta, filter);
  const state = {
    ...filter,
    showCostless: false,
    window: clampWindow(null, rows.length),
    positions: positionsOf(timeline, rows),
    timeline,
    shape: decodeShape(dataView(session.shape)),
    costs: decodeCosts(dataView(session.costs)),
    rows,
    errors: {},
  };
  let selected = -1;
  const ctx = {
    doc: document,
    state,
    meta: () => meta,
    selected: () => selected,
    select: vi.fn((call) => {
      selected = call;
    }),
    selectedPosition: () => state.positions.get(selected) ?? -1,
    windowRows: () => state.rows.slice(state.window.start, state.window.end),
    figureOptions: () => ({ selected: ctx.selectedPosition(), offset: state.window.start, ticks: callTicks(timeline, state.rows, state.window) }),
    theme: () => ({ color: "#222", grid: "#ccc", font: "sans-serif" }),
    revision: () => "r",
    setWindow: vi.fn((w) => {
      state.window = clampWindow(w, state.rows.length);
    }),
    detail: () => null,
  };
  return { ctx, session, meta, timeline, state };
}
