// One turn, drawn from its task-stream frames in order (live, or stored ones replayed).
import { $, el } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { AskCard, desk } from "./permissions.js";
import { blockText, ToolView } from "./tools.js";
import { stopWords, turnUsage } from "./words.js";

// What the rest of the page learns from a turn: the context meter and the plan. (A new
// title needs nothing here: the session list is read again when a turn ends, and the
// gateway decides whose title it shows.)
export const sessionEvents = { usage() {}, plan() {} };

export class TurnView {
  constructor(prompt, log = $("log")) {
    this.root = el("div", "turn");
    this.root.dataset.state = "running";
    this.root.append(el("div", "user", prompt));
    this.assistant = el("div", "assistant");
    this.root.append(this.assistant);
    this.text = null; // {node, raw, pending}: the answer's text run being appended to
    this.thought = null; // the thought run being appended to
    this.tools = new Map();
    this.asks = new Map();
    this.unrendered = new Set(); // text runs waiting for their animation frame
    this.ended = false;
    log.append(this.root);
  }

  frame(f) {
    if (f.type === "task-started") this.root.dataset.taskId = f.taskId;
    else if (f.type === "task-running") this.update(f.update || {}, f.toolCall);
    else if (f.type === "permission-request") this.ask(f);
    else if (f.type === "permission-response") this.answered(f);
    else if (f.type === "task-ended") this.end(stopWords(f.stopReason), "ended", f.stopReason, f.usage);
    else if (f.type === "task-error") this.end((f.error && f.error.message) || "error", "error");
  }

  update(u, merged) {
    switch (u.sessionUpdate) {
      case "agent_message_chunk": return this.appendText(blockText(u.content));
      case "agent_thought_chunk": return this.appendThought(blockText(u.content));
      case "tool_call": // the gateway sends the call merged by id: shown as it now is
      case "tool_call_update": return this.tool(merged || u);
      case "plan": return sessionEvents.plan(u.entries);
      case "usage_update": return sessionEvents.usage(u);
      default: return undefined;
    }
  }

  appendText(t) {
    if (!this.text) {
      t = t.replace(/^\n+/, ""); // a new block needs no leading paragraph break
      if (!t) return;
      this.text = { node: el("div", "text markdown"), raw: "", pending: false };
      this.assistant.append(this.text.node);
      this.thought = null;
    }
    this.text.raw += t;
    this.renderSoon(this.text);
  }

  // Markdown is drawn once per animation frame, however many chunks came in it, and at
  // once when the turn ends: an ended turn shows all of its answer.
  renderSoon(run) {
    if (run.pending) return;
    run.pending = true;
    this.unrendered.add(run);
    requestAnimationFrame(() => this.render(run));
  }

  render(run) {
    if (!run.pending) return; // drawn already, when the turn ended
    run.pending = false;
    this.unrendered.delete(run);
    renderMarkdown(run.node, run.raw);
  }

  appendThought(t) {
    if (!this.thought) {
      const details = el("details", "thought");
      details.append(el("summary", "", "Thinking"));
      this.thought = el("div");
      details.append(this.thought);
      this.assistant.append(details);
      this.text = null;
    }
    this.thought.textContent += t;
  }

  tool(call) {
    let view = this.tools.get(call.toolCallId);
    if (!view) {
      view = new ToolView();
      this.assistant.append(view.root);
      this.tools.set(call.toolCallId, view);
      this.text = null;
      this.thought = null;
    }
    view.show(call);
  }

  ask(f) {
    const card = new AskCard(f);
    this.asks.set(f.requestId, card);
    this.assistant.append(card.root);
    this.text = null;
    desk.shownInTurn.add(f.requestId);
    desk.render();
  }

  answered(f) {
    const card = f.requestId ? this.asks.get(f.requestId) : null;
    if (card) {
      card.decided(f);
      desk.answered(f.requestId);
      return;
    }
    // Decided by the policy, without asking: one line says so, and why.
    const verdict = f.approved ? "Allowed" : "Rejected";
    const line = el("div", "decision", `${verdict}: ${f.title}${f.reason ? ` (${f.reason})` : ""}`);
    line.dataset.decision = f.approved ? "approved" : "rejected";
    this.assistant.append(line);
  }

  // `usage`: the turn's tokens, when the agent reported them (null when it did not).
  end(text, cls, stopReason, usage) {
    for (const run of this.unrendered) this.render(run);
    this.ended = true;
    this.root.dataset.state = cls;
    if (stopReason) this.root.dataset.stopReason = stopReason;
    for (const card of this.asks.values()) card.disable();
    if (text) this.root.append(el("div", cls === "error" ? "error" : "ended", text));
    if (usage) this.root.append(el("div", "turn-usage", turnUsage(usage)));
  }
}
