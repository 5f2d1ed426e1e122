"""The bridge: a remote client that settled ACP v2, served from a v1 agent's log.

Theory of operation. The gateway drives its agents over v1, and every turn is a
conversation's log of v1 frames (`tasks.py`). A v2 client gets that log as v2, each
frame translated when it is sent to it (protocol/v2/from_v1.py, the translation our
agent's own v2 view uses), so a v1 and a v2 client can watch one conversation at once:

task-started          state_update running, then the prompt as user_message_chunk
                      with the `messageId` the prompt's reply named (`user_message_id`)
task-running,         the agent's v1 update in v2: chunks with messageIds, keyed
session-update        tool_call_update / plan_update (`FromV1`); a tool call with
                      `capabilities` only as a v2 agent sent them (the log keeps them
                      under `_meta`: agent_protocol.py), never from a v1 agent (no
                      `tool_call/cancel` there); a v2 agent's own terminal as the
                      agent sent it (`v2_terminals`: terminal_update,
                      terminal_output_chunk, the terminal in the call's content)
permission-request    state_update requires_action (the question itself goes out as
                      v2's `session/request_permission`: `permission_params`)
permission-response   state_update running
task-ended            state_update idle with its stopReason (usage under
                      `_meta["agentao.cn/usage"]`, as our agent sends it: server/v2.py)
task-error            state_update idle, stopReason "error" and the error

A replay (`session/resume` with `replayFrom`) sends only the history's messages and
updates, no states. Message ids are derived from the log (the conversation and the seq
of the frame that opened the message, the task for a prompt), so a replay, a resumed
stream and every watcher name the same messages.
"""

from __future__ import annotations

import functools
import uuid
from typing import Any

from agentao.client.content import prompt_text
from agentao.protocol import meta
from agentao.protocol.decode import json_of
from agentao.protocol.errors import InternalError
from agentao.protocol.v2.from_v1 import (
    FromV1,
    permission_request,
    state_update,
    terminal_text,
)
from agentao.store.gateway_records import TaskEvent

V2 = 2
PERMISSION_METHOD = "session/request_permission"
# The namespace of the message ids the bridge derives from the log.
MESSAGE_IDS = uuid.UUID("6f1d3c52-9a3e-4b0e-8a52-2b7c1a0e9d41")
STATES = {"permission-request": "requires_action", "permission-response": "running"}
TERMINAL_KINDS = ("terminal_update", "terminal_output_chunk")  # a v2 agent's own terminals
# Frames of the log a v2 client is sent beyond those a v1 client is (their states).
BRIDGED = frozenset({"task-started", "task-ended", "task-error", *STATES})


def user_message_id(conversation_id: str, task_id: str) -> str:
    """The `messageId` of a turn's prompt: the prompt's reply names it, its echo too."""
    return str(uuid.uuid5(MESSAGE_IDS, f"{conversation_id}/{task_id}/user"))


def frame_message_id(conversation_id: str, seq: int) -> str:
    """The id of the message a frame opens (if its chunk opens one)."""
    return str(uuid.uuid5(MESSAGE_IDS, f"{conversation_id}/{seq}"))


