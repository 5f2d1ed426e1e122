"""The v2 view of a session's updates: the same runtime events and v1 updates, as ACP v2.

v1 streams chunks and separate `tool_call`/`tool_call_update`/`plan` updates; v2 keys
every entity (spec/acp-schema.v2.json). One session model feeds both: the `Outbox`
hands each event (or each v1-shaped update the session builds: commands, title, usage,
config options) to this view, which writes it as v2:

UserText           -> user_message_chunk   with the user message's `messageId`
TextDelta          -> agent_message_chunk  `messageId` of the agent message it belongs to
ThoughtDelta       -> agent_thought_chunk  `messageId` of the thought it belongs to
ToolCallStarted    -> tool_call_update     status "pending", name, title, kind, rawInput
ToolCallProgress   -> tool_call_update     status "in_progress" (+ content, title)
ToolCallFinished   -> tool_call_update     status, content, rawOutput (an edit's diff as
                      v2's `changes` + a git patch)
PlanChanged        -> plan_update          `plan: {type: "items", planId, entries}`
available_commands_update   each command tagged `type: "command"` (its input `text`)
current_mode_update         nothing: v2 has modes only as the `mode` config option, sent
                            as a config_option_update by whoever changes the mode
anything else               as v1 writes it (session_info, usage, config options, notice,
                            compaction: the same shape in both)

Message ids: an agent message (and a thought) is one run of chunks; a tool call or a new
user message ends it, so the next text is a new message with a new id, as codex-acp does.
"""

from __future__ import annotations

import difflib
import uuid
from typing import Any

from agentao.agent import events as ev
from agentao.protocol.decode import to_builtins
from agentao.server.updates import UpdateMapper

PLAN_ID = "plan"  # one plan per session (todo_write replaces it whole)
GIT_PATCH = "git_patch"


def new_message_id() -> str:
    return str(uuid.uuid4())


class V2Mapper:
    """Events and v1 updates of one connection's sessions, as v2 update dicts."""

    def __init__(self) -> None:
        self.v1 = UpdateMapper()
        self._open: dict[tuple[str, str], str] = {}  # (session, role) -> its current message

    def message_id(self, session_id: str, role: str) -> str:
        """The id of the `role` message now being streamed in the session (made on first use)."""
        key = (session_id, role)
        if key not in self._open:
            self._open[key] = new_message_id()
        return self._open[key]

    def end_messages(self, session_id: str) -> None:
        """The agent's open message and thought are over (a tool call or a new prompt)."""
        for role in ("agent", "thought"):
            self._open.pop((session_id, role), None)

    def user_message(self, session_id: str, text: str, message_id: str) -> dict[str, Any]:
        self.end_messages(session_id)
        return _chunk("user_message_chunk", message_id, text)

    def event(self, session_id: str, event: ev.TurnEvent) -> dict[str, Any] | None:
        """The v2 update for a runtime event (None for one without: TurnEnded)."""
        if isinstance(event, ev.UserText):
            return self.user_message(session_id, event.text, new_message_id())
        if isinstance(event, ev.TextDelta):
            return _chunk("agent_message_chunk", self.message_id(session_id, "agent"), event.text)
        if isinstance(event, ev.ThoughtDelta):
            thought = self.message_id(session_id, "thought")
            return _chunk("agent_thought_chunk", thought, event.text)
        if isinstance(event, ev.ToolCallStarted):
            self.end_messages(session_id)
            return _tool_call(event)
        if isinstance(event, ev.ToolCallProgress):
            return _tool_update(event.call_id, "in_progress", event.content, title=event.title)
        if isinstance(event, ev.ToolCallFinished):
            return _tool_update(
                event.call_id, event.status, event.content, rawOutput=event.raw_output
            )
        if isinstance(event, ev.PlanChanged):
            return _plan(event)
        update = self.v1(event)
        return None if update is None else self.update(update)

    def update(self, update: Any) -> dict[str, Any] | None:
        """A v1-shaped update (struct or dict) in v2, or None when v2 has no such update."""
        wire = update if isinstance(update, dict) else to_builtins(update)
        kind = wire.get("sessionUpdate")
        if kind == "current_mode_update":
            return None
        if kind == "available_commands_update":
            return {**wire, "availableCommands": [_command(c) for c in wire["availableCommands"]]}
        return wire


