// agentao web UI: a task-stream client. Plain JS, no build step, text only via textContent.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  key: localStorage.getItem("agentao-key") || "",
  conversation: null,   // the conversation id the next prompt continues
  ws: null,             // the WebSocket of the running task
  running: false,
};

// ---- HTTP --------------------------------------------------------------------------------

// X-Agentao-Client makes every request of ours one a browser must preflight across origins;
// the gateway answers a preflight only for origins its operator configured.
async function api(path, options = {}) {
  const headers = { "Content-Type": "application/json", "X-Agentao-Client": "web" };
  if (state.key) headers.Authorization = "Bearer " + state.key;
  const res = await fetch(path, { ...options, headers });
  if (res.status === 401) {
    await askKey();
    return api(path, options);
  }
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(body.error ? body.error.message : res.statusText);
  return body;
}

function askKey() {
  return new Promise((resolve) => {
    const dialog = $("key-dialog");
    dialog.addEventListener("close", () => {
      state.key = $("key-input").value.trim();
      localStorage.setItem("agentao-key", state.key);
      resolve();
    }, { once: true });
    dialog.showModal();
  });
}

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function blockText(block) {
  if (!block) return "";
  if (block.type === "text") return block.text || "";
  if (block.type === "resource_link") return `[${block.name}](${block.uri})`;
  return `[${block.type}]`;
}

function setStatus(text) { $("status").textContent = text; }

// ---- the plan ----------------------------------------------------------------------------

function renderPlan(entries) {
  const list = $("plan-entries");
  list.replaceChildren();
  for (const entry of entries || []) {
    const item = el("li", "", entry.content);
    item.dataset.status = entry.status;
    list.append(item);
  }
  $("plan").hidden = !entries || entries.length === 0;
}

// ---- diffs: common head and tail kept, the middle shown as removed / added ---------------

