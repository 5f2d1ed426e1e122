// A conversation's turns, drawn from the view items the gateway folded (`views.py`): each
// item has an id and the turn it belongs to; a later item with the same id replaces what
// was drawn for it. Nothing is merged or computed here.
import { $, el } from "./dom.js";
import { offerEdit } from "./edit.js";
import { offerRewind } from "./rewind.js";
import { renderMarkdown } from "./markdown.js";
import { AskCard, desk } from "./permissions.js";
import { QuestionCard } from "./questions.js";
import { SubagentView } from "./subagents.js";
import { ToolView } from "./tools.js";
import { stopWords, turnUsage } from "./words.js";

// What the rest of the page learns from the view: the context meter and the plan. (A new
// title needs nothing here: the session list is read again when a turn ends, and the
// gateway decides whose title it shows.)
// `resend(conversationId, taskId, prompt)`: an earlier prompt edited (edit.js), sent on a
// fork of the conversation the turn was drawn for.
// `rewind(conversationId, taskId, {dry_run|force})`: rewind.js's dry run, and the rewind.
export const sessionEvents = { usage() {}, plan() {}, async resend() {}, async rewind() {} };

export class ConversationView {
  constructor(log = $("log")) {
    this.log = log;
    this.turns = new Map(); // task id -> TurnView
    this.conversation = null; // the conversation the turns adopted now belong to
  }

  // A turn started here: drawn at once, known by its task id once the gateway answers.
  started(prompt) {
    return new TurnView(prompt, this.log);
  }

  adopt(taskId, turn) {
    turn.root.dataset.taskId = taskId;
    this.turns.set(taskId, turn);
    const conversation = this.conversation;
    offerEdit(turn, (prompt) => sessionEvents.resend(conversation, taskId, prompt));
    offerRewind(turn, {
      preview: () => sessionEvents.rewind(conversation, taskId, { dry_run: true }),
      apply: (force) => sessionEvents.rewind(conversation, taskId, { force }),
    });
  }

  turn(taskId) {
    let turn = this.turns.get(taskId);
    if (!turn) {
      turn = new TurnView("", this.log);
      this.adopt(taskId, turn);
    }
    return turn;
  }

  render(items) {
    for (const item of items) {
      if (item.id === "plan") sessionEvents.plan(item.entries);
      else if (item.id === "usage") sessionEvents.usage(item.usage);
      else if (item.turn) this.turn(item.turn).item(item);
    }
  }
}

export class TurnView {
  constructor(prompt, log) {
    this.root = el("div", "turn");
    this.root.dataset.state = "running";
    this.user = el("div", "user", prompt);
    this.root.append(this.user);
    this.assistant = el("div", "assistant");
    this.root.append(this.assistant);
    this.nodes = new Map(); // item id -> what draws it
    this.unrendered = new Set(); // text runs waiting for their animation frame
    this.ended = false;
    log.append(this.root);
  }

  item(item) {
    switch (item.kind) {
      case "turn": return this.turnItem(item);
      case "message": return this.message(item);
      case "tool_call": return this.tool(item);
      case "permission": return this.ask(item);
      case "question": return this.question(item);
      case "decision": return this.decision(item);
      case "subagent": return this.subagent(item);
      default: return undefined; // plans show beside the log, notices nowhere yet
    }
  }

  turnItem(item) {
    if (item.prompt && !this.user.textContent) this.user.textContent = item.prompt;
    if (this.ended || item.state === "running") return;
    if (item.state === "error") this.end(item.error || "error", "error");
    else this.end(stopWords(item.stopReason), "ended", item.stopReason, item.usage);
  }

  message(item) {
    if (item.role === "user") return this.steered(item);
    let run = this.nodes.get(item.id);
    if (!run) {
      run = item.role === "thought" ? this.thoughtRun() : this.textRun();
      this.nodes.set(item.id, run);
    }
    run.raw = "append" in item ? run.raw + item.append : item.text;
    if (run.thought) run.node.textContent = run.raw;
    else this.renderSoon(run);
  }

