#!/usr/bin/env node
// A scripted ACP v2 agent over stdio, written with the official TypeScript SDK's v2 API
// (`@agentclientprotocol/sdk/experimental/v2`): what a v2 agent built on the reference
// implementation sends, for agentao's client and gateway tests. No LLM: each prompt plays
// the next turn of a script (JSON), like agentao's Python fake agents.
//
//   node v2_agent.mjs [--script FILE] [--state DIR]
//
// The script is {"turns": [[step, ...], ...], "config": [option, ...]}; a prompt beyond the
// last turn plays the default turn (one text message). `config` (optional) is the v2
// `configOptions` each new session starts with (a mode is an option of category `mode`):
// session/new and session/resume answer them, session/set_config_option sets one (-32602
// for an unknown id or value) and answers them all. `commands` (optional): the
// `availableCommands` of every session/new result. A step is one of:
//   {"say": ["Hel", "lo"]}            agent_message_chunk per piece, one messageId per step
//   {"think": ["hmm"]}                agent_thought_chunk per piece
//   {"tool": {"id", "title", "kind", "status", "content": "text"}}
//                                     a tool_call_update keyed by id (an upsert: repeat the
//                                     id to patch it; `content` becomes one text item)
//   {"ask": {"toolCallId", "title"}}  session/request_permission: state `requires_action`
//                                     until answered, then `running`; a rejection marks the
//                                     tool call `failed` (a cancel `cancelled`), ends the turn
//   {"wait_for_cancel": true}         stay `running` until session/cancel
//   {"fs": {"read": [path], "write": [path]}}
//                                     read and write those files itself (a v2 agent calls no
//                                     client fs/*), and say what happened as one message:
//                                     {"read": {path: "ok: TEXT" | code}, "write": {...}}
//   {"set": {"configId", "value"}}    the agent changes a config option itself (its mode,
//                                     say) and sends `config_option_update`
//   {"stop": "end_turn"}              the idle stop reason (default `end_turn`)
// Every turn: `running`, the user message echoed with the prompt's messageId, the steps,
// then `idle` with its stopReason and usage. session/cancel ends the turn `cancelled`.
// With --state DIR every session's history is kept in DIR/<sessionId>.json, so a second
// agent process answers session/resume (replayFrom {"type": "start"}) with the replay.

import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { Readable, Writable } from "node:stream";
import { parseArgs } from "node:util";
import * as acp from "@agentclientprotocol/sdk/experimental/v2";

const DEFAULT_TURN = [{ say: ["Hello from the v2 agent."] }];
const PERMISSION_OPTIONS = [
  { optionId: "allow", name: "Allow", kind: "allow_once" },
  { optionId: "reject", name: "Reject", kind: "reject_once" },
];

const { values: args } = parseArgs({
  options: { script: { type: "string" }, state: { type: "string" } },
});
const script = args.script ? JSON.parse(readFileSync(args.script, "utf8")) : { turns: [] };
const turns = script.turns ?? [];
let turnsPlayed = 0;

// sessionId -> { cwd, history: [update, ...], turn: {controller} | null }
const sessions = new Map();

function statePath(sessionId) {
  return args.state ? join(args.state, `${encodeURIComponent(sessionId)}.json`) : null;
}

function saveSession(sessionId, session) {
  const path = statePath(sessionId);
  const { cwd, history, config } = session;
  if (path) writeFileSync(path, JSON.stringify({ cwd, history, config }));
}

function loadSession(sessionId) {
  if (sessions.has(sessionId)) return sessions.get(sessionId);
  const path = statePath(sessionId);
  if (!path || !existsSync(path)) return null;
  const stored = JSON.parse(readFileSync(path, "utf8"));
  const session = { cwd: stored.cwd, history: stored.history, config: stored.config, turn: null };
  sessions.set(sessionId, session);
  return session;
}

let client = null; // the AgentContext of this (stdio) connection

