"""Runtime events to ACP `session/update`s: one mapping, for live turns and for replay.

UserText           -> user_message_chunk        (replay only)
TextDelta          -> agent_message_chunk
ThoughtDelta       -> agent_thought_chunk
ToolCallStarted    -> tool_call            status "pending", title, kind, rawInput, locations
ToolCallProgress   -> tool_call_update     status "in_progress" (+ live content, title)
ToolCallFinished   -> tool_call_update     status "completed"/"failed", content, rawOutput
PlanChanged        -> plan
Notice             -> notice (sent only to clients that advertised `session.notices`;
                      the others get a thought instead: see gates.py)
TurnEnded          -> nothing (it is the `session/prompt` result)
"""

from __future__ import annotations

from typing import Any

from agentao.agent import events as ev
from agentao.protocol import schema

Update = Any  # one of schema.SessionUpdate's variants


def text_block(text: str) -> schema.TextContentBlock:
    return schema.TextContentBlock(text=text)


def tool_content(output: ev.ToolOutput) -> schema.ToolCallContent:
    if isinstance(output, ev.DiffOutput):
        return schema.DiffToolCallContent(
            path=output.path, old_text=output.old_text, new_text=output.new_text
        )
    if isinstance(output, ev.TerminalOutput):
        return schema.TerminalToolCallContent(terminal_id=output.terminal_id)
    return schema.ContentToolCallContent(content=text_block(output.text))


def _locations(locations: tuple[ev.Location, ...]) -> list[schema.ToolCallLocation] | None:
    if not locations:
        return None
    return [schema.ToolCallLocation(path=loc.path, line=loc.line) for loc in locations]


def _contents(outputs: tuple[ev.ToolOutput, ...]) -> list[schema.ToolCallContent] | None:
    return [tool_content(o) for o in outputs] if outputs else None


def tool_call_update_for_permission(call: ev.ToolCallStarted) -> schema.ToolCallUpdate:
    """The `toolCall` of a `session/request_permission` (seed C.5: the tool_call's shape)."""
    return schema.ToolCallUpdate(
        tool_call_id=call.call_id,
        title=call.title,
        kind=call.kind,
        status="pending",
        raw_input=call.raw_input,
        locations=_locations(call.locations),
    )


class UpdateMapper:
    """Maps events to updates (what a client may receive is gates.py's business)."""

    def __init__(self) -> None:
        self._table = {
            ev.UserText: lambda e: schema.UserMessageChunk(content=text_block(e.text)),
            ev.TextDelta: lambda e: schema.AgentMessageChunk(content=text_block(e.text)),
            ev.ThoughtDelta: lambda e: schema.AgentThoughtChunk(content=text_block(e.text)),
            ev.ToolCallStarted: _tool_call,
            ev.ToolCallProgress: _tool_progress,
            ev.ToolCallFinished: _tool_finished,
            ev.PlanChanged: _plan,
            ev.Notice: self._notice,
        }

    def __call__(self, event: ev.TurnEvent) -> Update | None:
        """The update for `event`, or None when it has none (TurnEnded)."""
        convert = self._table.get(type(event))
        return None if convert is None else convert(event)

    def _notice(self, event: ev.Notice) -> Update:
        return schema.NoticeSessionUpdate(severity="warning", title=event.text or "notice")


def _tool_call(e: ev.ToolCallStarted) -> Update:
    return schema.ToolCallSessionUpdate(
        tool_call_id=e.call_id,
        title=e.title,
        kind=e.kind,
        status="pending",
        raw_input=e.raw_input,
        locations=_locations(e.locations),
    )


def _tool_progress(e: ev.ToolCallProgress) -> Update:
    return _tool_update(e.content, tool_call_id=e.call_id, status="in_progress", title=e.title)


def _tool_finished(e: ev.ToolCallFinished) -> Update:
    return _tool_update(e.content, tool_call_id=e.call_id, status=e.status, raw_output=e.raw_output)


def _tool_update(outputs: tuple[ev.ToolOutput, ...], **fields: Any) -> Update:
    # A new file's diff carries `oldText: null`: the generated Diff writes its nulls.
    return schema.ToolCallUpdateSessionUpdate(content=_contents(outputs), **fields)


def _plan(e: ev.PlanChanged) -> Update:
    entries = [
        schema.PlanEntry(content=x.content, priority=x.priority, status=x.status) for x in e.entries
    ]
    return schema.PlanSessionUpdate(entries=entries)


def current_mode_update(mode_id: str) -> Update:
    return schema.CurrentModeUpdateSessionUpdate(current_mode_id=mode_id)


def config_option_update(options: list[Any]) -> Update:
    return schema.ConfigOptionUpdateSessionUpdate(config_options=options)


__all__ = [
    "UpdateMapper",
    "config_option_update",
    "current_mode_update",
    "text_block",
    "tool_call_update_for_permission",
    "tool_content",
]
