// A tool call as the gateway sends it, merged by id (`toolCall`): shown as it now stands.
import { el } from "./dom.js";

export function blockText(block) {
  if (!block) return "";
  if (block.type === "text") return block.text || "";
  if (block.type === "resource_link") return `[${block.name}](${block.uri})`;
  return `[${block.type}]`;
}

// A diff as removed and added lines: the common head and tail kept out, the middle shown.
export function renderDiff(diff) {
  const box = el("div", "diff");
  box.append(el("div", "path", diff.path + (diff.oldText == null ? " (new file)" : "")));
  const oldLines = diff.oldText == null ? [] : diff.oldText.split("\n");
  const newLines = (diff.newText || "").split("\n");
  let head = 0;
  while (head < oldLines.length && head < newLines.length && oldLines[head] === newLines[head]) head++;
  let tail = 0;
  while (tail < oldLines.length - head && tail < newLines.length - head &&
         oldLines[oldLines.length - 1 - tail] === newLines[newLines.length - 1 - tail]) tail++;
  for (const line of oldLines.slice(head, oldLines.length - tail)) box.append(el("div", "del", "- " + line));
  for (const line of newLines.slice(head, newLines.length - tail)) box.append(el("div", "add", "+ " + line));
  return box;
}

// What the call will do, for a person deciding whether to let it: its diffs when the agent
// sent them, else its command, else each of its arguments.
export function renderIntent(call) {
  const box = el("div", "intent");
  const diffs = (call.content || []).filter((c) => c.type === "diff");
  const input = call.rawInput && typeof call.rawInput === "object" ? call.rawInput : {};
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

  show(call) {
    this.root.dataset.toolCallId = call.toolCallId;
    if (call.title) this.title.textContent = call.title;
    if (call.kind) this.kind.textContent = call.kind;
    if (call.status) {
      this.status.textContent = call.status.replace("_", " ");
      this.root.dataset.status = call.status;
    }
    if (!Array.isArray(call.content)) return;
    this.body.replaceChildren();
    for (const c of call.content) {
      if (c.type === "diff") this.body.append(renderDiff(c));
      else if (c.type === "content") this.body.append(el("pre", "", blockText(c.content)));
      else if (c.type === "terminal") this.body.append(el("pre", "", `[terminal ${c.terminalId}]`));
    }
    if (call.content.some((c) => c.type === "diff")) this.root.open = true;
  }
}
