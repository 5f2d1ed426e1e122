"""Agent sessions in the store: `AgentSession` <-> `SessionStore` rows.

A session's state row is `AgentSession.to_dict()` without its turns, with the
permission engine's remembered grants under `meta["permissions"]`; each turn
is the runtime's own encoded `TurnRecord`, committed with the state after it
in one transaction. Loading is the reverse; a session that cannot be decoded
(a newer format, a damaged row) is reported as `CorruptSession`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from agentao.agent.permissions import PermissionEngine
from agentao.agent.session import AgentSession, encode
from agentao.store.sessions import SessionRecord, SessionStore, TurnRecord

log = logging.getLogger("agentao.server")

PERMISSIONS_KEY = "permissions"


class CorruptSession(Exception):
    """A stored session exists but cannot be loaded."""


@dataclass(frozen=True, slots=True)
class SessionSummary:
    id: str
    cwd: str
    additional_directories: list[str]
    title: str | None
    updated_at: str


class SessionArchive:
    """The agent's view of the session store."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    async def create(self, agent: AgentSession, engine: PermissionEngine) -> None:
        record = SessionRecord(
            id=agent.id,
            cwd=str(agent.cwd),
            additional_directories=[str(p) for p in agent.additional_dirs],
            created_at=agent.created_at,
            updated_at=agent.updated_at,
            state=_state(agent, engine),
        )
        await self.store.create(record)

    async def commit_turn(self, agent: AgentSession, engine: PermissionEngine) -> None:
        """Store the session's last turn and its state after it, atomically."""
        turn = agent.turns[-1]
        record = TurnRecord(encode(turn), turn.stop_reason, agent.updated_at)
        title = agent.title
        await self.store.commit_turn(agent.id, record, _state(agent, engine), title=title)

    async def save_state(self, agent: AgentSession, engine: PermissionEngine) -> None:
        await self.store.save_state(agent.id, _state(agent, engine))

    async def load(self, session_id: str) -> tuple[AgentSession, dict[str, Any]] | None:
        """The session and its stored permission grants; None when there is no such session."""
        record = await self.store.get(session_id)
        if record is None:
            return None
        turns = await self.store.turns(session_id)
        data = {**record.state, "turns": [t.data for t in turns]}
        try:
            agent = AgentSession.from_dict(data)
        except Exception as exc:  # a damaged or newer row: the caller decides what to do
            log.warning("session %s cannot be loaded: %s", session_id, type(exc).__name__)
            raise CorruptSession(session_id) from exc
        return agent, dict(agent.meta.get(PERMISSIONS_KEY) or {})

    async def latest_id(self) -> str | None:
        record = await self.store.latest()
        return record.id if record else None

    async def page(
        self, cwd: str | None, cursor: str | None
    ) -> tuple[list[SessionSummary], str | None]:
        records, next_cursor = await self.store.page(cwd, cursor)
        summaries = [
            SessionSummary(r.id, r.cwd, r.additional_directories, r.title, r.updated_at_iso)
            for r in records
        ]
        return summaries, next_cursor

    async def exists(self, session_id: str) -> bool:
        return await self.store.get(session_id) is not None

    async def delete(self, session_id: str) -> bool:
        return await self.store.delete(session_id)


def _state(agent: AgentSession, engine: PermissionEngine) -> dict[str, Any]:
    agent.meta[PERMISSIONS_KEY] = engine.to_dict()
    return agent.to_dict(turns=False)  # each turn was encoded once, at its own commit


__all__ = ["CorruptSession", "SessionArchive", "SessionSummary"]
