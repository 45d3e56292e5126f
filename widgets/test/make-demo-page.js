// Write a self-contained report page for a look in a real browser (no server needed):
//
//   npm run build && npm run demo [-- --calls 2000 --threads 4 --out test/out/demo.html]
//   npm run demo -- --python test/fixtures/python-report.json --out test/out/python.html
//   chromium --headless --screenshot=test/out/demo.png --window-size=1200,2200 test/out/demo.html
//
// The page is built like `cacheviz/ui/report.py` builds it (CSP, escaped JSON, inlined
// static/report.js), with synthetic data full of script-injection payloads, and it puts
// the first-render times in the page title (`rendered: first chart N ms, all charts M ms`).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { embedJson, makeSession, reportDocument } from "./fixtures/session.js";

const here = dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({
  options: {
    calls: { type: "string", default: "2000" },
    threads: { type: "string", default: "4" },
    python: { type: "string" },
    out: { type: "string", default: resolve(here, "out", "demo.html") },
  },
});

const data = values.python
  ? JSON.parse(readFileSync(values.python, "utf8"))
  : reportDocument(makeSession({ calls: Number(values.calls), threads: Number(values.threads) }));
const bundle = readFileSync(resolve(here, "..", "..", "cacheviz", "static", "report.js"), "utf8")
  .replace(/<\/script/gi, "<\\/script")
  .replace(/<!--/g, "<\\!--");
const csp = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; font-src data:";
const timing = `
window.__cvStart = performance.now();
window.addEventListener("error", (e) => { document.title = "page error: " + e.message; });
document.addEventListener("DOMContentLoaded", () => {
  const parsed = Math.round(performance.now() - window.__cvStart);
  let first = 0;
  const tick = () => {
    const drawn = [...document.querySelectorAll(".cacheviz-panel__plot")].filter((p) => p.querySelector(".main-svg")).length;
    const now = Math.round(performance.now() - window.__cvStart);
    if (drawn >= 1 && !first) first = now;
    if (drawn >= 3) document.title = "rendered: first chart " + first + " ms, all charts " + now + " ms (bundle parsed " + parsed + " ms)";
    else requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
});`;
const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<title>cacheviz demo</title>
</head>
<body>
<div id="cacheviz-root"></div>
<script type="application/json" id="cacheviz-data">${embedJson(data)}</script>
<script>${timing}</script>
<script>${bundle}</script>
</body>
</html>
`;
mkdirSync(dirname(values.out), { recursive: true });
writeFileSync(values.out, html);
console.log(`wrote ${values.out} (${(html.length / 1e6).toFixed(2)} MB)`);