  // Words a person sent while the turn ran (steering): a user line where the agent's
  // `user_message_chunk` put them. An agent that echoes the prompt first: drawn already.
  steered(item) {
    let run = this.nodes.get(item.id);
    if (!run) {
      run = { node: el("div", "user steered"), raw: "", first: !this.steers };
      this.steers = true;
      this.assistant.append(run.node);
      this.nodes.set(item.id, run);
    }
    run.raw = "append" in item ? run.raw + item.append : item.text;
    run.node.textContent = run.raw;
    run.node.hidden = run.first && run.raw.trim() === this.user.textContent.trim();
  }

  textRun() {
    const run = { node: el("div", "text markdown"), raw: "", pending: false };
    this.assistant.append(run.node);
    return run;
  }

  thoughtRun() {
    const details = el("details", "thought");
    details.append(el("summary", "", "Thinking"));
    const node = el("div");
    details.append(node);
    this.assistant.append(details);
    return { node, raw: "", thought: true };
  }

  // Markdown is drawn once per animation frame, however many chunks came in it, and at
  // once when the turn ends: an ended turn shows all of its answer. (A leading paragraph
  // break is the agent's separator from what came before: a new block needs none.)
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
    renderMarkdown(run.node, run.raw.replace(/^\n+/, ""));
  }

  tool(item) {
    let view = this.nodes.get(item.id);
    if (!view) {
      view = new ToolView();
      this.assistant.append(view.root);
      this.nodes.set(item.id, view);
      this.nodes.set(`call:${item.toolCallId}`, view);
    }
    view.show(item);
  }

  // Under the parent's tool call it runs in (beside the turn's text when none ran).
  subagent(item) {
    let view = this.nodes.get(item.id);
    if (!view) {
      view = new SubagentView();
      this.nodes.set(item.id, view);
      const call = this.nodes.get(`call:${item.toolCallId}`);
      if (call) call.kids().append(view.root);
      else this.assistant.append(view.root);
    }
    view.show(item);
  }

  ask(item) {
    let card = this.nodes.get(item.id);
    if (!card) {
      card = new AskCard(item);
      this.nodes.set(item.id, card);
      this.assistant.append(card.root);
      if (!item.decision && !this.ended) desk.pin(item);
    }
    if (item.decision && !card.root.dataset.decision) {
      card.decided(item.decision);
      desk.answered(item.requestId);
    }
  }

  // The agent's own question (ask_user): pinned while open, its answer once given.
  question(item) {
    let card = this.nodes.get(item.id);
    if (!card) {
      card = new QuestionCard(item);
      this.nodes.set(item.id, card);
      this.assistant.append(card.root);
      if (!item.answer && !this.ended) desk.pin(item);
    }
    if (item.answer && !card.root.dataset.decision) {
      card.answered(item.answer);
      desk.answered(item.requestId);
    }
  }

  // Decided by the policy, without asking: one line says so, and why.
  decision(item) {
    if (this.nodes.has(item.id)) return;
    const verdict = item.approved ? "Allowed" : "Rejected";
    const line = el("div", "decision", `${verdict}: ${item.title}${item.reason ? ` (${item.reason})` : ""}`);
    line.dataset.decision = item.approved ? "approved" : "rejected";
    this.nodes.set(item.id, line);
    this.assistant.append(line);
  }

  // `usage`: the turn's tokens, when the agent reported them (null when it did not).
  end(text, cls, stopReason, usage) {
    for (const run of this.unrendered) this.render(run);
    this.ended = true;
    this.root.dataset.state = cls;
    if (stopReason) this.root.dataset.stopReason = stopReason;
    for (const node of this.nodes.values()) {
      if (!(node instanceof AskCard || node instanceof QuestionCard)) continue;
      node.disable();
      desk.answered(node.ask.requestId); // a question ends with its turn: unpinned
    }
    if (text) this.root.append(el("div", cls === "error" ? "error" : "ended", text));
    if (usage) this.root.append(el("div", "turn-usage", turnUsage(usage)));
  }
}
