// Rewind to here: the files the agent changed from this prompt on go back to what they were
// before it (POST /v1/conversations/{id}/rewind: gateway/rewinds.py), after a dry run the
// person reads, and the conversation goes on from before it as a fork (as edit and resend
// does: the source conversation and its log stay as they were). The prompt is put back in
// the input box, to send as it was or changed. A file changed outside the agent since is
// listed with why, and overwritten only when the person ticks the box.
import { api } from "./api.js";
import { button, el } from "./dom.js";

// Offer "Rewind" on a turn the gateway knows; `rewind.preview(taskId)` and
// `rewind.apply(taskId, force)` are main.js's (the open conversation's).
export function offerRewind(turn, rewind) {
  if (turn.rewindButton) return;
  turn.rewindButton = button("↶ Rewind", "rewind", () => openRewind(turn, rewind),
    "Restore the files to before this prompt, and go on from here");
  (turn.editButton || turn.user).after(turn.rewindButton);
}

async function openRewind(turn, rewind) {
  if (turn.rewinder) return;
  const panel = el("div", "rewinder");
  panel.setAttribute("role", "region");
  panel.setAttribute("aria-label", "Rewind to here");
  turn.rewinder = panel;
  turn.rewindButton.after(panel);
  const close = () => { panel.remove(); turn.rewinder = null; };
  let dry;
  try {
    dry = await rewind.preview();
  } catch (error) {
    panel.append(el("div", "error", error.message), button("Close", "", close));
    return;
  }
  panel.append(changeList(dry));
  const conflicts = dry.changes.filter((c) => c.action === "conflict");
  let force = null;
  if (conflicts.length) {
    const label = el("label", "force");
    force = el("input");
    force.type = "checkbox";
    label.append(force, ` Overwrite ${conflicts.length} file(s) changed outside the agent`);
    panel.append(label);
  }
  const go = button("Rewind to here", "primary", async () => {
    go.disabled = true;
    try {
      await rewind.apply(Boolean(force && force.checked));
    } catch (error) {
      go.disabled = false;
      panel.append(el("div", "error", error.message));
    }
  });
  const row = el("div", "buttons");
  row.append(go, button("Cancel", "", close));
  panel.append(row);
  go.focus();
}

function changeList(dry) {
  if (!dry.changes.length) return el("p", "", "No file changed since this prompt.");
  const list = el("ul", "changes");
  for (const change of dry.changes) {
    const item = el("li");
    item.dataset.action = change.action;
    item.append(el("span", "action", change.action), " ", el("code", "", change.path));
    if (change.reason) item.append(el("div", "reason", change.reason));
    list.append(item);
  }
  return list;
}
