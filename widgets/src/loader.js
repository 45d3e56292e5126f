// @ts-check
/**
 * Every cacheviz widget's `_esm` (built into `cacheviz/static/loader.js`): the loader of
 * `lib/loader.js`, its default export only (named exports make anywidget warn).
 */
export { default } from "./lib/loader.js";
