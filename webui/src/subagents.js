// A child session the agent ran (a subagent, `views.py`'s `subagent` item): drawn under the
// parent's tool call it runs in, collapsed, with its title and state; opened, its own
// messages, tool calls and its own children (a grandchild: nested the same way, right after
// the child's call that runs it, as the view orders it). The item comes whole each time:
// its body is drawn again.
import { el } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { ToolView } from "./tools.js";

const STATE_WORDS = { running: "running", requires_action: "waiting for you", idle: "done" };

export class SubagentView {
  constructor() {
    this.root = el("details", "subagent"); // collapsed until a person opens it
    const summary = el("summary");
    this.state = el("span", "status", "running");
    this.title = el("span", "title", "subagent");
    summary.append(this.state, this.title);
    this.body = el("div", "body");
    this.root.append(summary, this.body);
  }

  show(item) {
    this.root.dataset.sessionId = item.sessionId;
    this.title.textContent = item.title || item.description || "subagent";
    const state = (item.state && item.state.state) || "running";
    const stop = item.state && item.state.stopReason;
    this.root.dataset.state = stop && stop !== "end_turn" ? stop : state;
    this.state.textContent = stop && stop !== "end_turn" ? stop : STATE_WORDS[state] || state;
    this.body.replaceChildren(...(item.items || []).map(drawn).filter(Boolean));
  }
}

function drawn(item) {
  if (item.kind === "subagent") {
    const child = new SubagentView();
    child.show(item);
    return child.root;
  }
  if (item.kind === "tool_call") {
    const tool = new ToolView();
    tool.show(item);
    return tool.root;
  }
  if (item.kind !== "message" || item.role === "user") return null;
  if (item.role === "thought") return el("div", "thought-text", item.text);
  const node = el("div", "text markdown");
  renderMarkdown(node, item.text.replace(/^\n+/, ""));
  return node;
}
