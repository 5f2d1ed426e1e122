// A tool call as the gateway sends it, folded already (`views.py`): drawn as it now stands.
// Its diffs come as lines (difflib's, the same the terminal shows), its output as text.
import { el } from "./dom.js";

const LINE_CLASS = { "-": "del", "+": "add", " ": "ctx" }; // `@@` hunk heads are not drawn

export function renderDiff(diff) {
  const box = el("div", "diff");
  box.append(el("div", "path", diff.path + (diff.created ? " (new file)" : "")));
  for (const line of diff.lines || []) {
    const cls = LINE_CLASS[line[0]];
    if (cls) box.append(el("div", cls, `${line[0]} ${line.slice(1)}`));
  }
  return box;
}

// What the call will do, for a person deciding whether to let it: its diffs when the agent
// sent them, else its command, else each of its arguments.
export function renderIntent(tool) {
  const box = el("div", "intent");
  const input = (tool && tool.input) || {};
  const diffs = (tool && tool.diffs) || [];
  if (diffs.length) for (const d of diffs) box.append(renderDiff(d));
  else if (typeof input.command === "string") box.append(el("pre", "command", "$ " + input.command));
  else if (Object.keys(input).length) box.append(renderInput(input));
  return box;
}

function renderInput(input) {
  const list = el("dl", "input");
  for (const [name, value] of Object.entries(input)) {
    const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
    const dd = el("dd");
    dd.append(el("pre", "", text));
    list.append(el("dt", "", name), dd);
  }
  return list;
}

export class ToolView {
  constructor() {
    this.root = el("details", "tool");
    const summary = el("summary");
    this.status = el("span", "status", "pending");
    this.title = el("span", "title", "tool");
    this.kind = el("span", "kind");
    summary.append(this.status, this.title, this.kind);
    this.body = el("div", "body");
    this.root.append(summary, this.body);
  }

  show(item) {
    this.root.dataset.toolCallId = item.toolCallId;
    if (item.title) this.title.textContent = item.title;
    this.kind.textContent = item.toolKind || "";
    this.status.textContent = item.status.replace("_", " ");
    this.root.dataset.status = item.status;
    this.body.replaceChildren();
    for (const d of item.diffs) this.body.append(renderDiff(d));
    if (item.output) this.body.append(el("pre", "", item.output));
    for (const id of item.terminals) this.body.append(el("pre", "", `[terminal ${id}]`));
    if (item.diffs.length) this.root.open = true;
  }

  // Where the children this call runs are drawn: beneath it, shown while it is closed.
  kids() {
    if (!this.kidsBox) {
      this.kidsBox = el("div", "kids");
      this.root.after(this.kidsBox);
    }
    return this.kidsBox;
  }
}
