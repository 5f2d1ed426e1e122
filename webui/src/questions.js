// The agent's own question to the person (its `ask_user` tool): a card with the question,
// a text box and Send, drawn in its turn and pinned above the prompt like a permission
// card (permissions.js pins it; its countdown draws the deadline, and while the card
// shows, says the page is here: `POST /v1/questions/{id}/presence`). The answer goes
// over HTTP (`POST /v1/questions/{id}`); the first answer wins, and the card then shows
// what the agent was told: the answer, or that nobody answered in time.
import { api } from "./api.js";
import { el } from "./dom.js";

export class QuestionCard {
  constructor(ask) {
    this.ask = ask;
    this.root = el("div", "permission question");
    this.root.dataset.requestId = ask.requestId;
    const who = ask.childTitle ? `The subagent ${ask.childTitle} asks` : "The agent asks";
    this.root.append(el("div", "ask-title", who));
    this.root.append(el("div", "question-text", ask.question || ""));
    this.box = el("textarea", "answer-box");
    this.box.rows = 2;
    this.box.setAttribute("aria-label", "Your answer");
    this.box.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.send();
      }
    });
    this.buttons = el("div", "buttons");
    this.sendButton = el("button", "send-answer", "Send");
    this.sendButton.type = "button";
    this.sendButton.addEventListener("click", () => this.send());
    this.clock = el("span", "countdown");
    this.clock.dataset.deadline = String(ask.deadline || 0);
    this.clock.dataset.window = String(ask.window || 0); // the page's presence holds it off
    this.buttons.append(this.sendButton, this.clock);
    this.decision = el("div", "decision");
    this.root.append(this.box, this.buttons, this.decision);
  }

  async send() {
    const answer = this.box.value.trim();
    if (!answer) return this.box.focus();
    this.disable();
    try {
      await api(`/v1/questions/${this.ask.requestId}`, {
        method: "POST",
        body: JSON.stringify({ answer }),
      });
      this.root.dataset.answered = "true";
    } catch (error) {
      this.decision.textContent = error.message; // too long, or answered meanwhile
      this.box.disabled = this.sendButton.disabled = false;
    }
  }

  disable() {
    this.box.disabled = this.sendButton.disabled = true;
  }

  // The question-response frame: what the agent was told.
  answered(result) {
    this.disable();
    this.clock.remove();
    this.root.dataset.decision = result.answer === null ? "rejected" : "approved";
    this.root.dataset.by = result.by || "";
    const said = {
      deadline: "No answer in time: the agent was told nobody answered",
      cancelled: "The turn was stopped",
    }[result.by];
    this.decision.textContent = result.answer === null ? said || "No answer" : `Answered: ${result.answer}`;
  }
}
