"""The v2 view of a session's updates: the same runtime events and v1 updates, as ACP v2.

v1 streams chunks and separate `tool_call`/`tool_call_update`/`plan` updates; v2 keys
every entity (spec/acp-schema.v2.json). One session model feeds both: the `Outbox`
hands each event (or each v1-shaped update the session builds: commands, title, usage,
config options) to this view, which writes it as v2:

UserText           -> user_message_chunk   with the user message's `messageId`
TextDelta          -> agent_message_chunk  `messageId` of the agent message it belongs to
ThoughtDelta       -> agent_thought_chunk  `messageId` of the thought it belongs to
ToolCallStarted    -> tool_call_update     status "pending", name, title, kind, rawInput
ToolCallProgress   -> tool_call_update     status "in_progress" (+ content, title); a
                      stoppable tool's "running now" advertises `capabilities.cancel`
ToolCallFinished   -> tool_call_update     status (also "cancelled": stopped alone by
                      `tool_call/cancel`), content, rawOutput (an edit's diff as v2's
                      `changes` + a git patch); `capabilities: null` where cancel was
                      advertised (a final call is never cancellable)
PlanChanged        -> plan_update          `plan: {type: "items", planId, entries}`
TerminalStarted    -> terminal_update      the agent-owned terminal: command, cwd, and
                      `capabilities.cancel` (terminal/cancel kills the command alone);
                      then the call's tool_call_update, content `[{type: "terminal"}]`
TerminalChunk      -> terminal_output_chunk  the bytes, base64
TerminalExited     -> terminal_update      `exitStatus` (code or signal), `capabilities:
                      null`, and `output` (the kept head and tail) when the live chunks
                      stopped at `terminal_stream_limit`; the call's final content is the
                      terminal, then its output as text (for readers without terminals)
available_commands_update   each command tagged `type: "command"` (its input `text`)
current_mode_update         nothing: v2 has modes only as the `mode` config option, sent
                            as a config_option_update by whoever changes the mode
anything else               as v1 writes it (session_info, usage, config options, notice,
                            compaction: the same shape in both)

The wire part (v1 updates in v2, chunks, diffs, plans, state updates, message ids) is
protocol/v2/from_v1.py's, shared with the gateway's bridge; this module adds the events.

Message ids: an agent message (and a thought) is one run of chunks; a tool call or a new
user message ends it, so the next text is a new message with a new id, as codex-acp does.
"""

from __future__ import annotations

import base64
from typing import Any

from agentao.agent import events as ev
from agentao.protocol.decode import to_builtins
from agentao.protocol.v2.from_v1 import (
    PLAN_ID,
    FromV1,
    chunk,
    diff,
    new_message_id,
    plan_update,
    state_update,
    terminal_text,
    text_content,
    v2_update,
)
from agentao.server.updates import UpdateMapper


