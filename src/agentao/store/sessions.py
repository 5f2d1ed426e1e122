"""Agent sessions at rest: one row per session, one row per completed turn.

A turn is committed in one transaction together with the session's state after
it (model, mode, plan, remembered permission grants), so a killed process loses
at most the turn in flight. Payloads (a turn's `data`, a session's `state`) are
JSON-safe values the caller encodes; the store does not interpret them. There is no cap on the
number of sessions kept.

`SessionStore` is the interface the agent codes against. `SqliteSessionStore` implements it
on `store/sqlite.py`'s `Database` (the agent's own file, the default);
`PostgresSessionStore` (store/postgres_sessions.py) on a database several agent processes
share, so any of them can load any session. `store/session_target.py` picks one.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import msgspec

from agentao.store.sqlite import Database, Schema
from agentao.store.target import DEFAULT_CONNECT_SECONDS

SESSIONS_SCHEMA = Schema(
    "sessions",
    (
        """CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            cwd TEXT NOT NULL,
            additional_directories TEXT NOT NULL DEFAULT '[]',
            title TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            turn_count INTEGER NOT NULL DEFAULT 0,
            state TEXT NOT NULL DEFAULT '{}'
        )""",
        """CREATE TABLE turns (
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            ended_at REAL NOT NULL,
            stop_reason TEXT,
            data TEXT NOT NULL,
            PRIMARY KEY (session_id, seq)
        )""",
        "CREATE INDEX sessions_by_update ON sessions(updated_at DESC)",
    ),
)

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


@dataclass(slots=True)
class SessionRecord:
    """A stored session, without its turns."""

    id: str
    cwd: str
    additional_directories: list[str] = field(default_factory=list)
    title: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    turn_count: int = 0
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def updated_at_iso(self) -> str:
        return datetime.fromtimestamp(self.updated_at, UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One completed turn, as the caller encoded it (`stop_reason` None: it failed)."""

    data: Any
    stop_reason: str | None = None
    ended_at: float = 0.0


@dataclass(frozen=True, slots=True)
class StoreSettings:
    """Named limits of the session store."""

    list_page_size: int = 100  # sessions per `session/list` page
    title_chars: int = 80  # a session's title is its first prompt, cut to this length
    # On PostgreSQL (AGENTAO_STORE_URL): connections one agent process holds at most (one
    # client, a turn at a time per session: a few suffice), and how long connecting or
    # waiting for a pooled connection may take before a session method fails.
    pool_size: int = 2
    connect_seconds: float = DEFAULT_CONNECT_SECONDS
    # On SQLite: a new session, a turn or a state change (a mode set as a session opens)
    # writing at most this many bytes (its payloads plus the pages it touches) commits on
    # the event loop when the writer is idle (store/sqlite.py's inline transactions): two
    # thread hand-offs cost more than such a commit. 0: always on the writer's thread.
    inline_commit_bytes: int = 64 * 1024


class SessionStore(Protocol):
    """Sessions by id: what every backend does, with the same semantics."""

    settings: StoreSettings

    async def create(self, record: SessionRecord) -> None: ...

    async def get(self, session_id: str) -> SessionRecord | None: ...

    async def turns(self, session_id: str) -> list[TurnRecord]:
        """The session's turns, oldest first ([] for an unknown session)."""
        ...

    async def commit_turn(
        self, session_id: str, turn: TurnRecord, state: dict[str, Any], title: str | None = None
    ) -> None:
        """Append `turn` and set the session's state (and its title, if it has none yet),
        in one transaction. KeyError for an unknown session."""
        ...

    async def save_state(self, session_id: str, state: dict[str, Any]) -> None: ...

    async def truncate_turns(self, session_id: str, keep: int, state: dict[str, Any]) -> None:
        """Drop the turns from index `keep` on and set the state, in one transaction (a
        rewind of the conversation)."""
        ...

    async def set_title(self, session_id: str, title: str) -> bool:
        """Set the session's title (a person's choice: a later `commit_turn` keeps it, as
        it keeps any title), cut to `settings.title_chars`; False for an unknown session."""
        ...

    async def page(
        self, cwd: str | None = None, cursor: str | None = None
    ) -> tuple[list[SessionRecord], str | None]:
        """Sessions by `updated_at` descending then id, `settings.list_page_size` a page; the
        cursor is the next page's offset as a decimal string (None: no more)."""
        ...

    async def latest(self) -> SessionRecord | None: ...

    async def delete(self, session_id: str) -> bool:
        """Remove the session and its turns; False when there was none."""
        ...

    async def close(self) -> None: ...