function renderDiff(diff) {
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

// ---- one turn, rendered from its frames ---------------------------------------------------

class TurnView {
  constructor(prompt) {
    this.root = el("div", "turn");
    this.root.append(el("div", "user", prompt));
    this.assistant = el("div", "assistant");
    this.root.append(this.assistant);
    this.text = null;      // the text run being appended to
    this.thought = null;   // the thought run being appended to
    this.tools = new Map();
    this.asks = new Map();
    this.ended = false;
    $("log").append(this.root);
  }

  frame(f) {
    if (f.type === "task-running") this.update(f.update || {}, f.toolCall);
    else if (f.type === "permission-request") this.ask(f);
    else if (f.type === "permission-response") this.answered(f);
    else if (f.type === "task-ended") this.end(`stop reason: ${f.stopReason}`, "ended");
    else if (f.type === "task-error") this.end((f.error && f.error.message) || "error", "error");
    $("log").scrollTop = $("log").scrollHeight;
  }

  update(u, merged) {
    switch (u.sessionUpdate) {
      case "agent_message_chunk": return this.appendText(blockText(u.content));
      case "agent_thought_chunk": return this.appendThought(blockText(u.content));
      case "tool_call":  // the gateway sends the call merged by id: shown as it now is
      case "tool_call_update": return this.tool(merged || u);
      case "plan": return renderPlan(u.entries);
      default: return undefined;
    }
  }

  appendText(t) {
    if (!this.text) {
      t = t.replace(/^\n+/, ""); // a new block needs no leading paragraph break
      if (!t) return;
      this.text = el("div", "text");
      this.assistant.append(this.text);
      this.thought = null;
    }
    this.text.textContent += t;
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

  tool(u) {
    let view = this.tools.get(u.toolCallId);
    if (!view) {
      const root = el("details", "tool");
      const summary = el("summary");
      view = { root, title: el("span", "title", "tool"), kind: el("span", "kind"),
               status: el("span", "status", "pending"), body: el("div", "body") };
      summary.append(view.status, view.title, view.kind);
      root.append(summary, view.body);
      root.dataset.toolCallId = u.toolCallId;
      this.assistant.append(root);
      this.tools.set(u.toolCallId, view);
      this.text = null;
      this.thought = null;
    }
    if (u.title) view.title.textContent = u.title;
    if (u.kind) view.kind.textContent = u.kind;
    if (u.status) {
      view.status.textContent = u.status;
      view.root.dataset.status = u.status;
    }
    if (Array.isArray(u.content)) {
      view.body.replaceChildren();
      for (const c of u.content) {
        if (c.type === "diff") view.body.append(renderDiff(c));
        else if (c.type === "content") view.body.append(el("pre", "", blockText(c.content)));
      }
      if (u.content.some((c) => c.type === "diff")) view.root.open = true;
    }
  }

  ask(f) {
    const card = el("div", "permission");
    card.append(el("div", "", `Permission needed: ${f.title} (${f.kind})`));
    const buttons = el("div", "buttons");
    for (const option of f.options || []) {
      const button = el("button", option.kind.startsWith("allow") ? "allow" : "reject", option.name);
      button.type = "button";
      button.dataset.optionId = option.optionId;
      button.addEventListener("click", () => {
        for (const b of buttons.querySelectorAll("button")) b.disabled = true;
        send({ type: "permission-response", requestId: f.requestId, optionId: option.optionId });
      });
      buttons.append(button);
    }
    const decision = el("div", "decision");
    card.append(buttons, decision);
    this.asks.set(f.requestId, { card, buttons, decision });
    this.assistant.append(card);
    this.text = null;
  }

  answered(f) {
    const verdict = f.approved ? "approved" : "rejected";
    const ask = f.requestId ? this.asks.get(f.requestId) : null;
    if (ask) {
      for (const b of ask.buttons.querySelectorAll("button")) b.disabled = true;
      ask.decision.textContent = `${verdict} (${f.by})`;
      ask.card.dataset.decision = verdict;
    } else {
      this.assistant.append(el("div", "decision", `Permission for ${f.title}: ${verdict} (${f.by})`));
    }
  }

  end(text, cls) {
    this.ended = true;
    this.assistant.append(el("div", cls === "error" ? "error" : "ended", text));
  }
}

// ---- the task stream ----------------------------------------------------------------------

function send(frame) {
  if (state.ws && state.ws.readyState === WebSocket.OPEN) state.ws.send(JSON.stringify(frame));
}

// A WebSocket cannot carry an Authorization header, and a key never goes in a URL: it is
// offered as a subprotocol next to ours, and the server answers with "agentao.v1" only.
function subprotocols() {
  if (!state.key) return ["agentao.v1"];
  const bytes = new TextEncoder().encode(state.key);
  const base64 = btoa(String.fromCharCode(...bytes));
  const base64url = base64.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  return ["agentao.v1", "agentao.key." + base64url];
}

function watch(taskId, view, afterSeq = 0) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const query = new URLSearchParams({ after_seq: String(afterSeq) });
  const url = `${scheme}://${location.host}/v1/tasks/${taskId}/stream?${query}`;
  const ws = new WebSocket(url, subprotocols());
  let last = afterSeq;
  state.ws = ws;
  setRunning(true);
  ws.onmessage = (message) => {
    const frame = JSON.parse(message.data);
    if (frame.type === "ping" || frame.type === "error") return;
    if (frame.seq <= last) return;
    last = frame.seq;
    view.frame(frame);
  };
  ws.onclose = () => {
    if (state.ws !== ws) return;
    if (!view.ended) {
      setStatus("reconnecting…");
      setTimeout(() => watch(taskId, view, last), 500);
      return;
    }
    state.ws = null;
    setRunning(false);
    loadSessions();
  };
}

function setRunning(running) {
  state.running = running;
  $("send").disabled = running;
  $("stop").hidden = !running;
  setStatus(running ? "working…" : "");
}

async function submit(event) {
  event.preventDefault();
  const prompt = $("prompt").value.trim();
  if (!prompt || state.running) return;
  $("prompt").value = "";
  const view = new TurnView(prompt);
  try {
    const task = await api("/v1/tasks", {
      method: "POST",
      body: JSON.stringify({
        agent: $("agent").value,
        prompt,
        conversation_id: state.conversation,
        permission_policy: $("policy").value,
      }),
    });
    state.conversation = task.conversation_id;
    watch(task.id, view);
  } catch (error) {
    view.end(error.message, "error");
  }
}

// ---- agents and past sessions -----------------------------------------------------------

async function loadAgents() {
  const models = await api("/v1/models");
  const select = $("agent");
  select.replaceChildren();
  for (const model of models.data) select.append(el("option", "", model.id));
}

async function loadSessions() {
  const list = $("sessions");
  const conversations = await api("/v1/conversations");
  list.replaceChildren();
  for (const conv of conversations.data) {
    const item = el("li", conv.id === state.conversation ? "current" : "", conv.title || "(untitled)");
    item.append(el("small", "", `${conv.agent} · ${conv.source} · ${conv.turn_count} turns`));
    item.dataset.conversationId = conv.id;
    item.addEventListener("click", () => openSession(conv));
    list.append(item);
  }
}

async function openSession(conv) {
  if (state.running) return;
  state.conversation = conv.id;
  $("log").replaceChildren();
  renderPlan([]);
  const agent = [...$("agent").options].find((o) => o.value === conv.agent);
  if (agent) $("agent").value = conv.agent;
  const tasks = await api(`/v1/conversations/${conv.id}/tasks`);
  for (const task of tasks.data) {
    const view = new TurnView(task.prompt);
    const events = await api(`/v1/tasks/${task.id}/events`);
    let last = 0;
    for (const frame of events.data) {
      view.frame(frame);
      last = frame.seq;
    }
    if (task.status === "running" && !view.ended) watch(task.id, view, last);
  }
  loadSessions();
}

function newChat() {
  if (state.running) return;
  state.conversation = null;
  $("log").replaceChildren();
  renderPlan([]);
  loadSessions();
}

async function main() {
  $("composer").addEventListener("submit", submit);
  $("prompt").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) submit(e);
  });
  $("stop").addEventListener("click", () => send({ type: "cancel" }));
  $("new-chat").addEventListener("click", newChat);
  $("agent").addEventListener("change", newChat);
  const health = await (await fetch("/healthz")).json();
  if (health.auth_required && !state.key) await askKey();
  await loadAgents();
  await loadSessions();
  document.body.dataset.ready = "true";
}

main().catch((error) => setStatus(error.message));
