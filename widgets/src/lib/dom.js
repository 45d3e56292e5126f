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
        h(doc, "dt", { text: help ? `${label} ⓘ` : label }),
        typeof value === "string" ? h(doc, "dd", { text: value }) : h(doc, "dd", {}, [value]),
      ]),
    ),
  );
}