class SqliteSessionStore:
    """Sessions by id in a `Database` opened with `SESSIONS_SCHEMA`."""

    def __init__(self, db: Database, settings: StoreSettings | None = None) -> None:
        self.db = db
        self.settings = settings or StoreSettings()

    async def create(self, record: SessionRecord) -> None:
        now = time.time()
        record.created_at = record.created_at or now
        record.updated_at = record.updated_at or now
        row = _session_row(record)
        await self._write(lambda c: c.execute(_INSERT_SESSION, row), len(row[2]) + len(row[6]))

    async def get(self, session_id: str) -> SessionRecord | None:
        return await self.db.call(lambda c: _get(c, session_id))

    async def turns(self, session_id: str) -> list[TurnRecord]:
        return await self.db.call(lambda c: _turns(c, session_id))

    async def commit_turn(
        self, session_id: str, turn: TurnRecord, state: dict[str, Any], title: str | None = None
    ) -> None:
        """Append `turn` and set the session's state, atomically."""
        if title is not None:
            title = title[: self.settings.title_chars]
        data, encoded = _encode(turn.data).decode(), _encode(state).decode()
        await self._write(
            lambda c: _commit_turn(c, session_id, turn, data, encoded, title),
            len(data) + len(encoded),
        )

    async def _write(self, fn: Callable[[sqlite3.Connection], object], payload: int) -> None:
        """`fn` in one transaction: on the event loop when it is small and the writer is
        idle, else on the writer's thread (see StoreSettings.inline_commit_bytes)."""
        size = payload + _PAGES_WRITTEN * _PAGE_BYTES
        inline = size <= self.settings.inline_commit_bytes
        await self.db.transaction(fn, inline=inline, size=size)

    async def truncate_turns(self, session_id: str, keep: int, state: dict[str, Any]) -> None:
        """Drop the turns from `keep` on and set the state, atomically."""
        await self.db.transaction(lambda c: _truncate_turns(c, session_id, keep, state))

    async def save_state(self, session_id: str, state: dict[str, Any]) -> None:
        """Persist a state change made between turns (mode, model)."""
        encoded = _encode(state).decode()
        await self._write(
            lambda c: c.execute(
                "UPDATE sessions SET state = ?, updated_at = ? WHERE id = ?",
                (encoded, time.time(), session_id),
            ),
            len(encoded),
        )

    async def page(
        self, cwd: str | None = None, cursor: str | None = None
    ) -> tuple[list[SessionRecord], str | None]:
        """A page of sessions, most recently updated first, and the next page's cursor."""
        offset, size = page_offset(cursor), self.settings.list_page_size
        rows = await self.db.call(lambda c: _page(c, cwd, offset, size + 1))
        return page_of(rows, offset, size)

    async def latest(self) -> SessionRecord | None:
        """The most recently updated session that has at least one turn."""
        return await self.db.call(_latest)

    async def set_title(self, session_id: str, title: str) -> bool:
        cut = title[: self.settings.title_chars]
        return await self.db.call(
            lambda c: (
                c.execute("UPDATE sessions SET title = ? WHERE id = ?", (cut, session_id)).rowcount
                > 0
            )
        )

    async def delete(self, session_id: str) -> bool:
        return await self.db.transaction(lambda c: _delete(c, session_id))

    async def close(self) -> None:
        self.db.close()


def page_offset(cursor: str | None) -> int:
    """Where a page starts: the cursor is an offset; anything else starts at the top."""
    return int(cursor) if cursor and cursor.isdigit() else 0


def page_of(
    rows: list[SessionRecord], offset: int, size: int
) -> tuple[list[SessionRecord], str | None]:
    """A page from `size + 1` rows (one more than shown says another page follows)."""
    more = len(rows) > size
    return rows[:size], (str(offset + size) if more else None)


