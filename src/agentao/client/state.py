"""Per-session state the client keeps from the agent's updates.

Created on the first message that names a session id, so updates that
arrive before the `session/new` answer are already in order when the
`Session` object attaches. Tool calls are upserts by id: a second
`tool_call` for a known id, an update for an id never announced, and the
`toolCall` of a permission request all merge into one table entry. What the
updates add up to is folded once, from their typed values, into `view` (`view.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from agentao.client.events import ToolCallState, Update
from agentao.client.files import Workspace
from agentao.client.stream import EventStream
from agentao.client.view import SessionView, tool_call_of

log = logging.getLogger("agentao.client")

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
        # v2: the running turn's end, the idle `state_update` (turn.py); None over v1
        self.idle: asyncio.Future[dict[str, Any]] | None = None
        self.message_id: str | None = None  # v2: the running prompt's `{messageId}` ack
        # See Session.watch. Replaced, never changed in place (add_watcher, remove_watcher):
        # `apply` iterates it as it was when an update came, without a copy per update.
        self.watchers: list[Watcher] = []

    @property
    def tool_calls(self) -> dict[str, ToolCallState]:
        return self.view.tool_calls

    @property
    def current_mode(self) -> str | None:
        return self.view.mode

    @current_mode.setter
    def current_mode(self, mode: str | None) -> None:
        self.view.mode = mode

    def apply(self, kind: str, value: Any, wire: Any) -> Update:
        """Fold one decoded update into the view (`view.fold`); return the event to queue."""
        update = self.view.fold(self.session_id, kind, value, wire)
        for watcher in self.watchers:
            watcher(update)
        return update

    def add_watcher(self, watcher: Watcher) -> None:
        self.watchers = [*self.watchers, watcher]

    def remove_watcher(self, watcher: Watcher) -> None:
        """Stop calling `watcher` (its first registration; nothing if it has none)."""
        watchers = list(self.watchers)
        if watcher in watchers:
            watchers.remove(watcher)
            self.watchers = watchers

    def upsert_tool_call(self, wire: Any) -> ToolCallState | None:
        """A permission request's `toolCall` (wire JSON), decoded once and merged by id;
        None when it names no tool call."""
        value = tool_call_of(wire)
        if value is None:
            log.warning("tool call without a toolCallId in session %s: ignored", self.session_id)
            return None
        return self.view.upsert_tool_call(value, announced=False)


__all__ = ["SessionState"]
