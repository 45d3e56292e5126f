// @ts-check
/**
 * The inspector's CSS, injected as a <style> element into the widget root (no separate
 * file to ship). Classes are `cacheviz-<block>__<element>`; colours follow JupyterLab's
 * theme variables with light fallbacks. Every rule is scoped under `.cacheviz-inspector`,
 * which also outranks the host's element rules (`.jp-OutputArea-output dt`, …).
 */
import { COLORS } from "../lib/constants.js";

export const CSS = `
.cacheviz-inspector {
  --cv-fg: var(--jp-ui-font-color1, #222);
  --cv-fg-muted: var(--jp-ui-font-color2, #666);
  --cv-bg: var(--jp-layout-color0, #fff);
  --cv-bg-alt: var(--jp-layout-color2, #f3f3f3);
  --cv-border: var(--jp-border-color2, #ddd);
  --cv-mono: var(--jp-code-font-family, ui-monospace, SFMono-Regular, Menlo, Consolas, monospace);
  --cv-changed: ${COLORS.changed};
  --cv-same: ${COLORS.same};
  --cv-new: ${COLORS.new};
  color: var(--cv-fg);
  background: var(--cv-bg);
  font-family: var(--jp-ui-font-family, system-ui, -apple-system, "Segoe UI", sans-serif);
  font-size: 13px;
  line-height: 1.4;
  display: flex;
  flex-direction: column;
  gap: 10px;
  min-width: 0;
}
.cacheviz-inspector *, .cacheviz-inspector *::before, .cacheviz-inspector *::after { box-sizing: border-box; }
/* hosts style bare elements (JupyterLab floats output-area dt/dd at 20%/80%): reset them */
.cacheviz-inspector dl { width: auto; overflow: visible; padding: 0; }
.cacheviz-inspector dl dt, .cacheviz-inspector dl dd { float: none; width: auto; padding: 0; font-weight: normal; }
.cacheviz-inspector__error {
  color: #a40000; background: #fdecea; border: 1px solid #f5c2c0; border-radius: 4px;
  padding: 8px 10px; white-space: pre-wrap;
}
.cacheviz-inspector .cacheviz-header { display: flex; flex-direction: column; gap: 6px; }
.cacheviz-inspector .cacheviz-header__title { display: flex; flex-wrap: wrap; align-items: baseline; gap: 8px; }
.cacheviz-inspector .cacheviz-header__path { font-weight: 600; font-size: 14px; word-break: break-all; }
.cacheviz-inspector .cacheviz-header__format { color: var(--cv-fg-muted); }
.cacheviz-inspector .cacheviz-header__badge {
  font-size: 11px; padding: 0 6px; border-radius: 8px; border: 1px solid var(--cv-border);
  color: var(--cv-fg-muted); white-space: nowrap;
}
.cacheviz-inspector .cacheviz-header__totals { display: flex; flex-wrap: wrap; gap: 4px 18px; margin: 0; }
.cacheviz-inspector .cacheviz-header__totals-item { display: flex; flex-direction: column; }
.cacheviz-inspector .cacheviz-header__totals dt { font-size: 11px; color: var(--cv-fg-muted); margin: 0; }
.cacheviz-inspector .cacheviz-header__totals dd { margin: 0; font-variant-numeric: tabular-nums; font-weight: 600; }
.cacheviz-inspector .cacheviz-header__controls { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 14px; }
.cacheviz-inspector .cacheviz-header__thread select { max-width: 28em; font: inherit; }
.cacheviz-inspector .cacheviz-header__selection { color: var(--cv-fg-muted); }
.cacheviz-inspector .cacheviz-header__status { font-style: italic; color: var(--cv-fg-muted); }
.cacheviz-inspector .cacheviz-header__status--error {
  font-style: normal; color: #a40000; background: #fdecea; border-radius: 4px; padding: 2px 8px;
}
.cacheviz-inspector .cacheviz-header__status:empty { display: none; }
.cacheviz-inspector .cacheviz-header__status--busy { font-style: normal; color: var(--cv-fg); }
.cacheviz-inspector .cacheviz-header__status--busy::before {
  content: ""; display: inline-block; width: 0.9em; height: 0.9em; margin-right: 0.4em; vertical-align: -0.1em;
  border: 2px solid currentColor; border-right-color: transparent; border-radius: 50%;
  animation: cacheviz-spin 0.8s linear infinite;
}
@keyframes cacheviz-spin { to { transform: rotate(360deg); } }
@media (prefers-reduced-motion: reduce) { .cacheviz-inspector .cacheviz-header__status--busy::before { animation: none; } }
.cacheviz-inspector .cacheviz-header__status--done {
  font-style: normal; color: #1e5b1e; background: #eaf5ea; border-radius: 4px; padding: 2px 8px;
}
/* while a re-simulation runs, the numbers it will replace are dimmed */
.cacheviz-inspector.cacheviz-inspector--busy .cacheviz-header__totals,
.cacheviz-inspector.cacheviz-inspector--busy .cacheviz-providers { opacity: 0.55; transition: opacity 0.2s; }
.cacheviz-inspector .cacheviz-detail__copied { font-size: 12px; color: var(--cv-fg-muted); }
.cacheviz-inspector .cacheviz-detail__markdown { width: 100%; font-family: var(--cv-mono); font-size: 12px; margin: 4px 0; }
.cacheviz-inspector .cacheviz-info { vertical-align: -0.1em; margin-left: 0.1em; color: var(--cv-fg-muted); }
.cacheviz-inspector .cacheviz-button {
  font: inherit; font-size: 12px; padding: 1px 8px; border-radius: 4px; cursor: pointer;
  border: 1px solid var(--cv-border); background: var(--cv-bg-alt); color: var(--cv-fg);
}
.cacheviz-inspector .cacheviz-button:disabled { opacity: 0.45; cursor: default; }
.cacheviz-inspector .cacheviz-panel { border: 1px solid var(--cv-border); border-radius: 6px; padding: 8px 10px; min-width: 0; }
.cacheviz-inspector .cacheviz-panel__head { display: flex; flex-wrap: wrap; align-items: baseline; gap: 4px 12px; margin-bottom: 4px; }
.cacheviz-inspector .cacheviz-panel__title { margin: 0; font-size: 13px; font-weight: 600; }
.cacheviz-inspector .cacheviz-panel__note { color: var(--cv-fg-muted); font-size: 12px; }
.cacheviz-inspector .cacheviz-panel__plot { width: 100%; min-height: 40px; }
.cacheviz-inspector .cacheviz-panel__empty { color: var(--cv-fg-muted); font-style: italic; padding: 6px 0; }
.cacheviz-inspector .cacheviz-panel__empty:empty { display: none; }
.cacheviz-inspector .cacheviz-panel__error {
  color: #a40000; background: #fdecea; border-radius: 4px; padding: 6px 8px; margin: 4px 0; white-space: pre-wrap;
}
.cacheviz-inspector .cacheviz-panel__error:empty { display: none; }
.cacheviz-inspector .cacheviz-detail__nav { display: flex; flex-wrap: wrap; gap: 6px; margin-left: auto; }
.cacheviz-inspector .cacheviz-detail__summary, .cacheviz-inspector .cacheviz-detail__facts { display: flex; flex-wrap: wrap; gap: 4px 18px; margin: 4px 0 8px; }
.cacheviz-inspector .cacheviz-detail__summary-item, .cacheviz-inspector .cacheviz-detail__facts-item { display: flex; flex-direction: column; min-width: 0; }
.cacheviz-inspector .cacheviz-detail__summary dt, .cacheviz-inspector .cacheviz-detail__facts dt { font-size: 11px; color: var(--cv-fg-muted); margin: 0; }
.cacheviz-inspector .cacheviz-detail__summary dd, .cacheviz-inspector .cacheviz-detail__facts dd {
  margin: 0; font-variant-numeric: tabular-nums; overflow-wrap: anywhere;
}
.cacheviz-inspector .cacheviz-detail__cause {
  display: inline-block; font-weight: 600; color: #fff; background: var(--cv-changed);
  border-radius: 8px; padding: 0 8px;
}
.cacheviz-inspector .cacheviz-detail__note { color: var(--cv-fg-muted); font-style: italic; margin: 4px 0; }
.cacheviz-inspector .cacheviz-detail__error { color: #a40000; margin: 4px 0; }
.cacheviz-inspector .cacheviz-detail__sides { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 10px; }
@media (max-width: 640px) { .cacheviz-inspector .cacheviz-detail__sides { grid-template-columns: minmax(0, 1fr); } }
.cacheviz-inspector .cacheviz-detail__side { min-width: 0; }
.cacheviz-inspector .cacheviz-detail__side-title { font-size: 12px; color: var(--cv-fg-muted); margin: 0 0 2px; overflow-wrap: anywhere; }
.cacheviz-inspector .cacheviz-detail__text {
  font-family: var(--cv-mono); font-size: 12px; white-space: pre-wrap; overflow-wrap: anywhere;
  max-height: 18em; overflow: auto; margin: 0; padding: 6px 8px;
  background: var(--cv-bg-alt); border: 1px solid var(--cv-border); border-radius: 4px;
}
.cacheviz-inspector .cacheviz-detail__text { position: relative; }
.cacheviz-inspector .cacheviz-detail__mark { border-radius: 2px; color: inherit; }
.cacheviz-inspector .cacheviz-detail__mark:empty { border-left: 2px solid var(--cv-changed); margin: 0 1px; }
.cacheviz-inspector .cacheviz-detail__mark--prev { background: rgba(213, 94, 0, 0.25); text-decoration: line-through rgba(213, 94, 0, 0.6); }
.cacheviz-inspector .cacheviz-detail__mark--current { background: rgba(0, 158, 115, 0.25); }
.cacheviz-inspector .cacheviz-detail__chips { display: flex; flex-direction: column; gap: 4px; margin: 8px 0 4px; }
.cacheviz-inspector .cacheviz-detail__chip-row { display: flex; flex-wrap: wrap; align-items: center; gap: 3px; }
.cacheviz-inspector .cacheviz-detail__chip-label { width: 5.5em; font-size: 11px; color: var(--cv-fg-muted); }
.cacheviz-inspector .cacheviz-detail__chip {
  font-family: var(--cv-mono); font-size: 11px; white-space: pre; padding: 0 4px; border-radius: 3px;
  border: 1px solid var(--cv-border); background: var(--cv-bg-alt); max-width: 16em; overflow: hidden; text-overflow: ellipsis;
}
.cacheviz-inspector .cacheviz-detail__chip--prev { background: rgba(213, 94, 0, 0.18); border-color: rgba(213, 94, 0, 0.55); }
.cacheviz-inspector .cacheviz-detail__chip--current { background: rgba(0, 158, 115, 0.18); border-color: rgba(0, 158, 115, 0.55); }
.cacheviz-inspector .cacheviz-detail__divider { width: 2px; align-self: stretch; background: var(--cv-changed); margin: 0 3px; }
.cacheviz-inspector .cacheviz-providers__target { display: flex; flex-wrap: wrap; gap: 4px 18px; margin: 2px 0 6px; }
.cacheviz-inspector .cacheviz-providers__target-item { display: flex; flex-direction: column; }
.cacheviz-inspector .cacheviz-providers__target dt { font-size: 11px; color: var(--cv-fg-muted); margin: 0; }
.cacheviz-inspector .cacheviz-providers__target dd { margin: 0; font-variant-numeric: tabular-nums; overflow-wrap: anywhere; }
.cacheviz-inspector .cacheviz-providers__table { border-collapse: collapse; width: 100%; margin-top: 6px; font-size: 12px; }
.cacheviz-inspector .cacheviz-providers__table th, .cacheviz-inspector .cacheviz-providers__table td {
  text-align: right; padding: 2px 8px; border-bottom: 1px solid var(--cv-border); white-space: nowrap;
}
.cacheviz-inspector .cacheviz-providers__table th:first-child, .cacheviz-inspector .cacheviz-providers__table td:first-child { text-align: left; white-space: normal; overflow-wrap: anywhere; }
.cacheviz-inspector .cacheviz-providers__table th { font-weight: 600; color: var(--cv-fg-muted); }
.cacheviz-inspector .cacheviz-providers__table td { font-variant-numeric: tabular-nums; }
.cacheviz-inspector .cacheviz-providers__row--current td { font-weight: 600; background: rgba(240, 200, 0, 0.14); }
.cacheviz-inspector .cacheviz-providers__wrap { overflow-x: auto; }
.cacheviz-inspector .cacheviz-providers__table td.cacheviz-providers__row-error { text-align: left; white-space: normal; }
.cacheviz-inspector .cacheviz-providers__row-error { color: #a40000; overflow-wrap: anywhere; }
.cacheviz-inspector p.cacheviz-providers__row-error { margin: 4px 0; font-size: 12px; }

.cacheviz-inspector .cacheviz-detail__segments { margin-top: 8px; font-size: 12px; }
.cacheviz-inspector .cacheviz-detail__segments summary { cursor: pointer; color: #555; }
.cacheviz-inspector .cacheviz-detail__segments table { border-collapse: collapse; margin-top: 4px; }
.cacheviz-inspector .cacheviz-detail__segments th,
.cacheviz-inspector .cacheviz-detail__segments td { padding: 1px 8px; text-align: left; font-family: ui-monospace, monospace; }
.cacheviz-inspector .cacheviz-detail__segment--changed td { background: #fdebd3; }
.cacheviz-inspector .cacheviz-detail__segment--invalidated td { background: #fdf6d8; }
.cacheviz-inspector .cacheviz-providers__warning {
  margin: 4px 0; padding: 4px 8px; border-left: 3px solid #e69f00; background: var(--cv-bg-alt);
}
.cacheviz-inspector .cacheviz-shape .cacheviz-panel__plot { max-height: 560px; overflow-y: auto; }
.cacheviz-inspector .cacheviz-overview .cacheviz-panel__plot { min-height: 110px; }
.cacheviz-inspector .cacheviz-header__controls input[type="search"] { width: 14em; }
.cacheviz-inspector .cacheviz-header__target { display: flex; flex-wrap: wrap; gap: 0.4em 1em; margin: 0.3em 0; }
.cacheviz-inspector .cacheviz-header__target[hidden], .cacheviz-inspector .cacheviz-header__found[hidden] { display: none; }
.cacheviz-inspector .cacheviz-header__found { max-height: 14em; overflow-y: auto; margin: 0.3em 0; font-size: 0.9em; }
.cacheviz-inspector .cacheviz-header__found-item { display: block; width: 100%; text-align: left; background: none; border: 0; border-bottom: 1px solid rgba(128,128,128,0.2); padding: 0.2em 0.3em; color: inherit; font: inherit; cursor: pointer; }
.cacheviz-inspector .cacheviz-header__found-item:hover { background: rgba(128,128,128,0.12); }
.cacheviz-inspector .cacheviz-header__found-text { opacity: 0.75; font-family: monospace; }
.cacheviz-inspector .cacheviz-content { display: flex; flex-direction: column; gap: 4px; }
.cacheviz-inspector .cacheviz-content details { border: 1px solid var(--cv-border); border-radius: 4px; padding: 2px 6px; }
.cacheviz-inspector .cacheviz-content summary { cursor: pointer; }
.cacheviz-inspector .cacheviz-content__item { margin: 4px 0; }
.cacheviz-inspector .cacheviz-content__label { font-weight: 600; }
.cacheviz-inspector .cacheviz-content__meta { color: var(--cv-fg-muted); font-size: 11px; margin-left: 6px; }
.cacheviz-inspector .cacheviz-content pre {
  margin: 2px 0; max-height: 180px; overflow: auto; white-space: pre-wrap; word-break: break-word;
  font-family: var(--cv-mono); font-size: 12px; background: var(--cv-bg-alt); padding: 4px 6px;
}
`;
