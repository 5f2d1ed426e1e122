// Where a session works. A new chat may choose its directory within the agent's roots
// (`GET /v1/agents/{name}/workdirs`: its cwd and sandbox write paths; typed paths under
// them too; the gateway checks and refuses anything else, saying why). An open session
// shows its directory and mode instead (`GET /v1/conversations/{id}/view`).
import { api } from "./api.js";
import { $, el } from "./dom.js";

export class WorkdirPicker {
  constructor() {
    this.agent = null; // whose roots the list holds
  }

  async load(agent) {
    if (!agent || agent === this.agent) return;
    this.agent = agent;
    let listing;
    try {
      listing = await api(`/v1/agents/${encodeURIComponent(agent)}/workdirs`);
    } catch {
      return; // the picker stays empty: a new chat works in the agent's own directory
    }
    $("cwd-roots").replaceChildren(...listing.roots.map((root) => option(root)));
    $("cwd").placeholder = listing.cwd;
    $("cwd").value = "";
  }

  // The directory a new chat asks for (null: the agent's own).
  choice() {
    return $("cwd").value.trim() || null;
  }

  showNew() {
    $("cwd-picker").hidden = false;
    $("session-where").hidden = true;
  }

  showSession(cwd, mode) {
    $("cwd-picker").hidden = true;
    const where = $("session-where");
    // A long path is cut at its start (the container runs right to left); the path
    // itself stays left to right, its leading "/" where it belongs.
    const path = el("bdi", "", cwd || "the agent's directory");
    path.dir = "ltr";
    const shown = el("span", "cwd");
    shown.append(path);
    where.replaceChildren(shown);
    if (mode) where.append(el("span", "mode", mode));
    where.title = cwd || "";
    where.hidden = false;
  }
}

function option(value) {
  const node = el("option");
  node.value = value;
  return node;
}
