// Permission requests waiting for a person: a card for each (what the tool will do, a
// countdown to its deadline, the agent's choices), in its turn; the open session's also
// pinned above the prompt (announced, answered there, never scrolled away nor behind ☰),
// and other sessions' in the banner at the top, with a badge on their session and on ☰.
//
// While a card shows a question, the page tells the gateway it is here
// (`POST /v1/permissions/{id}/presence`) once two thirds of its window are left: the
// deadline moves on, so a person reading it is not cut off (up to the gateway's
// `permission_wait_max_seconds`); a question nobody has open still ends at its deadline.
//
// The banner asks the gateway (`GET /v1/permissions`, and `GET /v1/questions` for the
// agent's own questions, questions.js) every PENDING_POLL_MS, so a question
// from an API caller's turn shows up whichever session is open, and again after a reload.
// Answers go over HTTP with the web UI's header: the agent is told a person in the web UI
// chose, and the task stream records it.
import { api } from "./api.js";
import { $, el } from "./dom.js";
import { QuestionCard } from "./questions.js";
import { renderIntent } from "./tools.js";
import { countdown } from "./words.js";

export const PENDING_POLL_MS = 2000; // how often the banner asks for open questions
const TICK_MS = 1000; // countdowns are redrawn this often
// The page says it is here once this share of a question's window is left: early enough
// that a busy browser (a tick late, a slow request) is never past the deadline.
const PRESENCE_AT = 2 / 3;

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
    this.clock.dataset.window = String(ask.window || 0);
    this.buttons.append(this.clock);
    this.decision = el("div", "decision");
    this.root.append(this.buttons, this.decision);
    tick(this.clock);
  }

  // "Always allow" (the agent's allow_always, which it keeps for this session) is a
  // button of its own kind, so a quick click on "Allow" never grants it.
  choice(option) {
    const cls = { allow_once: "allow", allow_always: "allow-always" }[option.kind] || "reject";
    const node = el("button", cls, option.name || option.kind);
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
  const clocks = document.querySelectorAll(".countdown[data-deadline]");
  for (const node of clocks) tick(node);
  for (const node of clocks) beat(node);
}, TICK_MS);

// ---- the page is here: the deadlines of the questions it shows move on -----------------

const beating = new Set(); // requestIds whose presence is on its way

async function beat(countdown) {
  const card = countdown.closest(".permission");
  const requestId = card && card.dataset.requestId;
  const seconds = Number(countdown.dataset.window); // what one presence gives
  const left = Number(countdown.dataset.deadline) - serverNow();
  if (!requestId || !seconds || left > seconds * PRESENCE_AT || beating.has(requestId)) return;
  beating.add(requestId);
  try {
    const route = card.classList.contains("question") ? "questions" : "permissions"; // questions.js
    const moved = await api(`/v1/${route}/${requestId}/presence`, { method: "POST" });
    clock.offset = moved.now - Date.now() / 1000;
    for (const node of document.querySelectorAll(".permission .countdown")) {
      if (node.closest(".permission").dataset.requestId !== requestId) continue;
      node.dataset.deadline = String(moved.deadline);
      tick(node);
    }
  } catch {
    // Answered or ended meanwhile: its decision, or the next listing, says so.
  } finally {
    beating.delete(requestId);
  }
}

// ---- every open question, wherever it was asked -------------------------------------------

class PendingDesk {
  constructor() {
    this.asks = new Map(); // requestId -> the question, as /v1/permissions lists it
    this.pinned = new Map(); // requestId -> an open question drawn in the open conversation
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
      // The agent's own questions too (its ask_user: questions.js), as their kind.
      const [permissions, questions] = await Promise.all([
        api("/v1/permissions"),
        api("/v1/questions"),
      ]);
      const asked = questions.data.map((q) => ({ ...q, kind: "question" }));
      listing = { now: permissions.now, data: [...permissions.data, ...asked] };
    } catch {
      return; // the next poll tries again; the page says nothing of a missed one
    }
    clock.offset = listing.now - Date.now() / 1000;
    this.asks = new Map(listing.data.map((a) => [a.requestId, a]));
    this.render();
  }

  // A question of the open conversation, drawn in its turn: pinned at once (the listing
  // comes a poll later).
  pin(item) {
    this.pinned.set(item.requestId, item);
    this.render();
  }

  // Another conversation was opened (null: none): its own questions are pinned as its
  // turns draw them.
  open(conversationId) {
    this.current = conversationId;
    this.pinned.clear();
    this.render();
  }

  answered(requestId) {
    this.asks.delete(requestId);
    this.pinned.delete(requestId);
    this.render();
  }

  // Per conversation, how many questions wait.
  counts() {
    const out = new Map();
    for (const a of this.asks.values()) out.set(a.conversationId, (out.get(a.conversationId) || 0) + 1);
    return out;
  }

  render() {
    const listed = [...this.asks.values()];
    const here = new Map(this.pinned);
    for (const a of listed) if (a.conversationId === this.current) here.set(a.requestId, a);
    const elsewhere = listed.filter((a) => a.conversationId !== this.current);
    showCards($("asking"), [...here.values()], (ask) => pinnedCard(ask));
    showCards($("pending"), elsewhere, (ask) => this.elsewhereCard(ask));
    const menu = $("menu"); // on a phone the sessions' badges are behind it
    menu.dataset.waiting = elsewhere.length ? String(elsewhere.length) : "";
    menu.setAttribute("aria-label", elsewhere.length
      ? `Sessions (${elsewhere.length} waiting for permission)` : "Sessions");
    const count = new Set([...here.keys(), ...this.asks.keys()]).size;
    document.title = count ? `(${count}) agentao: permission needed` : "agentao";
    this.listeners.forEach((f) => f("counts", this.counts()));
  }

  elsewhereCard(ask) {
    const card = pinnedCard(ask);
    const open = el("button", "open", "Open session");
    open.type = "button";
    open.addEventListener("click", () => this.listeners.forEach((f) => f("open", ask)));
    card.buttons.append(open);
    return card;
  }

  on(listener) {
    this.listeners.push(listener);
  }
}

// Cards for `asks` in `box`, keyed by request id: one already shown stays as it is (its
// countdown, its focus; a live region announces only what is new), a gone one goes.
function showCards(box, asks, make) {
  const wanted = new Set(asks.map((a) => a.requestId));
  const shown = new Set();
  for (const node of [...box.children]) {
    if (wanted.has(node.dataset.requestId)) shown.add(node.dataset.requestId);
    else node.remove();
  }
  for (const ask of asks) if (!shown.has(ask.requestId)) box.append(make(ask).root);
  box.hidden = asks.length === 0;
}

// The open session's question: a permission, or the agent's own (its ask_user).
function pinnedCard(ask) {
  return ask.kind === "question" ? new QuestionCard(ask) : new AskCard(ask);
}

export const desk = new PendingDesk();
