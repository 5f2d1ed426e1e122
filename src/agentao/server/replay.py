"""`session/load`: a stored session's whole history, as the updates the user saw live.

Every turn replays as `user_message_chunk` (the prompt), then its recorded events
through the same `UpdateMapper` as a live turn: agent text, thoughts, tool calls
with their final results, plans. A terminal embedded in a past tool call no longer
exists in the client, so its place is taken by the output the model was given.
"""

from __future__ import annotations

from collections.abc import Iterator

from agentao.agent import events as ev
from agentao.agent.providers.messages import ToolResultMessage
from agentao.agent.session import AgentSession, TurnRecord


def history(agent: AgentSession) -> Iterator[ev.TurnEvent]:
    """Every past turn as events: UserText, then what the turn showed (no TurnEnded)."""
    for turn in agent.turns:
        yield ev.UserText(turn.prompt)
        outputs = _tool_outputs(turn)
        for event in turn.events:
            if isinstance(event, ev.TurnEnded):
                continue
            if isinstance(event, ev.ToolCallFinished) and any(
                isinstance(c, ev.TerminalOutput) for c in event.content
            ):
                text = outputs.get(event.call_id, "")
                content = tuple(
                    ev.TextOutput(text) if isinstance(c, ev.TerminalOutput) else c
                    for c in event.content
                )
                event = ev.ToolCallFinished(event.call_id, event.status, content, event.raw_output)
            yield event


def _tool_outputs(turn: TurnRecord) -> dict[str, str]:
    return {m.call_id: m.text for m in turn.messages if isinstance(m, ToolResultMessage)}


__all__ = ["history"]