class V2Mapper(FromV1):
    """Events and v1 updates of one connection's sessions, as v2 update dicts (the wire
    part, message ids included, is protocol/v2/from_v1.py's, shared with the gateway)."""

    def __init__(self) -> None:
        super().__init__()
        self.v1 = UpdateMapper()
        self._cancel_offered: set[tuple[str, str]] = set()  # (session, call) told cancellable
        self._terminals: dict[tuple[str, str], str] = {}  # (session, call) -> its terminal

    def events(self, session_id: str, event: ev.TurnEvent) -> list[dict[str, Any]]:
        """The v2 updates for a runtime event (none for TurnEnded)."""
        if type(event) is ev.TerminalStarted:  # one cheap test on the hot path of text
            self._terminals[(session_id, event.call_id)] = event.terminal_id
            terminal = {"type": "terminal", "terminalId": event.terminal_id}
            call = _tool_update(event.call_id, "in_progress", ())
            return [_terminal_started(event), {**call, "content": [terminal]}]
        update = self.event(session_id, event)
        return [] if update is None else [update]

    def event(self, session_id: str, event: ev.TurnEvent) -> dict[str, Any] | None:
        """The v2 update for a runtime event (None for one without: TurnEnded)."""
        if isinstance(event, ev.UserText):
            return self.user_message(session_id, event.text, new_message_id())
        if isinstance(event, ev.TextDelta):
            return chunk("agent_message_chunk", self.message_id(session_id, "agent"), event.text)
        if isinstance(event, ev.ThoughtDelta):
            thought = self.message_id(session_id, "thought")
            return chunk("agent_thought_chunk", thought, event.text)
        if isinstance(event, ev.ToolCallStarted):
            self.end_messages(session_id)
            return _tool_call(event)
        if isinstance(event, ev.ToolCallProgress):
            return self._progress(session_id, event)
        if isinstance(event, ev.ToolCallFinished):
            update = _tool_update(
                event.call_id, event.status, event.content, rawOutput=event.raw_output
            )
            terminal_id = self._terminals.pop((session_id, event.call_id), None)
            if terminal_id is not None:  # shown live: the terminal stays in the call
                terminal = {"type": "terminal", "terminalId": terminal_id}
                update["content"] = [terminal, *update.get("content", [])]
            if (session_id, event.call_id) in self._cancel_offered:
                self._cancel_offered.discard((session_id, event.call_id))
                update["capabilities"] = None  # final: no longer cancellable
            return update
        if isinstance(event, ev.PlanChanged):
            return _plan(event)
        if isinstance(event, ev.TerminalChunk):  # after the text: chunks are the hot path
            data = base64.b64encode(event.data).decode("ascii")
            return {
                "sessionUpdate": "terminal_output_chunk",
                "terminalId": event.terminal_id,
                "data": data,
            }
        if isinstance(event, ev.TerminalExited):
            return _terminal_exited(event)
        update = self.v1(event)
        return None if update is None else self.v1_update(update)

    def _progress(self, session_id: str, event: ev.ToolCallProgress) -> dict[str, Any]:
        update = _tool_update(event.call_id, "in_progress", event.content, title=event.title)
        if event.cancellable:  # tool_call/cancel may stop it from now on
            self._cancel_offered.add((session_id, event.call_id))
            update["capabilities"] = {"cancel": {}}
        return update

    def v1_update(self, update: Any) -> dict[str, Any] | None:
        """A v1-shaped update the session built (struct or dict) in v2, or None when v2
        has no such update."""
        return v2_update(update if isinstance(update, dict) else to_builtins(update))


def _terminal_started(e: ev.TerminalStarted) -> dict[str, Any]:
    update: dict[str, Any] = {
        "sessionUpdate": "terminal_update",
        "terminalId": e.terminal_id,
        "command": e.command,
        "cwd": e.cwd,
    }
    if e.cancellable:
        update["capabilities"] = {"cancel": {}}
    return update


def _terminal_exited(e: ev.TerminalExited) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if e.exit_code is not None:
        status["exitCode"] = e.exit_code
    if e.signal is not None:
        status["signal"] = e.signal
    update: dict[str, Any] = {
        "sessionUpdate": "terminal_update",
        "terminalId": e.terminal_id,
        "exitStatus": status,
        "capabilities": None,  # exited: no longer cancellable
    }
    if e.snapshot is not None:
        update["output"] = {"data": base64.b64encode(e.snapshot).decode("ascii")}
    return update


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
        return diff(output.path, output.old_text, output.new_text)
    if isinstance(output, ev.TerminalOutput):
        return text_content(terminal_text(output.terminal_id))
    return text_content(output.text)


def _plan(e: ev.PlanChanged) -> dict[str, Any]:
    return plan_update(
        [{"content": x.content, "priority": x.priority, "status": x.status} for x in e.entries]
    )


__all__ = ["PLAN_ID", "V2Mapper", "new_message_id", "state_update", "tool_call_v2"]
