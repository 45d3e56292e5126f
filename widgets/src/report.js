// @ts-check
/**
 * Entry of `static/report.js`, built as an IIFE (no `import`) so the HTML report can
 * inline it in a `<script>` element. See `report-app.js`.
 */
import { boot } from "./report-app.js";

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => boot(document));
else boot(document);
