"""Per-session state the client keeps from the agent's updates.

Created on the first message that names a session id, so updates that
arrive before the `session/new` answer are already in order when the
`Session` object attaches. Tool calls are upserts by id: a second
`tool_call` for a known id, an update for an id never announced, and the
`toolCall` of a permission request all merge into one table entry. What the
updates add up to is folded once, into `view` (`view.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from agentao.client.events import ToolCallState, Update
from agentao.client.files import Workspace
from agentao.client.stream import EventStream
from agentao.client.view import SessionView

log = logging.getLogger("agentao.client")

_TOOL_KINDS = frozenset({"tool_call", "tool_call_update"})
Watcher = Callable[[Update], None]  # sees every update of a session, in order


class SessionState:
    def __init__(self, session_id: str, max_backlog: int) -> None:
        self.session_id = session_id
        self.stream = EventStream(max_backlog)
        self.view = SessionView()
        self.workspace: Workspace | None = None
        self.cancelled = asyncio.Event()  # set by cancel(); cleared when a turn starts
        self.denied = 0  # permission requests answered with a rejection by the policy
        # Where the running turn's `session/prompt` answer fell in the stream: the number
        # of this session's updates read before it (see stream.py); None until it is read.
        self.answered_at: int | None = None
        self.watchers: list[Watcher] = []  # see Session.watch

    @property
    def tool_calls(self) -> dict[str, ToolCallState]:
        return self.view.tool_calls

    @property
    def current_mode(self) -> str | None:
        return self.view.mode

    @current_mode.setter
    def current_mode(self, mode: str | None) -> None:
        self.view.mode = mode

    def apply(self, kind: str, value: Any, raw: dict[str, Any]) -> Update:
        """Fold one update into the state; return the event to queue."""
        tool_call = None
        if kind in _TOOL_KINDS:
            tool_call = self.upsert_tool_call(raw, announced=kind == "tool_call")
        update = Update(self.session_id, kind, value, raw, tool_call)
        self.view.apply(update)
        for watcher in tuple(self.watchers):
            watcher(update)
        return update

    def upsert_tool_call(self, raw: dict[str, Any], *, announced: bool) -> ToolCallState | None:
        tool_call_id = raw.get("toolCallId")
        if not isinstance(tool_call_id, str):
            log.warning("tool call without a toolCallId in session %s: ignored", self.session_id)
            return None
        old = self.tool_calls.get(tool_call_id)
        if old is None and not announced:
            log.info("tool call %s updated before it was announced; adding it", tool_call_id)
        elif old is not None and announced:
            log.info("tool call %s announced twice; merging", tool_call_id)
        merged = dict(old.raw) if old is not None else {}
        merged.update((k, v) for k, v in raw.items() if k != "sessionUpdate")
        state = ToolCallState(tool_call_id, merged, _decode_tool_call(merged))
        self.view.put_tool_call(state)
        return state


def _decode_tool_call(merged: dict[str, Any]) -> Any:
    from agentao.protocol import schema
    from agentao.protocol.decode import decode_lenient

    try:
        return decode_lenient(schema.ToolCall, {"title": "", **merged})
    except Exception:  # a typed view is a convenience; the raw state is kept regardless
        log.debug("tool call %s does not decode as schema.ToolCall", merged.get("toolCallId"))
        return None


__all__ = ["SessionState"]
