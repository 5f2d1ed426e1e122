#!/usr/bin/env node
// An ACP v2 client written with the official TypeScript SDK's v2 API
// (`@agentclientprotocol/sdk/experimental/v2`): it spawns an agent, runs initialize,
// session/new and each prompt to the end of its turn (the idle state_update), and prints
// every JSON-RPC message it sends and receives as one JSON line on stdout:
//   {"t": seconds since start, "dir": "send" | "recv", "msg": {...}}
// (the format of tests/data/real-agent-transcripts), so tests can assert on the wire.
//
//   node v2_client.mjs [--cwd DIR] [--prompt TEXT]... [--permission allow|reject|cancel]
//                      [--cancel-prompt TEXT] [--resume] [--release-on-output PATH]
//                      [--cancel-terminal-on-output]
//                      [--together [--barrier PATH] [--cancel-at-barrier]]
//                      -- AGENT_COMMAND [ARGS...]
//
// --permission answers every session/request_permission: `allow` or `reject` pick the
// first option of that kind; `cancel` sends session/cancel and answers `cancelled`.
// --cancel-prompt TEXT: the turn of the prompt TEXT gets session/cancel as soon as its
// first agent_message_chunk arrives (a cancel mid-turn, while the agent streams).
// --release-on-output PATH: at the first `terminal_output_chunk` (an agent-owned terminal's
// live output), write a line to PATH (a FIFO a command waits on): the command can end only
// after the client saw its output, so its end proves the output came live.
// --cancel-terminal-on-output: at the first `terminal_output_chunk`, stop that terminal
// with the SDK's `cancelTerminal` (it refuses, sending nothing, unless the terminal
// advertises `capabilities.cancel`).
// --together: send the first --prompt, and once it is inserted every other at once, without
// waiting for the turn (a v2 agent holds or refuses those sent while a turn runs), then
// `session/list` as a barrier: its
// answer comes after the agent read the prompts. --barrier PATH: then write a line to PATH
// (a FIFO the test waits on before it lets the first turn end). --cancel-at-barrier: then
// send session/cancel. The run waits for one idle state_update per inserted prompt.
// --resume: after the prompts, stop the agent, start the same command again and resume
// the session there with replayFrom {"type": "start"}.
// Exit 0 when everything ran; 1 on an error (its message on stderr).

import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { parseArgs } from "node:util";
import * as acp from "@agentclientprotocol/sdk/experimental/v2";

const { values: args, positionals: command } = parseArgs({
  allowPositionals: true,
  options: {
    cwd: { type: "string", default: process.cwd() },
    prompt: { type: "string", multiple: true, default: [] },
    permission: { type: "string", default: "allow" },
    "cancel-prompt": { type: "string" },
    resume: { type: "boolean", default: false },
    "release-on-output": { type: "string" },
    "cancel-terminal-on-output": { type: "boolean", default: false },
    together: { type: "boolean", default: false },
    barrier: { type: "string" },
    "cancel-at-barrier": { type: "boolean", default: false },
  },
});
if (command.length === 0) fail(new Error("no agent command (give it after --)"));
if (!["allow", "reject", "cancel"].includes(args.permission)) {
  fail(new Error(`--permission must be allow, reject or cancel, not ${args.permission}`));
}

const started = process.hrtime.bigint();
const seconds = () => Math.round(Number(process.hrtime.bigint() - started) / 1e6) / 1000;

function print(dir, msg) {
  process.stdout.write(`${JSON.stringify({ t: seconds(), dir, msg })}\n`);
}

// The SDK's message stream, with every message printed as it passes.
function recordedStream(child) {
  const inner = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const writer = inner.writable.getWriter();
  const writable = new WritableStream({
    write: (msg) => {
      print("send", msg);
      return writer.write(msg);
    },
    close: () => writer.close(),
    abort: (reason) => writer.abort(reason),
  });
  const tap = new TransformStream({
    transform: (msg, controller) => {
      print("recv", msg);
      controller.enqueue(msg);
    },
  });
  return { writable, readable: inner.readable.pipeThrough(tap) };
}

function spawnAgent() {
  const child = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  child.on("error", fail);
  return child;
}

