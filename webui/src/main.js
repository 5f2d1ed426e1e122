// agentao's web UI: a task-stream client. See README "The web UI" for how it is built.
import "./style.css";
import { api } from "./api.js";
import { showBudget } from "./budget.js";
import { $, el } from "./dom.js";
import { Follower } from "./follow.js";
import { ModelPicker } from "./models.js";
import { desk } from "./permissions.js";
import { SessionList } from "./sessions.js";
import { TaskStream } from "./stream.js";
import { ConversationView, sessionEvents } from "./turn.js";
import { showUsage } from "./usage.js";
import { WorkdirPicker } from "./workdir.js";

const state = {
  conversation: null, // the conversation the next prompt continues
  stream: null, // the running task's stream
  starting: null, // the prompt being sent, until its task is known and watched
  opening: null, // the session being loaded (a newer click wins)
  view: new ConversationView(), // the open conversation's turns
  queued: [], // words typed while a turn ran that its agent could not take: the next prompts
};

const follower = new Follower();
const workdir = new WorkdirPicker();
const models = new ModelPicker(() => newChat());
const sessions = new SessionList({
  onOpen: (conv) => openSession(conv),
  onDeleted: (id) => { if (id === state.conversation) newChat(); },
});

function setStatus(text) { $("status").textContent = text; }

function setRunning(running) {
  document.body.dataset.running = running; // no edit and resend while a turn runs
  // The prompt box stays usable: words typed meanwhile steer the turn, or wait their turn.
  $("stop").hidden = !running;
  $("retry").hidden = running || !lastPrompt();
  setStatus(running ? "working…" : "");
}

// The open conversation is in the URL's fragment, so a reload comes back to it.
function setConversation(id) {
  state.conversation = id;
  state.view.conversation = id; // the turns drawn from now on are its

  if (desk.current !== id) desk.open(id);
  sessions.select(id);
  history.replaceState(null, "", id ? `#${id}` : location.pathname);
}

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

sessionEvents.plan = renderPlan;
sessionEvents.usage = showUsage;

function clearLog() {
  if (state.stream) state.stream.close();
  state.queued = []; // they were for the conversation left
  showQueued();
  state.stream = null;
  state.starting = null;
  $("log").replaceChildren();
  setRunning(false);
  state.view = new ConversationView();
  renderPlan([]);
  showUsage(null);
}

function watch(taskId) {
  setRunning(true);
  const stream = new TaskStream(taskId, state.view, {
    onStatus: setStatus,
    onEnd: () => {
      if (state.stream !== stream) return;
      state.stream = null;
      setRunning(false);
      sessions.load();
      showBudget(); // the turn was charged as it ended
      if (state.conversation) showWhere(state.conversation); // its mode, once it is open
      if (!models.known()) models.load(); // an agent lists its models with its first session
      if (state.queued.length) send(state.queued.shift()); // the words that waited, in order
      showQueued();
    },
  });
  state.stream = stream;
}

function submit(event) {
  event.preventDefault();
  const prompt = $("prompt").value.trim();
  if (!prompt) return;
  $("prompt").value = "";
  take(prompt);
}

// Words from the box: into the running turn; after the prompt still being sent (a busy
// gateway answers it once its turn has started), in the order typed; else a new turn.
function take(words) {
  if (state.stream) steer(state.stream, words);
  else if (state.starting) state.starting.then(() => take(words), () => take(words));
  else send(words);
}

// Words typed while the turn runs: to the agent inside the turn when it steers, else queued
// on the page and sent as the next prompt when the turn ends.
async function steer(stream, words) {
  if (stream.steers === false) return queue(words);
  try {
    await stream.steer(words);
    stream.steers = true;
    setStatus("sent: the agent reads it at its next step");
  } catch (error) {
    if (error.code === "steering_unsupported") stream.steers = false;
    else if (error.code !== "task_not_running") setStatus(error.message);
    queue(words);
  }
}

