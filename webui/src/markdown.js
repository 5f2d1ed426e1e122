// Model output as markdown: parsed by marked, sanitized by DOMPurify, code highlighted by
// highlight.js, each code block with a copy button.
//
// Model output is untrusted (a prompt injection can make it say anything). Two layers keep it
// inert: raw HTML in the markdown is shown as text, never parsed; and whatever marked makes
// is sanitized to a fragment of plain elements (no script, no event handlers, no images or
// forms: an image URL would be fetched the moment it is shown, telling a third party what
// the model wrote). Links open in a new tab without a referrer.
import DOMPurify from "dompurify";
import hljs from "highlight.js/lib/common";
import { Marked } from "marked";
import { el } from "./dom.js";

const escapeHtml = (text) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

const marked = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    html: ({ text }) => escapeHtml(text),
    image: ({ href, text }) => `<a href="${escapeHtml(href || "")}">${escapeHtml(text || href || "image")}</a>`,
  },
});

const PURIFY = {
  RETURN_DOM_FRAGMENT: true,
  FORBID_TAGS: ["img", "picture", "video", "audio", "source", "iframe", "object", "embed",
    "form", "input", "button", "textarea", "select", "style", "svg", "math", "link", "meta"],
  FORBID_ATTR: ["style", "id"],
  ALLOW_DATA_ATTR: false,
};

const CODE_CLASS = /^language-[\w+#.-]+$/; // what marked puts on a fenced block's <code>

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  const cls = node.getAttribute("class");
  if (cls !== null && !(node.tagName === "CODE" && CODE_CLASS.test(cls))) {
    node.removeAttribute("class"); // our stylesheet's classes are ours to place
  }
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
});

export function renderMarkdown(node, text) {
  const html = marked.parse(text);
  const fragment = DOMPurify.sanitize(html, PURIFY);
  node.replaceChildren(fragment);
  for (const pre of node.querySelectorAll("pre")) decorate(pre);
}

// Highlight (the fence's language if highlight.js knows it, else its best guess) and add a
// copy button that copies the code as written.
function decorate(pre) {
  const code = pre.querySelector("code");
  if (!code) return;
  const source = code.textContent;
  const named = /^language-(.+)$/.exec(code.getAttribute("class") || "");
  const lang = named ? named[1] : null;
  const result = lang && hljs.getLanguage(lang)
    ? hljs.highlight(source, { language: lang, ignoreIllegals: true })
    : hljs.highlightAuto(source);
  // highlight.js escapes the code it is given; its output is spans with hljs-* classes.
  code.innerHTML = result.value;
  code.classList.add("hljs");
  const wrap = el("div", "code-block");
  const bar = el("div", "code-bar");
  bar.append(el("span", "code-lang", lang || result.language || "text"), copyButton(source));
  pre.replaceWith(wrap);
  wrap.append(bar, pre);
}

function copyButton(source) {
  const copy = el("button", "copy", "Copy");
  copy.type = "button";
  copy.setAttribute("aria-label", "Copy code");
  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(source);
      copy.textContent = "Copied";
    } catch {
      copy.textContent = "Copy failed";
    }
    setTimeout(() => { copy.textContent = "Copy"; }, COPIED_MS);
  });
  return copy;
}

const COPIED_MS = 1500; // how long "Copied" shows before the button reads "Copy" again

