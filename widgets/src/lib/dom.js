// @ts-check
/**
 * A tiny element builder that only ever sets text (never HTML): transcript text is
 * untrusted, so nothing here parses markup.
 */

/**
 * @typedef {object} Props
 * @property {string} [className]
 * @property {string} [text] set as textContent
 * @property {string} [title] tooltip (an attribute: shown as text by the browser)
 * @property {Record<string, string>} [attrs] other attributes; names are fixed in code
 */

/**
 * Create an element with text-only content.
 *
 * @template {keyof HTMLElementTagNameMap} K
 * @param {Document} doc
 * @param {K} tag
 * @param {Props} [props]
 * @param {(Node | string | null | undefined | false)[]} [children] strings become text nodes
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(doc, tag, props = {}, children = []) {
  const el = doc.createElement(tag);
  if (props.className) el.className = props.className;
  if (props.title !== undefined) el.title = props.title;
  if (props.attrs) {
    for (const [name, value] of Object.entries(props.attrs)) {
      // attribute names are code, not data; refuse event handlers and URLs all the same
      if (/^on/i.test(name) || /^(href|src|srcdoc|action|formaction|xlink:href)$/i.test(name)) {
        throw new Error(`h(): refusing to set attribute ${name}`);
      }
      el.setAttribute(name, value);
    }
  }
  if (props.text !== undefined) el.textContent = props.text;
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === "string" ? doc.createTextNode(child) : child);
  }
  return el;
}

/**
 * Replace the children of `el` (text nodes for strings).
 *
 * @param {Element} el
 * @param {(Node | string | null | undefined | false)[]} children
 */
export function setChildren(el, children) {
  const nodes = /** @type {(Node | string)[]} */ (children.filter((c) => c !== null && c !== undefined && c !== false));
  el.replaceChildren(...nodes);
}

/**
 * A `<dl>`-style list of facts: label/value pairs as `<div><dt/><dd/></div>`.
 *
 * @param {Document} doc
 * @param {string} className
 * @param {Array<[string, string | Node] | [string, string | Node, string]>} pairs label, value,
 *   and optionally an explanation shown on hover
 */
export function facts(doc, className, pairs) {
  return h(
    doc,
    "dl",
    { className },
    pairs.map(([label, value, help]) =>
      h(doc, "div", { className: `${className.split(" ")[0]}-item`, ...(help ? { title: help } : {}) }, [
        help ? h(doc, "dt", {}, [`${label} `, infoIcon(doc)]) : h(doc, "dt", { text: label }),
        typeof value === "string" ? h(doc, "dd", { text: value }) : h(doc, "dd", {}, [value]),
      ]),
    ),
  );
}

const SVG = "http://www.w3.org/2000/svg";

/**
 * The "hover for an explanation" mark: a circled i drawn as inline SVG, so it shows
 * whatever fonts the page has (the ⓘ character renders as an empty box in fonts without
 * it). Decorative: the explanation is the enclosing element's `title`.
 *
 * @param {Document} doc
 * @returns {SVGSVGElement}
 */
export function infoIcon(doc) {
  const svg = /** @type {SVGSVGElement} */ (doc.createElementNS(SVG, "svg"));
  for (const [name, value] of Object.entries({
    class: "cacheviz-info",
    viewBox: "0 0 16 16",
    width: "0.9em",
    height: "0.9em",
    "aria-hidden": "true",
    focusable: "false",
  })) {
    svg.setAttribute(name, value);
  }
  const circle = doc.createElementNS(SVG, "circle");
  for (const [name, value] of Object.entries({ cx: "8", cy: "8", r: "7", fill: "none", stroke: "currentColor", "stroke-width": "1.5" })) {
    circle.setAttribute(name, value);
  }
  const dot = doc.createElementNS(SVG, "circle");
  for (const [name, value] of Object.entries({ cx: "8", cy: "4.6", r: "1.1", fill: "currentColor" })) dot.setAttribute(name, value);
  const stem = doc.createElementNS(SVG, "rect");
  for (const [name, value] of Object.entries({ x: "7", y: "6.8", width: "2", height: "5.6", rx: "0.6", fill: "currentColor" })) {
    stem.setAttribute(name, value);
  }
  svg.append(circle, dot, stem);
  return svg;
}