// Answer permission requests as --permission says.
function permissionAnswer(params, agent) {
  if (args.permission === "cancel") {
    agent.notify("session/cancel", { sessionId: params.sessionId }).catch(fail);
    return { outcome: { outcome: "cancelled" } };
  }
  const kinds = args.permission === "allow" ? ["allow_once", "allow_always"] : ["reject_once", "reject_always"];
  const option = params.options.find((o) => kinds.includes(o.kind)) ?? params.options[0];
  return { outcome: { outcome: "selected", optionId: option.optionId } };
}

function clientApp() {
  return acp
    .client({ name: "agentao-test-v2-client" })
    .onRequest("session/request_permission", ({ params, agent }) => permissionAnswer(params, agent))
    .onNotification("session/update", () => {}); // printed on the wire already
}

const INFO = { name: "agentao-test-v2-client", title: "agentao's TS v2 test client", version: "0.0.0" };

async function initialize(agent) {
  return agent.request("initialize", { protocolVersion: 2, info: INFO, capabilities: {} });
}

// Wait for the idle state_update that ends the turn; `onText` runs at its first agent text.
async function untilIdle(session, onText) {
  let release = args["release-on-output"];
  let stop = args["cancel-terminal-on-output"];
  for (;;) {
    const message = await session.nextUpdate();
    if (message.kind === "stop") return message.stopReason;
    if (release && message.update.sessionUpdate === "terminal_output_chunk") {
      writeFileSync(release, "released\n"); // blocks until the command opens the FIFO
      release = null;
    }
    if (stop && message.update.sessionUpdate === "terminal_output_chunk") {
      session.cancelTerminal(message.update.terminalId).catch(fail);
      stop = false;
    }
    if (onText && message.update.sessionUpdate === "agent_message_chunk") {
      onText();
      onText = null;
    }
  }
}

async function firstRun() {
  const child = spawnAgent();
  const sessionId = await clientApp().connectWith(recordedStream(child), async (agent) => {
    const init = await initialize(agent);
    if (init.protocolVersion !== 2) throw new Error(`the agent answered version ${init.protocolVersion}`);
    const session = await agent.buildSession({ cwd: args.cwd, mcpServers: [] }).start();
    if (args.together) {
      await promptTogether(agent, session);
      session.dispose();
      return session.sessionId;
    }
    for (const prompt of args.prompt) {
      const cancel = () =>
        agent.notify("session/cancel", { sessionId: session.sessionId }).catch(fail);
      const idle = untilIdle(session, prompt === args["cancel-prompt"] ? cancel : null);
      await session.prompt(prompt);
      await idle;
    }
    session.dispose();
    return session.sessionId;
  });
  await stopAgent(child);
  return sessionId;
}

// --together: every prompt sent at once; a refused one (an error reply) is on the wire.
async function promptTogether(agent, session) {
  const [first, ...rest] = args.prompt;
  await session.prompt(first); // inserted: its turn runs
  const sent = rest.map((prompt) =>
    session.prompt(prompt).then(
      () => true,
      () => false,
    ),
  );
  sent.unshift(Promise.resolve(true));
  await agent.request("session/list", {});
  if (args.barrier) writeFileSync(args.barrier, "barrier\n"); // blocks until the test reads
  if (args["cancel-at-barrier"]) await agent.notify("session/cancel", { sessionId: session.sessionId });
  const inserted = (await Promise.all(sent)).filter(Boolean).length;
  for (let i = 0; i < inserted; i++) await untilIdle(session, null);
}

async function resumeRun(sessionId) {
  const child = spawnAgent();
  await clientApp().connectWith(recordedStream(child), async (agent) => {
    await initialize(agent);
    await agent.request("session/resume", { sessionId, cwd: args.cwd, replayFrom: { type: "start" } });
  });
  await stopAgent(child);
}

function stopAgent(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", resolve);
    child.stdin.end();
  });
}

function fail(error) {
  process.stderr.write(`v2_client: ${error?.stack ?? JSON.stringify(error)}\n`);
  process.exit(1);
}

try {
  const sessionId = await firstRun();
  if (args.resume) await resumeRun(sessionId);
  process.exit(0);
} catch (error) {
  fail(error);
}
