// Build the front end into ../cacheviz/static/ (committed, so installs need no Node):
//
//   plotly.js     plotly, once, as a plain script that puts it on `globalThis.__cachevizPlotly`
//                 (evaluated once per page however many inspectors it holds)
//   inspector.js  the anywidget ESM (`src/inspector.js`), plotly left out
//   report.js     the HTML report's script (`src/report.js`, an IIFE), plotly left out
//   loader.js     every widget's `_esm` (`src/loader.js`, ~1.6 kB): it loads
//                 plotly.js + inspector.js, sent once per kernel, once per page
//                 (`cacheviz/ui/_frontend.py`)
//
// The Python side joins plotly.js before either entry (`cacheviz/static/__init__.py`):
// the package carries plotly once, and the widget's ESM and the report stay self-contained
// (nothing is fetched). Output is deterministic: two builds give identical bytes (the
// build-freshness check in `make test` relies on it).
//
//   node build.mjs          build the four files
//   node build.mjs --watch  rebuild inspector.js unminified on change (with a source map)
import { build, context } from "esbuild";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const out = (name) => fileURLToPath(new URL(`../cacheviz/static/${name}`, import.meta.url));
const PLOTLY = "plotly.js-basic-dist-min";
const GLOBAL = "__cachevizPlotly";

const common = {
  absWorkingDir: here,
  bundle: true,
  minify: true,
  define: { "define.amd": "false" },
  logLevel: "warning",
};

/** `import Plotly from "plotly.js-basic-dist-min"` reads the one plotly.js loaded first. */
const plotlyFromGlobal = {
  name: "plotly-from-global",
  setup(b) {
    b.onResolve({ filter: /^plotly\.js-basic-dist-min$/ }, (args) => ({ path: args.path, namespace: "plotly-global" }));
    b.onLoad({ filter: /.*/, namespace: "plotly-global" }, () => ({
      loader: "js",
      contents:
        `const Plotly = globalThis.${GLOBAL};\n` +
        `if (!Plotly) throw new Error("plotly is not loaded: cacheviz/static/plotly.js must run before this script (see cacheviz/static/__init__.py)");\n` +
        "export default Plotly;\n",
    }));
  },
};

const plotly = {
  ...common,
  stdin: {
    contents: `if (!globalThis.${GLOBAL}) globalThis.${GLOBAL} = require("${PLOTLY}");\n`,
    resolveDir: here,
    sourcefile: "plotly-global.js",
  },
  format: "iife",
  outfile: out("plotly.js"),
};
const inspector = { ...common, entryPoints: ["src/inspector.js"], format: "esm", plugins: [plotlyFromGlobal], outfile: out("inspector.js") };
const loader = { ...common, entryPoints: ["src/loader.js"], format: "esm", outfile: out("loader.js") };
const report = { ...common, entryPoints: ["src/report.js"], format: "iife", plugins: [plotlyFromGlobal], outfile: out("report.js") };

if (process.argv.includes("--watch")) {
  const ctx = await context({ ...inspector, minify: false, sourcemap: "inline" });
  await ctx.watch();
  console.log("watching src/ → cacheviz/static/inspector.js (re-run the notebook cell to load it)");
} else {
  await Promise.all([build(plotly), build(inspector), build(report), build(loader)]);
}
