"""The one way updates leave the agent: runtime events mapped, the client's gate, the wire.

Every `session/update` goes out through a connection's `Outbox`: a runtime event is
mapped to its update (`updates.py`), the update passes the client's gate (`gates.py`:
capability-gated kinds become their fallback or nothing), and the notification is
written in call order. A `LiveSession` holds the outbox, so a turn, a replay or a
mode change all send the same way, and no handler builds its own path.
"""

from __future__ import annotations

from typing import Any

from agentao.agent.events import TurnEvent
from agentao.protocol import schema
from agentao.protocol.endpoint import Endpoint
from agentao.server.children import ChildSessions
from agentao.server.gates import UpdateGate
from agentao.server.updates import UpdateMapper


class Outbox:
    """Session updates for one client connection."""

    def __init__(self, endpoint: Endpoint, gate: UpdateGate, mapper: UpdateMapper) -> None:
        self.endpoint = endpoint
        self.gate = gate
        self.mapper = mapper
        self.children = ChildSessions()

    async def emit(self, session_id: str, event: TurnEvent, live: bool = True) -> None:
        """A runtime event as its update (an event without one, TurnEnded, sends nothing);
        `live=False` for a replayed one (no fallbacks: gates.py)."""
        if self.shows_children():
            for target, child_update in self.children.route(session_id, event, self._mapped):
                await self.send(target, child_update, live)
        update = self.mapper(event)  # a ChildUpdate has none: shown above, or not at all
        if update is not None:
            await self.send(session_id, update, live)

    def _mapped(self, _session_id: str, event: TurnEvent) -> list[Any]:
        update = self.mapper(event)
        return [] if update is None else [update]

    def shows_children(self) -> bool:
        """Whether this client sees a session's children as child sessions (children.py)."""
        return self.gate.subagents

    async def send(self, session_id: str, update: Any, live: bool = True) -> None:
        """One update, if the client may receive it (or its fallback)."""
        update = self.gate(update, live)
        if update is None:
            return
        notification = schema.SessionNotification(session_id=session_id, update=update)
        await self.endpoint.notify("session/update", notification)


__all__ = ["Outbox"]