function queue(words) {
  if (!state.stream) return take(words); // the turn ended while the words travelled
  state.queued.push(words);
  showQueued();
}

function dropQueued(index) {
  state.queued.splice(index, 1);
  showQueued();
}

function showQueued() {
  const list = $("queued");
  list.replaceChildren();
  state.queued.forEach((words, index) => {
    const line = el("div", "queued-prompt");
    line.append(el("span", "queued-label", "queued"), el("span", "queued-text", words));
    const drop = el("button", "queued-drop", "✕");
    drop.type = "button";
    drop.title = "Drop it (Esc)";
    drop.setAttribute("aria-label", `Drop the queued prompt: ${words}`);
    drop.addEventListener("click", () => dropQueued(index));
    line.append(drop);
    list.append(line);
  });
  list.hidden = state.queued.length === 0;
}

// Retry: the last turn's prompt again, as a new turn of the same conversation.
function retry() {
  const prompt = lastPrompt();
  if (prompt && !busy()) send(prompt);
}

function busy() { return Boolean(state.stream || state.starting); }

// Stop the running turn; one whose prompt is still being sent, once its task is known.
function stop() {
  if (state.stream) return state.stream.send({ type: "cancel" });
  const view = state.view;
  if (state.starting) state.starting.then(() => state.view === view && state.stream && stop());
}

function lastPrompt() {
  const turns = $("log").querySelectorAll(".turn > .user");
  return turns.length ? turns[turns.length - 1].textContent : "";
}

// `state.starting` settles once the task is watched (or the send failed): words typed
// meanwhile wait on it (`take`) rather than start a turn of their own.
function send(prompt) {
  const starting = start(prompt).finally(() => {
    if (state.starting === starting) state.starting = null;
  });
  state.starting = starting;
  return starting;
}

async function start(prompt) {
  $("empty").hidden = true;
  setRunning(true); // its stop button too: a prompt being sent can be stopped
  const conversation = state.view;
  follower.follow(); // a person who sends a prompt wants to see its answer
  const view = conversation.started(prompt);
  try {
    const task = await api("/v1/tasks", {
      method: "POST",
      body: JSON.stringify({
        agent: models.choice(),
        prompt,
        conversation_id: state.conversation,
        permission_policy: $("policy").value,
        cwd: state.conversation ? null : workdir.choice(), // a conversation keeps its own
      }),
    });
    sessions.load(); // a new conversation shows in the list at once
    // Left meanwhile (another session, a new chat): its turn runs on, and is watched
    // when its conversation is opened again; this page stays where it went.
    if (state.view !== conversation) return;
    if (!state.conversation) showWhere(task.conversation_id); // where it started, checked
    setConversation(task.conversation_id);
    conversation.adopt(task.id, view);
    watch(task.id);
  } catch (error) {
    view.end(error.message, "error");
    if (state.view === conversation) setRunning(false);
  }
}

// Edit and resend (edit.js): the turn's conversation forked before that turn, the prompt
// sent there. The turns from the edited one on stay the source conversation's: off this page.
async function resend(conversation, taskId, prompt) {
  if (busy() || !conversation) return;
  const fork = await api(`/v1/conversations/${conversation}/fork`, {
    method: "POST",
    body: JSON.stringify({ before_task: taskId }),
  });
  const edited = state.view.turns.get(taskId);
  while (edited && edited.root.nextSibling) edited.root.nextSibling.remove();
  if (edited) edited.root.remove();
  setConversation(fork.id);
  await send(prompt);
}

sessionEvents.resend = resend;

