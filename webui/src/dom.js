// Building the page: every piece of text goes in with textContent, never as HTML.
// (Model output is the one exception, and it goes through markdown.js's sanitizer.)

export const $ = (id) => document.getElementById(id);

export function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

export function button(label, cls, onClick, title) {
  const node = el("button", cls, label);
  node.type = "button";
  if (title) {
    node.title = title;
    node.setAttribute("aria-label", title);
  }
  node.addEventListener("click", onClick);
  return node;
}
