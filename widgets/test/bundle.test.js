import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

// `npm run build` writes these; the checks are skipped when they have not been built yet.
const STATIC = new URL("../../cacheviz/static/", import.meta.url);
const bundles = ["inspector.js", "report.js", "plotly.js"].map((name) => ({ name, url: new URL(name, STATIC) }));

/** Each match of `pattern` with a little context (never the whole bundle in a failure). */
function matches(code, pattern, allowed = () => false) {
  const out = [];
  for (const m of code.matchAll(new RegExp(pattern, "g"))) {
    const context = code.slice(Math.max(0, m.index - 80), m.index + m[0].length + 40);
    if (!allowed(context)) out.push(context);
  }
  return out;
}

describe.each(bundles)("the built $name", ({ name, url }) => {
  const built = existsSync(url);
  const code = built ? readFileSync(url, "utf8") : "";

  it.skipIf(!built)("has no eval and no Function constructor", () => {
    expect(matches(code, /\beval\s*\(/)).toEqual([]);
    expect(matches(code, /new\s+Function\b|[^.\w$]Function\s*\(/)).toEqual([]);
  });

  it.skipIf(!built)("loads nothing from a CDN", () => {
    expect(matches(code, /import\s*\(?\s*["'`]https?:|from\s*["'`]https?:/)).toEqual([]);
    // plotly's `topojsonURL` default names its CDN; only geo traces (not bundled) read it
    const topojsonDefault = (context) => context.includes('topojsonURL:{valType:"string",noBlank:!0,dflt:"https://cdn.plot.ly/un/"');
    expect(matches(code, /cdn\.jsdelivr|unpkg\.com|esm\.sh|cdn\.plot\.ly|cdnjs/, topojsonDefault)).toEqual([]);
  });

  it.skipIf(!built)("can be inlined in a <script> element as it is", () => {
    expect(matches(code, /<\/script/i)).toEqual([]);
    expect(matches(code, /<!--/)).toEqual([]);
  });

  it.skipIf(!built)(name === "plotly.js" ? "holds plotly, once per page" : "leaves plotly to plotly.js", () => {
    // plotly's version module (`version="4.1.1"`), the one line every copy of plotly has
    const plotlyVersion = JSON.parse(readFileSync(new URL("../node_modules/plotly.js-basic-dist-min/package.json", import.meta.url), "utf8")).version;
    const copies = matches(code, new RegExp(`version=${JSON.stringify(plotlyVersion).replace(/\./g, "\\.")}`)).length;
    if (name === "plotly.js") {
      expect(copies).toBe(1);
      // evaluated only when no earlier plotly.js on the page did
      expect(code).toContain("globalThis.__cachevizPlotly||(globalThis.__cachevizPlotly=");
    } else {
      expect(code.length).toBeLessThan(200_000);
      expect(copies).toBe(0);
      expect(code).toContain("globalThis.__cachevizPlotly");
    }
  });

  it.skipIf(!built)(name === "inspector.js" ? "is an ES module with a default export" : "is a plain script (IIFE)", () => {
    if (name === "inspector.js") {
      // exactly one export statement, holding only the default (named exports make anywidget warn)
      expect(matches(code, /export\s*\{[^}]*\}/).map((m) => m.match(/export\s*\{([^}]*)\}/)[1])).toEqual([
        expect.stringMatching(/^\s*\w+ as default\s*$/),
      ]);
    } else {
      expect(code.trimStart()).toMatch(/^(["']use strict["'];)?\(\(\)=>\{/);
      expect(matches(code, /^\s*(import|export)\b/m)).toEqual([]);
    }
  });
});

describe("the built loader.js (every widget's _esm)", () => {
  const url = new URL("loader.js", STATIC);
  const built = existsSync(url);
  const code = built ? readFileSync(url, "utf8") : "";

  it.skipIf(!built)("is small, an ES module with only a default export, and loads nothing from elsewhere", () => {
    expect(code.length).toBeLessThan(4_000);
    expect(matches(code, /export\s*\{[^}]*\}/).map((m) => m.match(/export\s*\{([^}]*)\}/)[1])).toEqual([
      expect.stringMatching(/^\s*\w+ as default\s*$/),
    ]);
    expect(matches(code, /\beval\s*\(/)).toEqual([]);
    expect(matches(code, /new\s+Function\b|[^.\w$]Function\s*\(/)).toEqual([]);
    expect(matches(code, /https?:/)).toEqual([]);
    expect(code).not.toContain("__cachevizPlotly"); // plotly travels in the shared module
  });
});