// Rewind to here (rewind.js): a dry run; or the files restored, then the conversation forked
// before that turn and the prompt put back in the box, as edit and resend would send it.
async function rewind(conversation, taskId, { dry_run = false, force = false }) {
  if (busy() || !conversation) throw new Error("wait for the turn to end");
  const path = `/v1/conversations/${conversation}/rewind`;
  const body = JSON.stringify({ before_task: taskId, dry_run, force });
  const done = await api(path, { method: "POST", body });
  if (dry_run) return done;
  if (!done.can_rewind) throw new Error(done.error || "the agent did not rewind");
  const fork = await api(`/v1/conversations/${conversation}/fork`, {
    method: "POST",
    body: JSON.stringify({ before_task: taskId }),
  });
  const turn = state.view.turns.get(taskId);
  const prompt = turn ? turn.user.textContent : "";
  while (turn && turn.root.nextSibling) turn.root.nextSibling.remove();
  if (turn) turn.root.remove();
  setConversation(fork.id);
  sessions.load();
  $("prompt").value = prompt;
  $("prompt").focus();
  setStatus(`rewound: ${done.files_changed.length} file(s) restored`);
  return done;
}

sessionEvents.rewind = rewind;

async function openSession(conv) {
  const token = (state.opening = {});
  clearLog();
  setConversation(conv.id);
  models.setAgent(conv.agent);
  closeSidebar();
  $("empty").hidden = true;
  const view = await api(`/v1/conversations/${conv.id}/view`);
  if (state.opening !== token) return; // another session was clicked meanwhile
  state.view.render(view.items);
  workdir.showSession(view.cwd, view.mode);
  for (const taskId of view.running) if (!state.view.turn(taskId).ended) watch(taskId);
  if (!state.stream) setRunning(false); // offers a retry of its last turn
  follower.follow();
}

async function openById(id) {
  try {
    await openSession(await api(`/v1/conversations/${id}`));
  } catch (error) {
    setStatus(error.message);
  }
}

// The directory and mode of a conversation just started here (the gateway's word).
async function showWhere(id) {
  try {
    const view = await api(`/v1/conversations/${id}/view`);
    if (state.conversation === id) workdir.showSession(view.cwd, view.mode);
  } catch {
    // shown when the session is next opened
  }
}

function newChat() {
  state.opening = null;
  clearLog();
  setConversation(null);
  workdir.showNew();
  workdir.load($("agent").value);
  $("empty").hidden = false;
  closeSidebar();
  $("prompt").focus();
}

// ---- the phone layout: the sidebar slides over the page -----------------------------------

function closeSidebar() { document.body.classList.remove("sidebar-open"); }

function toggleSidebar() { document.body.classList.toggle("sidebar-open"); }

// ---- keys: Enter sends, Shift+Enter is a new line, Escape drops the last queued prompt, or
// else stops the turn ---------------------------------------------------------------------

function onPromptKey(e) {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) submit(e);
}

function onKey(e) {
  if (e.key !== "Escape" || e.defaultPrevented) return;
  if (document.body.classList.contains("sidebar-open")) closeSidebar();
  else if (state.queued.length) dropQueued(state.queued.length - 1);
  else stop();
}

// A question from a session that is not in the list yet (an API caller's) reloads the list.
desk.on((what, value) => {
  if (what === "open") openById(value.conversationId);
  if (what !== "counts") return;
  sessions.badges(value);
  if ([...value.keys()].some((id) => id && !sessions.has(id)) && !sessions.query) sessions.load();
});

async function main() {
  $("composer").addEventListener("submit", submit);
  $("prompt").addEventListener("keydown", onPromptKey);
  document.addEventListener("keydown", onKey);
  $("retry").addEventListener("click", retry);
  $("stop").addEventListener("click", stop);
  $("new-chat").addEventListener("click", newChat);
  $("menu").addEventListener("click", toggleSidebar);
  $("scrim").addEventListener("click", closeSidebar);
  // A gateway that needs a key answers 401 and api() asks for one; a keyless gateway's
  // login link set a session cookie instead, which same-origin requests carry by themselves.
  await models.load();
  await workdir.load($("agent").value);
  await sessions.load();
  await showBudget();
  desk.start();
  const fragment = location.hash.slice(1);
  if (fragment) await openById(fragment);
  document.body.dataset.ready = "true";
}

main().catch((error) => setStatus(error.message));