class V2Bridge:
    """What one v2 remote connection is sent (its open messages, by session)."""

    def __init__(self) -> None:
        self.view = FromV1()

    def frame(
        self, conversation_id: str, event: TaskEvent, session_id: str, *, live: bool = True
    ) -> list[dict[str, Any]]:
        """The v2 updates a frame of the log is (see the module docstring); a replayed
        one (`live` false) without the turn's states."""
        updates = self._updates(conversation_id, event, session_id)
        return updates if live else [u for u in updates if u["sessionUpdate"] != "state_update"]

    def _updates(
        self, conversation_id: str, event: TaskEvent, session_id: str
    ) -> list[dict[str, Any]]:
        kind, payload = event.type, event.payload
        if kind == "task-started":
            prompt = payload.get("prompt")
            text = prompt_text(prompt) if isinstance(prompt, list) else str(prompt or "")
            message_id = user_message_id(conversation_id, event.task_id)
            return [state_update("running"), self.view.user_message(session_id, text, message_id)]
        if kind in STATES:
            return [state_update(STATES[kind])]
        if kind == "task-ended":
            return [ended(payload)]
        if kind == "task-error":
            error = payload.get("error") or {}
            wire = InternalError(str(error.get("message", "the turn failed"))).to_wire()
            return [state_update("idle", stopReason="error", error=wire)]
        update = json_of(payload.get("update"))  # a live frame's is the bytes received
        if not isinstance(update, dict):
            return []
        new_id = functools.partial(frame_message_id, conversation_id, event.seq)
        translated = self.view.update(session_id, update, new_id)
        return [] if translated is None else v2_terminals(translated)

    def update(self, session_id: str, update: dict[str, Any]) -> dict[str, Any] | None:
        """A v1 update the gateway sends outside the log (what the agent sent while a
        session opened, or its own replay of a history the log never saw)."""
        return self.view.update(session_id, update)

    def request(self, method: str, params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """One of our questions, as a v2 client reads it."""
        if method == PERMISSION_METHOD:
            return method, permission_params(params)
        return method, params


def v2_terminals(update: dict[str, Any]) -> list[dict[str, Any]]:
    """A tool call update as v2 readers get it: from a v2 agent whose call runs in the
    agent's own terminal (meta.V2_TERMINAL, agent_terminals.py), the terminal's own v2
    updates instead of the one the gateway made of them, or before the call's, whose
    content names the terminal again (FromV1 names a v1 terminal in words)."""
    extra = update.get("_meta")
    kept = extra.get(meta.V2_TERMINAL) if isinstance(extra, dict) else None
    if not isinstance(kept, dict):
        return [_v2_tool_call(update)]
    rest = {k: v for k, v in extra.items() if k != meta.V2_TERMINAL}  # type: ignore[union-attr]
    update = {k: v for k, v in update.items() if k != "_meta"} | ({"_meta": rest} if rest else {})
    ids = [i for i in kept.get("terminals") or () if isinstance(i, str)]
    if "instead" in kept:
        return _terminal_updates(kept["instead"], ids)
    if isinstance(content := update.get("content"), list):
        named = {terminal_text(i): i for i in ids}
        update["content"] = [_named_terminal(block, named) for block in content]
    return [*_terminal_updates(kept.get("before"), ids), _v2_tool_call(update)]


def _terminal_updates(updates: Any, ids: list[str]) -> list[dict[str, Any]]:
    """The kept v2 updates of the named terminals, nothing else (whatever the log says)."""
    listed = updates if isinstance(updates, list) else []
    return [
        u
        for u in listed
        if isinstance(u, dict)
        and u.get("sessionUpdate") in TERMINAL_KINDS
        and u.get("terminalId") in ids
    ]


def _named_terminal(block: Any, named: dict[str, str]) -> Any:
    inner = block.get("content") if isinstance(block, dict) else None
    text = inner.get("text") if isinstance(inner, dict) else None
    if isinstance(text, str) and text in named:
        return {"type": "terminal", "terminalId": named[text]}
    return block


def _v2_tool_call(update: dict[str, Any]) -> dict[str, Any]:
    """A tool call offers `tool_call/cancel` only as a v2 agent did (its capabilities kept
    in the log under meta.V2_TOOL_CALL, with a `cancelled` end); from a v1 agent, which
    cannot stop one tool (bridge_calls.py refuses it), never, whatever its update carried."""
    if update.get("sessionUpdate") != "tool_call_update":
        return update
    update = {k: v for k, v in update.items() if k != "capabilities"}
    extra = update.get("_meta")
    if isinstance(extra, dict) and isinstance(kept := extra.get(meta.V2_TOOL_CALL), dict):
        rest = {k: v for k, v in extra.items() if k != meta.V2_TOOL_CALL}
        update = {k: v for k, v in update.items() if k != "_meta"}
        update.update({**({"_meta": rest} if rest else {}), **kept})
    return update


def ended(payload: dict[str, Any]) -> dict[str, Any]:
    """`task-ended` as v2's idle state: its stop reason, the agent's usage under `_meta`."""
    usage = payload.get("usage")
    extra = {"_meta": {meta.USAGE: usage}} if isinstance(usage, dict) else {}
    return state_update("idle", stopReason=payload.get("stopReason"), **extra)


def permission_params(v1: dict[str, Any]) -> dict[str, Any]:
    """v1's `session/request_permission` params as v2's: the tool call is the subject."""
    tool_call = {k: v for k, v in (v1.get("toolCall") or {}).items() if v is not None}
    title = tool_call.get("title") or "the tool call"
    if "content" in tool_call:
        update = FromV1().update(
            str(v1.get("sessionId")), {"sessionUpdate": "tool_call", **tool_call}
        )
        tool_call = {k: v for k, v in (update or {}).items() if k != "sessionUpdate"}
    return permission_request(
        str(v1.get("sessionId")), f"Allow: {title}?", tool_call, v1.get("options") or []
    )


def initialize_result(v1: dict[str, Any]) -> dict[str, Any]:
    """The agent's v1 `initialize` answer, as v2's: what the bridge serves of it."""
    caps = v1.get("agentCapabilities") or {}
    prompt = caps.get("promptCapabilities") or {}
    markers = {k: {} for k in ("image", "audio", "embeddedContext") if prompt.get(k)}
    mcp = caps.get("mcpCapabilities") or {}
    info = v1.get("agentInfo") or {"name": "agentao-gateway", "version": "0"}
    # A client's instructions (unstable `systemPrompt`, the same shape in both versions)
    # reach an agent that takes them (remote/limits.py).
    system_prompt = (caps.get("sessionCapabilities") or {}).get("systemPrompt")
    instructions = {"systemPrompt": system_prompt} if isinstance(system_prompt, dict) else {}
    return {
        "protocolVersion": V2,
        "info": info,
        "capabilities": {
            "session": {
                "prompt": markers,
                "mcp": {"stdio": {}, **({"http": {}} if mcp.get("http") else {})},
                "title": {},  # session/set_title: the gateway's own (bridge_calls.py)
                **instructions,
            }
        },
    }


__all__ = [
    "BRIDGED",
    "V2",
    "V2Bridge",
    "frame_message_id",
    "initialize_result",
    "permission_params",
    "user_message_id",
    "v2_terminals",
]