// Send one update; `replayable` ones (messages, tool calls) go into the session's history.
async function update(sessionId, body, { replayable = true } = {}) {
  const session = sessions.get(sessionId);
  if (replayable && session) {
    session.history.push(body);
    saveSession(sessionId, session);
  }
  await client.notify("session/update", { sessionId, update: body });
}

const state = (sessionId, name, extra = {}) =>
  update(sessionId, { sessionUpdate: "state_update", state: name, ...extra }, { replayable: false });

const text = (value) => ({ type: "text", text: value });

async function chunks(sessionId, kind, pieces) {
  const messageId = randomUUID();
  for (const piece of pieces) {
    await update(sessionId, { sessionUpdate: kind, messageId, content: text(piece) });
  }
}

function toolUpdate(tool) {
  const body = { sessionUpdate: "tool_call_update", toolCallId: tool.id };
  for (const key of ["title", "kind", "status"]) if (key in tool) body[key] = tool[key];
  if ("content" in tool) body.content = [{ type: "content", content: text(tool.content) }];
  return body;
}

// Ask the person; resolves to true only for an `allow` answer.
async function ask(sessionId, question, signal) {
  await state(sessionId, "requires_action");
  let allowed = false;
  try {
    const answer = await client.request(
      "session/request_permission",
      {
        sessionId,
        title: question.title ?? "Allow?",
        subject: { type: "tool_call", toolCall: { toolCallId: question.toolCallId } },
        options: PERMISSION_OPTIONS,
      },
      { cancellationSignal: signal, stopWaitingOnCancel: true },
    );
    allowed = answer.outcome.outcome === "selected" && answer.outcome.optionId === "allow";
  } catch (error) {
    if (!signal.aborted) throw error;
  }
  if (!signal.aborted) await state(sessionId, "running");
  if (!allowed) {
    const status = signal.aborted ? "cancelled" : "failed";
    await update(sessionId, toolUpdate({ id: question.toolCallId, status }));
  }
  return allowed;
}

// What this process may do to files: the sandbox it runs in decides, not the client.
function tryFs({ read = [], write = [] }) {
  const seen = { read: {}, write: {} };
  for (const path of read) {
    try {
      seen.read[path] = `ok: ${readFileSync(path, "utf8")}`;
    } catch (error) {
      seen.read[path] = error.code ?? String(error);
    }
  }
  for (const path of write) {
    try {
      writeFileSync(path, "planted by the v2 agent");
      seen.write[path] = "ok";
    } catch (error) {
      seen.write[path] = error.code ?? String(error);
    }
  }
  return seen;
}

function untilAborted(signal) {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", resolve, { once: true });
  });
}

// The session's option `configId` set to `value`; false when either is unknown.
function setOption(session, configId, value) {
  const option = session.config.find((o) => o.configId === configId);
  const values = (option?.options ?? []).flatMap((c) => c.options ?? [c]).map((c) => c.value);
  if (!values.includes(value)) return false;
  option.currentValue = value;
  return true;
}

// Play one turn's steps; returns the stop reason.
async function play(sessionId, steps, signal) {
  let stopReason = "end_turn";
  for (const step of steps) {
    if (signal.aborted) return "cancelled";
    if (step.say) await chunks(sessionId, "agent_message_chunk", step.say);
    else if (step.think) await chunks(sessionId, "agent_thought_chunk", step.think);
    else if (step.tool) await update(sessionId, toolUpdate(step.tool));
    else if (step.ask) {
      if (!(await ask(sessionId, step.ask, signal))) return signal.aborted ? "cancelled" : "end_turn";
    } else if (step.wait_for_cancel) await untilAborted(signal);
    else if (step.fs) await chunks(sessionId, "agent_message_chunk", [JSON.stringify(tryFs(step.fs))]);
    else if (step.set) {
      const session = sessions.get(sessionId);
      setOption(session, step.set.configId, step.set.value);
      saveSession(sessionId, session);
      const body = { sessionUpdate: "config_option_update", configOptions: session.config };
      await update(sessionId, body, { replayable: false });
    } else if (step.stop) stopReason = step.stop;
  }
  return signal.aborted ? "cancelled" : stopReason;
}