def _row_to_record(row: sqlite3.Row) -> SessionRecord:
    return SessionRecord(
        id=row["id"],
        cwd=row["cwd"],
        additional_directories=_decode(row["additional_directories"]),
        title=row["title"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        turn_count=row["turn_count"],
        state=_decode(row["state"]),
    )


_INSERT_SESSION = (
    "INSERT INTO sessions (id, cwd, additional_directories, title, created_at, updated_at, "
    "turn_count, state) VALUES (?, ?, ?, ?, ?, ?, 0, ?)"
)
# What a write adds to the WAL besides its payloads, for the inline checkpoint's count:
# whole pages, about this many (the table's leaf and those of its indexes).
_PAGES_WRITTEN, _PAGE_BYTES = 4, 4096


def _session_row(r: SessionRecord) -> tuple[Any, ...]:
    return (
        r.id,
        r.cwd,
        _encode(r.additional_directories).decode(),
        r.title,
        r.created_at,
        r.updated_at,
        _encode(r.state).decode(),
    )


def _get(conn: sqlite3.Connection, session_id: str) -> SessionRecord | None:
    row = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return _row_to_record(row) if row else None


def _turns(conn: sqlite3.Connection, session_id: str) -> list[TurnRecord]:
    rows = conn.execute(
        "SELECT data, stop_reason, ended_at FROM turns WHERE session_id = ? ORDER BY seq",
        (session_id,),
    ).fetchall()
    return [TurnRecord(_decode(r["data"]), r["stop_reason"], r["ended_at"]) for r in rows]


def _commit_turn(
    conn: sqlite3.Connection,
    session_id: str,
    turn: TurnRecord,
    data: str,
    state: str,
    title: str | None,
) -> None:
    """`turn` (its data encoded: `data`) appended, and the session's encoded state set."""
    row = conn.execute("SELECT turn_count FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        raise KeyError(session_id)
    ended_at = turn.ended_at or time.time()
    conn.execute(
        "INSERT INTO turns (session_id, seq, ended_at, stop_reason, data) VALUES (?, ?, ?, ?, ?)",
        (session_id, row[0], ended_at, turn.stop_reason, data),
    )
    conn.execute(
        "UPDATE sessions SET turn_count = turn_count + 1, state = ?, updated_at = ?, "
        "title = COALESCE(title, ?) WHERE id = ?",
        (state, ended_at, title, session_id),
    )


def _truncate_turns(
    conn: sqlite3.Connection, session_id: str, keep: int, state: dict[str, Any]
) -> None:
    conn.execute("DELETE FROM turns WHERE session_id = ? AND seq >= ?", (session_id, keep))
    conn.execute(
        "UPDATE sessions SET turn_count = ?, state = ?, updated_at = ? WHERE id = ?",
        (keep, _encode(state).decode(), time.time(), session_id),
    )


def _page(
    conn: sqlite3.Connection, cwd: str | None, offset: int, limit: int
) -> list[SessionRecord]:
    if cwd is None:
        sql, args = "SELECT * FROM sessions", ()
    else:
        sql, args = "SELECT * FROM sessions WHERE cwd = ?", (cwd,)
    sql += " ORDER BY updated_at DESC, id LIMIT ? OFFSET ?"
    return [_row_to_record(r) for r in conn.execute(sql, (*args, limit, offset)).fetchall()]


def _latest(conn: sqlite3.Connection) -> SessionRecord | None:
    row = conn.execute(
        "SELECT * FROM sessions WHERE turn_count > 0 ORDER BY updated_at DESC, id LIMIT 1"
    ).fetchone()
    return _row_to_record(row) if row else None


def _delete(conn: sqlite3.Connection, session_id: str) -> bool:
    conn.execute("DELETE FROM turns WHERE session_id = ?", (session_id,))
    return conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0


def open_session_store(path: Any, settings: StoreSettings | None = None) -> SqliteSessionStore:
    """A `SqliteSessionStore` on its own database file (the agent's default)."""
    return SqliteSessionStore(Database.open(path, [SESSIONS_SCHEMA]), settings)


__all__ = [
    "SESSIONS_SCHEMA",
    "SessionRecord",
    "SessionStore",
    "SqliteSessionStore",
    "StoreSettings",
    "TurnRecord",
    "open_session_store",
    "page_of",
    "page_offset",
]