def _command(command: dict[str, Any]) -> dict[str, Any]:
    """v1's command in v2: tagged `command`, its free-text input tagged `text`."""
    tagged = {"type": "command", **command}
    if command.get("input") is not None:
        tagged["input"] = {"type": "text", **command["input"]}
    return tagged


def _chunk(kind: str, message_id: str, text: str) -> dict[str, Any]:
    return {
        "sessionUpdate": kind,
        "messageId": message_id,
        "content": {"type": "text", "text": text},
    }


def _tool_call(e: ev.ToolCallStarted) -> dict[str, Any]:
    update: dict[str, Any] = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": e.call_id,
        "name": e.tool_name,
        "title": e.title,
        "kind": e.kind,
        "status": "pending",
        "rawInput": e.raw_input,
    }
    if e.locations:
        update["locations"] = [_location(loc) for loc in e.locations]
    return update


def _location(loc: ev.Location) -> dict[str, Any]:
    return {"path": loc.path} if loc.line is None else {"path": loc.path, "line": loc.line}


def tool_call_v2(e: ev.ToolCallStarted) -> dict[str, Any]:
    """The `toolCall` of a v2 permission subject: the tool call's upsert fields."""
    update = _tool_call(e)
    update.pop("sessionUpdate")
    return update


def _tool_update(
    call_id: str, status: str, outputs: tuple[ev.ToolOutput, ...], **extra: Any
) -> dict[str, Any]:
    update: dict[str, Any] = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": status,
    }
    if outputs:
        update["content"] = [_content(o) for o in outputs]
    update.update({k: v for k, v in extra.items() if v is not None})
    return update


def _content(output: ev.ToolOutput) -> dict[str, Any]:
    if isinstance(output, ev.DiffOutput):
        return _diff(output)
    if isinstance(output, ev.TerminalOutput):
        # v2 has no client terminals (the agent runs commands itself): name it in words
        text = f"(terminal {output.terminal_id})"
        return {"type": "content", "content": {"type": "text", "text": text}}
    return {"type": "content", "content": {"type": "text", "text": output.text}}


def _diff(d: ev.DiffOutput) -> dict[str, Any]:
    """An edit as v2's structured change plus its patch text (git's unified format)."""
    operation = "add" if d.old_text is None else "modify"
    name = d.path.lstrip("/")
    old = [] if d.old_text is None else d.old_text.splitlines(keepends=True)
    before = "/dev/null" if d.old_text is None else f"a/{name}"
    lines = difflib.unified_diff(old, d.new_text.splitlines(keepends=True), before, f"b/{name}")
    patch = f"diff --git a/{name} b/{name}\n" + "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
    return {
        "type": "diff",
        "changes": [{"operation": operation, "path": d.path}],
        "patch": {"format": GIT_PATCH, "text": patch},
    }


def _plan(e: ev.PlanChanged) -> dict[str, Any]:
    entries = [
        {"content": x.content, "priority": x.priority, "status": x.status} for x in e.entries
    ]
    return {
        "sessionUpdate": "plan_update",
        "plan": {"type": "items", "planId": PLAN_ID, "entries": entries},
    }


def state_update(state: str, **fields: Any) -> dict[str, Any]:
    """`state_update` (`running`, `requires_action`, `idle` with its stopReason)."""
    return {"sessionUpdate": "state_update", "state": state, **fields}


__all__ = ["PLAN_ID", "V2Mapper", "new_message_id", "state_update", "tool_call_v2"]
