"""Runtime events to ACP `session/update`s: one mapping, for live turns and for replay.

UserText           -> user_message_chunk        (replay only)
TextDelta          -> agent_message_chunk
ThoughtDelta       -> agent_thought_chunk
ToolCallStarted    -> tool_call            status "pending", title, kind, rawInput, locations
ToolCallProgress   -> tool_call_update     status "in_progress" (+ live content, title)
ToolCallFinished   -> tool_call_update     status "completed"/"failed" (a call the user
                      stopped alone, "cancelled", is "failed": v1 has no such status),
                      content, rawOutput
PlanChanged        -> plan
Notice             -> notice (sent only to clients that advertised `session.notices`;
                      the others get a thought instead: see gates.py)
ContextUsage       -> usage_update         used, size, cost (when priced); an estimate is
                      marked `_meta["agentao.cn/estimated"]: true`
CompactionStarted  -> compaction_update    status "in_progress"     (session.compaction only;
CompactionDelta    -> compaction_summary_chunk                        the others get a notice
CompactionFinished -> compaction_update    status, summary, _meta     when it ends, if they
                      ["agentao.cn/compaction"] {tokensBefore, tokensAfter, detail}   take
                                                                      notices: gates.py)
TurnEnded          -> nothing (it is the `session/prompt` result)
"""

from __future__ import annotations

from typing import Any

from agentao.agent import events as ev
from agentao.protocol import meta, schema

Update = Any  # one of schema.SessionUpdate's variants

ESTIMATED = meta.ESTIMATED  # _meta of a usage_update whose `used` is an estimate
COMPACTION = meta.COMPACTION  # _meta of a finished compaction_update


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
            ev.ContextUsage: _usage,
            ev.CompactionStarted: _compaction_started,
            ev.CompactionDelta: _compaction_delta,
            ev.CompactionFinished: _compaction_finished,
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
    status = "failed" if e.status == "cancelled" else e.status  # v1 has no "cancelled"
    return _tool_update(e.content, tool_call_id=e.call_id, status=status, raw_output=e.raw_output)


def _tool_update(outputs: tuple[ev.ToolOutput, ...], **fields: Any) -> Update:
    # A new file's diff carries `oldText: null`: the generated Diff writes its nulls.
    return schema.ToolCallUpdateSessionUpdate(content=_contents(outputs), **fields)


def _plan(e: ev.PlanChanged) -> Update:
    entries = [
        schema.PlanEntry(content=x.content, priority=x.priority, status=x.status) for x in e.entries
    ]
    return schema.PlanSessionUpdate(entries=entries)


def _usage(e: ev.ContextUsage) -> Update:
    cost = schema.Cost(amount=round(e.cost, 6), currency=e.currency) if e.cost is not None else None
    meta = {ESTIMATED: True} if e.estimated else None
    return schema.UsageUpdateSessionUpdate(used=e.used, size=e.size, cost=cost, meta=meta)


def _compaction_started(e: ev.CompactionStarted) -> Update:
    return schema.CompactionUpdateSessionUpdate(compaction_id=e.compaction_id, status="in_progress")


def _compaction_delta(e: ev.CompactionDelta) -> Update:
    return schema.CompactionSummaryChunkSessionUpdate(
        compaction_id=e.compaction_id, content=text_block(e.text)
    )


def _compaction_finished(e: ev.CompactionFinished) -> Update:
    meta = {
        COMPACTION: {
            "tokensBefore": e.tokens_before,
            "tokensAfter": e.tokens_after,
            "detail": e.detail,
        }
    }
    return schema.CompactionUpdateSessionUpdate(
        compaction_id=e.compaction_id,
        status=e.status,
        summary=[text_block(e.summary)] if e.summary else None,
        meta=meta,
    )


def session_info_update(title: str | None, updated_at: str) -> Update:
    return schema.SessionInfoUpdateSessionUpdate(title=title, updated_at=updated_at)


def available_commands_update(commands: Any) -> Update:
    """`commands`: agent.commands.Command entries."""
    available = [
        schema.AvailableCommand(
            name=c.name,
            description=c.description,
            input=schema.UnstructuredCommandInput(hint=c.hint) if c.hint else None,
        )
        for c in commands
    ]
    return schema.AvailableCommandsUpdateSessionUpdate(available_commands=available)


def current_mode_update(mode_id: str) -> Update:
    return schema.CurrentModeUpdateSessionUpdate(current_mode_id=mode_id)


def config_option_update(options: list[Any]) -> Update:
    return schema.ConfigOptionUpdateSessionUpdate(config_options=options)


__all__ = [
    "COMPACTION",
    "ESTIMATED",
    "UpdateMapper",
    "available_commands_update",
    "config_option_update",
    "current_mode_update",
    "session_info_update",
    "text_block",
    "tool_call_update_for_permission",
    "tool_content",
]
