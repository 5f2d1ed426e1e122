// Edit and resend: an earlier prompt, edited, is sent as the first turn of a fork of the
// conversation before that prompt (POST /v1/conversations/{id}/fork: gateway/forks.py).
// The model then sees exactly the turns before it; the source conversation is untouched.
import { button, el } from "./dom.js";

// Offer "Edit" on a turn the gateway knows (it has a task id); `resend(text)` does the rest.
export function offerEdit(turn, resend) {
  if (turn.editButton) return;
  turn.editButton = button("✎ Edit", "edit", () => openEditor(turn, resend),
    "Edit this prompt and send it again, as a new conversation from here");
  turn.user.after(turn.editButton);
}

function openEditor(turn, resend) {
  const form = el("form", "editor");
  const text = el("textarea");
  text.value = turn.user.textContent;
  text.rows = Math.min(8, text.value.split("\n").length + 1);
  text.setAttribute("aria-label", "The edited prompt");
  const send = el("button", "", "Send");
  send.type = "submit";
  const close = () => { form.remove(); turn.user.hidden = false; turn.editButton.hidden = false; };
  const cancel = button("Cancel", "", close);
  const row = el("div", "buttons");
  row.append(send, cancel);
  form.append(text, row);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const prompt = text.value.trim();
    if (!prompt) return;
    send.disabled = true;
    try {
      await resend(prompt);
    } catch (error) {
      send.disabled = false;
      form.append(el("div", "error", error.message));
    }
  });
  text.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) form.requestSubmit();
    if (e.key === "Escape") { e.preventDefault(); close(); }
  });
  turn.user.hidden = true;
  turn.editButton.hidden = true;
  turn.user.after(form);
  text.focus();
}
