"""Where the agent keeps its sessions: its own SQLite file, or the PostgreSQL database
`AGENTAO_STORE_URL` names (shared by every agent process pointed at it).

Why the PostgreSQL store opens on first use, not at startup: editors spawn the agent and
expect `initialize` answered at once, whatever the database does. So nothing here imports
psycopg; the first session method opens the store (connect and migrate, off the event
loop) and, when the database cannot be reached, fails with `StoreUnavailable` naming host
and database. The next session method tries again: a database that comes up later is used.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from agentao.credentials import redact_secrets
from agentao.store.paths import database_path
from agentao.store.sessions import (
    SessionRecord,
    SessionStore,
    StoreSettings,
    TurnRecord,
    open_session_store,
)
from agentao.store.target import STORE_URL_ENV, StoreUnavailable, is_postgres_url

log = logging.getLogger("agentao.store")


class OpenedOnFirstUse:
    """A `SessionStore` whose backend `opener` builds (synchronously, in a thread) when a
    method first needs it; a failed attempt is raised and the next call tries again."""

    def __init__(self, opener: Callable[[], SessionStore], settings: StoreSettings) -> None:
        self.settings = settings
        self._opener = opener
        self._store: SessionStore | None = None
        self._opening = asyncio.Lock()  # callers arriving together share one attempt

    async def opened(self) -> SessionStore:
        if self._store is None:
            async with self._opening:
                if self._store is None:
                    self._store = await asyncio.to_thread(self._opener)
        return self._store

    async def create(self, record: SessionRecord) -> None:
        await (await self.opened()).create(record)

    async def get(self, session_id: str) -> SessionRecord | None:
        return await (await self.opened()).get(session_id)

    async def turns(self, session_id: str) -> list[TurnRecord]:
        return await (await self.opened()).turns(session_id)

    async def commit_turn(
        self, session_id: str, turn: TurnRecord, state: dict[str, Any], title: str | None = None
    ) -> None:
        await (await self.opened()).commit_turn(session_id, turn, state, title)

    async def save_state(self, session_id: str, state: dict[str, Any]) -> None:
        await (await self.opened()).save_state(session_id, state)

    async def truncate_turns(self, session_id: str, keep: int, state: dict[str, Any]) -> None:
        await (await self.opened()).truncate_turns(session_id, keep, state)

    async def page(
        self, cwd: str | None = None, cursor: str | None = None
    ) -> tuple[list[SessionRecord], str | None]:
        return await (await self.opened()).page(cwd, cursor)

    async def latest(self) -> SessionRecord | None:
        return await (await self.opened()).latest()

    async def set_title(self, session_id: str, title: str) -> bool:
        return await (await self.opened()).set_title(session_id, title)

    async def delete(self, session_id: str) -> bool:
        return await (await self.opened()).delete(session_id)

    async def close(self) -> None:
        if self._store is not None:
            await self._store.close()


def _postgres_opener(url: str, settings: StoreSettings) -> Callable[[], SessionStore]:
    def open_now() -> SessionStore:
        try:  # psycopg is optional, and imported only here: a cold start never pays for it
            from agentao.store.postgres_sessions import open_postgres_session_store
        except ImportError as exc:
            raise StoreUnavailable(
                f"a PostgreSQL store needs the `postgres` extra (psycopg, psycopg-pool): {exc}"
            ) from None
        return open_postgres_session_store(url, settings)

    return open_now


def agent_store_url(env: Mapping[str, str]) -> str | None:
    """The PostgreSQL URL the agent keeps its sessions at, or None (its SQLite file)."""
    url = env.get(STORE_URL_ENV, "").strip()
    return url if is_postgres_url(url) else None


def open_agent_sessions(env: Mapping[str, str], settings: StoreSettings) -> SessionStore:
    """The agent's session store: PostgreSQL at `AGENTAO_STORE_URL` (opened on first use),
    else the SQLite file in the state directory (opened now: local and quick)."""
    url = agent_store_url(env)
    if url is None:
        return open_session_store(database_path(dict(env)), settings)
    log.info("sessions in the PostgreSQL store at %s", redact_secrets(url))
    return OpenedOnFirstUse(_postgres_opener(url, settings), settings)


__all__ = ["OpenedOnFirstUse", "agent_store_url", "open_agent_sessions"]
