// Permission requests waiting for a person: a card for each (what the tool will do, a
// countdown to its deadline, the agent's choices), in its turn and, wherever the page is,
// in the banner at the top, with a badge on its session.
//
// The banner asks the gateway (`GET /v1/permissions`) every PENDING_POLL_MS, so a question
// from an API caller's turn shows up whichever session is open, and again after a reload.
// Answers go over HTTP with the web UI's header: the agent is told a person in the web UI
// chose, and the task stream records it.
import { api } from "./api.js";
import { $, el } from "./dom.js";
import { renderIntent } from "./tools.js";
import { countdown } from "./words.js";

export const PENDING_POLL_MS = 2000; // how often the banner asks for open questions
const TICK_MS = 1000; // countdowns are redrawn this often

// The server's clock minus ours (seconds): deadlines are the server's times.
const clock = { offset: 0 };
const serverNow = () => Date.now() / 1000 + clock.offset;

export class AskCard {
  constructor(ask) {
    this.ask = ask;
    this.root = el("div", "permission");
    this.root.dataset.requestId = ask.requestId;
    this.root.append(el("div", "ask-title", `Permission needed: ${ask.title || "a tool call"}`));
    const kind = ask.toolKind || ask.kind; // a view item's, or the listing's
    if (kind) this.root.append(el("span", "kind", kind));
    this.root.append(renderIntent(ask.tool)); // folded by the gateway (`views.py`)
    this.buttons = el("div", "buttons");
    for (const option of ask.options || []) this.buttons.append(this.choice(option));
    this.clock = el("span", "countdown");
    this.clock.dataset.deadline = String(ask.deadline || 0);
    this.buttons.append(this.clock);
    this.decision = el("div", "decision");
    this.root.append(this.buttons, this.decision);
    tick(this.clock);
  }

  choice(option) {
    const allow = option.kind.startsWith("allow");
    const node = el("button", allow ? "allow" : "reject", option.name || option.kind);
    node.type = "button";
    node.dataset.optionId = option.optionId;
    node.addEventListener("click", () => this.answer(option.optionId));
    return node;
  }

  async answer(optionId) {
    this.disable();
    try {
      await api(`/v1/permissions/${this.ask.requestId}`, {
        method: "POST",
        body: JSON.stringify({ optionId }),
      });
      this.root.dataset.answered = "true";
      desk.answered(this.ask.requestId);
    } catch (error) {
      this.decision.textContent = error.message; // e.g. the deadline passed meanwhile
    }
  }

  disable() {
    for (const b of this.buttons.querySelectorAll("button")) b.disabled = true;
  }

  // The permission-response frame: who decided, and why (the agent was told the same).
  decided(frame) {
    this.disable();
    this.clock.remove();
    const verdict = frame.approved ? "approved" : "rejected";
    this.root.dataset.decision = verdict;
    this.root.dataset.by = frame.by;
    const why = frame.reason || (frame.by === "cancelled" ? "the turn was stopped" : "");
    const word = frame.approved ? "Approved" : "Rejected";
    this.decision.textContent = why ? `${word}: ${why}` : word;
  }
}

function tick(node) {
  const deadline = Number(node.dataset.deadline);
  node.textContent = deadline ? countdown(deadline - serverNow()) : "";
  node.classList.toggle("late", deadline - serverNow() < 10);
}

setInterval(() => {
  for (const node of document.querySelectorAll(".countdown[data-deadline]")) tick(node);
}, TICK_MS);

// ---- every open question, wherever it was asked -------------------------------------------

class PendingDesk {
  constructor() {
    this.asks = new Map(); // requestId -> the question, as /v1/permissions lists it
    this.shownInTurn = new Set(); // requestIds with a card in the open conversation's turns
    this.listeners = [];
    this.current = null; // the open conversation's id
  }

  start() {
    this.poll();
    setInterval(() => this.poll(), PENDING_POLL_MS);
  }

  async poll() {
    let listing;
    try {
      listing = await api("/v1/permissions");
    } catch {
      return; // the next poll tries again; the page says nothing of a missed one
    }
    clock.offset = listing.now - Date.now() / 1000;
    this.asks = new Map(listing.data.map((a) => [a.requestId, a]));
    this.render();
  }

  answered(requestId) {
    this.asks.delete(requestId);
    this.render();
  }

  // Per conversation, how many questions wait.
  counts() {
    const out = new Map();
    for (const a of this.asks.values()) out.set(a.conversationId, (out.get(a.conversationId) || 0) + 1);
    return out;
  }

  render() {
    const banner = $("pending");
    const elsewhere = [...this.asks.values()].filter(
      (a) => !(a.conversationId === this.current && this.shownInTurn.has(a.requestId)));
    banner.replaceChildren();
    for (const ask of elsewhere) {
      const card = new AskCard(ask);
      const open = el("button", "open", "Open session");
      open.type = "button";
      open.addEventListener("click", () => this.listeners.forEach((f) => f("open", ask)));
      card.buttons.append(open);
      banner.append(card.root);
    }
    banner.hidden = elsewhere.length === 0;
    const count = this.asks.size;
    document.title = count ? `(${count}) agentao: permission needed` : "agentao";
    this.listeners.forEach((f) => f("counts", this.counts()));
  }

  on(listener) {
    this.listeners.push(listener);
  }
}

export const desk = new PendingDesk();