async function runTurn(sessionId, session, steps) {
  const controller = new AbortController();
  session.turn = { controller };
  let stopReason;
  try {
    stopReason = await play(sessionId, steps, controller.signal);
  } finally {
    session.turn = null;
  }
  const usage = { totalTokens: 15, inputTokens: 10, outputTokens: 5 };
  await state(sessionId, "idle", { stopReason, usage });
}

function requireSession(sessionId) {
  const session = loadSession(sessionId);
  if (!session) throw acp.RequestError.sessionNotFound(sessionId);
  return session;
}

const app = acp
  .agent({ name: "agentao-test-v2-agent" })
  .onConnect((connection) => {
    client = connection.client;
  })
  .onRequest("initialize", ({ params }) => {
    if (params.protocolVersion < 2) {
      throw acp.RequestError.unsupportedProtocolVersion(params.protocolVersion, [2]);
    }
    return {
      protocolVersion: 2,
      info: { name: "agentao-test-v2-agent", title: "agentao's TS v2 test agent", version: "0.0.0" },
      capabilities: { session: {} },
    };
  })
  .onRequest("session/new", ({ params }) => {
    const sessionId = `v2-${randomUUID()}`;
    const config = structuredClone(script.config ?? []);
    const session = { cwd: params.cwd, history: [], config, turn: null };
    sessions.set(sessionId, session);
    saveSession(sessionId, session);
    const result = config.length ? { sessionId, configOptions: config } : { sessionId };
    return script.commands ? { ...result, availableCommands: script.commands } : result;
  })
  .onRequest("session/set_config_option", ({ params }) => {
    const session = requireSession(params.sessionId);
    if (!setOption(session, params.configId, params.value)) {
      throw acp.RequestError.invalidParams(
        { configId: params.configId, value: params.value },
        "unknown config option or value",
      );
    }
    saveSession(params.sessionId, session);
    return { configOptions: session.config };
  })
  .onRequest("session/prompt", async ({ params }) => {
    const session = requireSession(params.sessionId);
    if (session.turn) throw acp.RequestError.invalidRequest(undefined, "a turn is running");
    const steps = turns[turnsPlayed++] ?? DEFAULT_TURN;
    const messageId = randomUUID();
    await state(params.sessionId, "running");
    await update(params.sessionId, { sessionUpdate: "user_message", messageId, content: params.prompt });
    // The reply acknowledges the insertion; the turn runs on after it.
    setImmediate(() => runTurn(params.sessionId, session, steps).catch(fail));
    return { messageId };
  })
  .onNotification("session/cancel", ({ params }) => {
    sessions.get(params.sessionId)?.turn?.controller.abort();
  })
  .onRequest("session/resume", async ({ params }) => {
    const session = requireSession(params.sessionId);
    const from = params.replayFrom;
    if (from && from.type !== "start") {
      throw acp.RequestError.invalidParams({ replayFrom: from }, "only replayFrom start is kept");
    }
    if (from) {
      for (const body of session.history) {
        await client.notify("session/update", { sessionId: params.sessionId, update: body });
      }
    }
    await state(params.sessionId, session.turn ? "running" : "idle");
    return session.config?.length ? { configOptions: session.config } : {};
  })
  .onRequest("session/close", ({ params }) => {
    sessions.get(params.sessionId)?.turn?.controller.abort();
    sessions.delete(params.sessionId);
    return {};
  });

function fail(error) {
  process.stderr.write(`v2_agent: ${error?.stack ?? error}\n`);
  process.exit(1);
}

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const connection = app.connect(stream);
connection.closed.then(() => process.exit(0), fail);
