"""Agent sessions on PostgreSQL: the same semantics as `SqliteSessionStore`, shared.

Theory of operation. `PostgresSessionStore` implements `SessionStore` (store/sessions.py)
statement for statement: read the docstrings there. Every agent process pointed at the
database (each with its own state directory, say one per gateway replica) sees every
session, so any of them can `session/load` what another wrote. A turn is one
statement (an UPDATE of the session's row feeding the INSERT of the turn), atomic by
itself: the row lock the UPDATE takes makes two processes committing to one session
queue, each numbering its turn after the other's, never both taking the same number.

The tables are `agent_sessions` and `agent_turns`, under their own migration series
(`agent_sessions`), so they sit beside the gateway's `gw_*` tables in one database.
Payloads are JSON columns (text as written, like the SQLite ones), decoded by msgspec
as they are read (postgres_db.py). Ids are `COLLATE "C"`: byte order, as SQLite's,
so a page breaks its ties in the same order on both.

A failure to reach the server becomes `StoreUnavailable` naming host and database.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import msgspec

from agentao.store.gateway_records import Row, json_value
from agentao.store.postgres_db import (
    PgDatabase,
    is_connection_failure,
    unavailable,
)
from agentao.store.sessions import (
    SessionRecord,
    StoreSettings,
    TurnRecord,
    page_of,
    page_offset,
)
from agentao.store.sqlite import Schema

PG_SESSIONS_SCHEMA = Schema(
    "agent_sessions",
    (
        """CREATE TABLE agent_sessions (
            id TEXT COLLATE "C" PRIMARY KEY,
            cwd TEXT NOT NULL,
            additional_directories JSON NOT NULL,
            title TEXT,
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            turn_count INTEGER NOT NULL DEFAULT 0,
            state JSON NOT NULL
        )""",
        """CREATE TABLE agent_turns (
            session_id TEXT COLLATE "C" NOT NULL
                REFERENCES agent_sessions(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            ended_at DOUBLE PRECISION NOT NULL,
            stop_reason TEXT,
            data JSON NOT NULL,
            PRIMARY KEY (session_id, seq)
        )""",
        "CREATE INDEX agent_sessions_by_update ON agent_sessions(updated_at DESC)",
    ),
)

# One statement, so one round trip and atomic by itself: the UPDATE locks the session's
# row (a second committer waits, then numbers its turn after this one) and hands the
# turn's number to the INSERT.
_COMMIT_TURN = """
WITH s AS (
    UPDATE agent_sessions SET turn_count = turn_count + 1, state = %s, updated_at = %s,
        title = COALESCE(title, %s)
    WHERE id = %s
    RETURNING id, turn_count - 1 AS seq
)
INSERT INTO agent_turns (session_id, seq, ended_at, stop_reason, data)
SELECT id, seq, %s, %s, %s FROM s
"""

# One statement, atomic by itself: the session's row and its later turns together.
_TRUNCATE_TURNS = """
WITH s AS (
    UPDATE agent_sessions SET turn_count = %s, state = %s, updated_at = %s
    WHERE id = %s RETURNING id
)
DELETE FROM agent_turns WHERE session_id IN (SELECT id FROM s) AND seq >= %s
"""

_encode = msgspec.json.Encoder().encode


def _json(value: Any) -> str:
    return _encode(value).decode()


class PostgresSessionStore:
    """Sessions by id in a `PgDatabase` migrated with `PG_SESSIONS_SCHEMA`."""

    def __init__(self, db: PgDatabase, url: str, settings: StoreSettings | None = None) -> None:
        self.db = db
        self.settings = settings or StoreSettings()
        self._url = url

    @contextlib.contextmanager
    def _reaching(self) -> Iterator[None]:
        """A lost server as `StoreUnavailable`; a statement's own error as it is."""
        try:
            yield
        except Exception as exc:
            if is_connection_failure(exc):
                raise unavailable(self._url, exc) from None
            raise

    async def create(self, record: SessionRecord) -> None:
        now = time.time()
        record.created_at = record.created_at or now
        record.updated_at = record.updated_at or now
        r = record
        with self._reaching():
            await self.db.execute(
                "INSERT INTO agent_sessions (id, cwd, additional_directories, title, created_at, "
                "updated_at, turn_count, state) VALUES (%s, %s, %s, %s, %s, %s, 0, %s)",
                (r.id, r.cwd, _json(r.additional_directories), r.title, r.created_at,
                 r.updated_at, _json(r.state)),
            )  # fmt: skip

    async def get(self, session_id: str) -> SessionRecord | None:
        with self._reaching():
            row = await self.db.fetchone(
                "SELECT * FROM agent_sessions WHERE id = %s", (session_id,)
            )
        return _record(row) if row else None

    async def turns(self, session_id: str) -> list[TurnRecord]:
        with self._reaching():
            rows = await self.db.fetchall(
                "SELECT data, stop_reason, ended_at FROM agent_turns WHERE session_id = %s "
                "ORDER BY seq",
                (session_id,),
            )
        return [TurnRecord(json_value(r["data"]), r["stop_reason"], r["ended_at"]) for r in rows]

    async def commit_turn(
        self, session_id: str, turn: TurnRecord, state: dict[str, Any], title: str | None = None
    ) -> None:
        """Append `turn` and set the session's state, atomically."""
        if title is not None:
            title = title[: self.settings.title_chars]
        # Encoded before the transaction: a value that cannot be encoded writes nothing.
        data, encoded_state = _json(turn.data), _json(state)
        ended_at = turn.ended_at or time.time()

        with self._reaching():
            added = await self.db.execute(
                _COMMIT_TURN,
                (encoded_state, ended_at, title, session_id, ended_at, turn.stop_reason, data),
            )
        if not added:  # no such session: the UPDATE matched nothing, so nothing changed
            raise KeyError(session_id)

    async def truncate_turns(self, session_id: str, keep: int, state: dict[str, Any]) -> None:
        """Drop the turns from `keep` on and set the state, in one statement."""
        with self._reaching():
            await self.db.execute(
                _TRUNCATE_TURNS, (keep, _json(state), time.time(), session_id, keep)
            )

    async def save_state(self, session_id: str, state: dict[str, Any]) -> None:
        """Persist a state change made between turns (mode, model)."""
        with self._reaching():
            await self.db.execute(
                "UPDATE agent_sessions SET state = %s, updated_at = %s WHERE id = %s",
                (_json(state), time.time(), session_id),
            )

    async def page(
        self, cwd: str | None = None, cursor: str | None = None
    ) -> tuple[list[SessionRecord], str | None]:
        """A page of sessions, most recently updated first, and the next page's cursor."""
        offset, size = page_offset(cursor), self.settings.list_page_size
        where, args = ("", ()) if cwd is None else (" WHERE cwd = %s", (cwd,))
        sql = f"SELECT * FROM agent_sessions{where} ORDER BY updated_at DESC, id LIMIT %s OFFSET %s"
        with self._reaching():
            rows = await self.db.fetchall(sql, (*args, size + 1, offset))
        return page_of([_record(r) for r in rows], offset, size)

    async def latest(self) -> SessionRecord | None:
        """The most recently updated session that has at least one turn."""
        with self._reaching():
            row = await self.db.fetchone(
                "SELECT * FROM agent_sessions WHERE turn_count > 0 "
                "ORDER BY updated_at DESC, id LIMIT 1"
            )
        return _record(row) if row else None

    async def set_title(self, session_id: str, title: str) -> bool:
        """A person's title, cut to `title_chars`; False for an unknown session."""
        cut = title[: self.settings.title_chars]
        with self._reaching():
            changed = await self.db.execute(
                "UPDATE agent_sessions SET title = %s WHERE id = %s", (cut, session_id)
            )
        return changed > 0

    async def delete(self, session_id: str) -> bool:
        """The session and, by the cascade, its turns."""
        with self._reaching():
            gone = await self.db.execute("DELETE FROM agent_sessions WHERE id = %s", (session_id,))
        return gone > 0

    async def close(self) -> None:
        await self.db.close()


def _record(row: Row) -> SessionRecord:
    return SessionRecord(
        id=row["id"],
        cwd=row["cwd"],
        additional_directories=json_value(row["additional_directories"]),
        title=row["title"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        turn_count=row["turn_count"],
        state=json_value(row["state"]),
    )


def open_postgres_session_store(
    url: str, settings: StoreSettings | None = None
) -> PostgresSessionStore:
    """A `PostgresSessionStore` on the database at `url`, migrated (once, whichever process
    comes first). Synchronous; raises `StoreUnavailable` when it cannot be reached."""
    settings = settings or StoreSettings()
    db = PgDatabase.open(
        url,
        [PG_SESSIONS_SCHEMA],
        pool_size=settings.pool_size,
        connect_seconds=settings.connect_seconds,
    )
    return PostgresSessionStore(db, url, settings)


__all__ = ["PG_SESSIONS_SCHEMA", "PostgresSessionStore", "open_postgres_session_store"]
