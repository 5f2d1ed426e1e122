"""Agent sessions in the store: `AgentSession` <-> `SessionStore` rows.

A session's state row is `AgentSession.to_dict()` without its turns, with the
permission engine's remembered grants under `meta["permissions"]`; each turn
is the runtime's own encoded `TurnRecord`, committed with the state after it
in one transaction. Loading is the reverse; a session that cannot be decoded
(a newer format, a damaged row) is reported as `CorruptSession`. A store that cannot be
reached (a PostgreSQL server down) fails the method with `-32603` whose message and
`data.store` name host and database, never a password; the agent logs it too.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from agentao.agent.permissions import PermissionEngine
from agentao.agent.session import AgentSession, encode
from agentao.protocol.errors import InternalError
from agentao.store.sessions import SessionRecord, SessionStore, TurnRecord
from agentao.store.target import StoreUnavailable

log = logging.getLogger("agentao.server")

PERMISSIONS_KEY = "permissions"
CHOSEN_TITLE = "title"  # in AgentSession.meta: a title the person chose (session_title.py)


class CorruptSession(Exception):
    """A stored session exists but cannot be loaded."""


@dataclass(frozen=True, slots=True)
class SessionSummary:
    id: str
    cwd: str
    additional_directories: list[str]
    title: str | None
    updated_at: str


@contextlib.contextmanager
def _reachable() -> Iterator[None]:
    try:
        yield
    except StoreUnavailable as exc:
        log.error("session store unavailable: %s", exc)
        data = {"reason": "store_unavailable", "store": exc.where}
        raise InternalError(
            f"Internal error: the session store is unavailable: {exc}", data
        ) from None


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
        with _reachable():
            await self.store.create(record)

    async def create_with_turns(self, agent: AgentSession, engine: PermissionEngine) -> None:
        """A new session that already has turns (a fork): created, then each turn
        committed in order with the session's state."""
        await self.create(agent, engine)
        state = _state(agent, engine)
        with _reachable():
            for turn in agent.turns:
                record = TurnRecord(encode(turn), turn.stop_reason, agent.updated_at)
                await self.store.commit_turn(agent.id, record, state, title=title_of(agent))

    async def commit_turn(self, agent: AgentSession, engine: PermissionEngine) -> None:
        """Store the session's last turn and its state after it, atomically."""
        turn = agent.turns[-1]
        record = TurnRecord(encode(turn), turn.stop_reason, agent.updated_at)
        title = title_of(agent)
        with _reachable():
            await self.store.commit_turn(agent.id, record, _state(agent, engine), title=title)

    async def truncate(self, agent: AgentSession, engine: PermissionEngine) -> None:
        """The stored turns cut to the session's (a rewind dropped the later ones)."""
        with _reachable():
            await self.store.truncate_turns(agent.id, len(agent.turns), _state(agent, engine))

    async def save_state(self, agent: AgentSession, engine: PermissionEngine) -> None:
        with _reachable():
            await self.store.save_state(agent.id, _state(agent, engine))

    async def save_agent_state(self, agent: AgentSession) -> None:
        """A stored session's state as loaded and changed (its grants kept in its meta)."""
        with _reachable():
            await self.store.save_state(agent.id, agent.to_dict(turns=False))

    async def set_title(self, session_id: str, title: str) -> bool:
        """A person's title for the session (False: no such session)."""
        with _reachable():
            return await self.store.set_title(session_id, title)

    async def load(self, session_id: str) -> tuple[AgentSession, dict[str, Any]] | None:
        """The session and its stored permission grants; None when there is no such session."""
        with _reachable():
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
        with _reachable():
            record = await self.store.latest()
        return record.id if record else None

    async def page(
        self, cwd: str | None, cursor: str | None
    ) -> tuple[list[SessionSummary], str | None]:
        with _reachable():
            records, next_cursor = await self.store.page(cwd, cursor)
        summaries = [
            SessionSummary(r.id, r.cwd, r.additional_directories, r.title, r.updated_at_iso)
            for r in records
        ]
        return summaries, next_cursor

    async def exists(self, session_id: str) -> bool:
        with _reachable():
            return await self.store.get(session_id) is not None

    async def delete(self, session_id: str) -> bool:
        with _reachable():
            return await self.store.delete(session_id)


def title_of(agent: AgentSession) -> str | None:
    """The session's title: the one a person chose, else its first prompt's."""
    chosen = agent.meta.get(CHOSEN_TITLE)
    return chosen if isinstance(chosen, str) else agent.title


def _state(agent: AgentSession, engine: PermissionEngine) -> dict[str, Any]:
    agent.meta[PERMISSIONS_KEY] = engine.to_dict()
    return agent.to_dict(turns=False)  # each turn was encoded once, at its own commit


__all__ = ["CHOSEN_TITLE", "CorruptSession", "SessionArchive", "SessionSummary", "title_of"]
