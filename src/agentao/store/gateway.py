"""The gateway's tables: conversations, stored responses, tasks and their event logs.

Theory of operation. A *conversation* is one ACP session of one agent, seen from
HTTP: it remembers which agent and `sessionId` carry it, who owns it (the API
key's name) and, for Chat Completions clients that send no session key, a hash
of the transcript as of its last answer (`transcript_hash`), so the next request
can be matched by its prefix. A *response* row maps a Responses API id to its
conversation and turn, which is what makes `previous_response_id` survive a
gateway restart. A *task* is one turn; its *events* are the task-stream frames,
numbered per task from 1, written before any watcher sees them.

`GatewayStore` is the interface the gateway codes against; `SqliteGatewayStore`
implements it on `store/sqlite.py`'s `Database` (one worker thread, WAL). A
shared database can implement the same Protocol later.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import msgspec

from agentao.store.sqlite import Database, Schema

GATEWAY_SCHEMA = Schema(
    "gateway",
    (
        """CREATE TABLE gw_conversations (
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            agent TEXT NOT NULL,
            session_id TEXT,
            title TEXT,
            source TEXT NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            turn_count INTEGER NOT NULL DEFAULT 0,
            transcript_hash TEXT
        )""",
        "CREATE INDEX gw_conversations_by_hash ON gw_conversations(owner, agent, transcript_hash)",
        "CREATE INDEX gw_conversations_by_update ON gw_conversations(owner, updated_at DESC)",
        """CREATE TABLE gw_responses (
            id TEXT PRIMARY KEY,
            conversation_id TEXT NOT NULL REFERENCES gw_conversations(id) ON DELETE CASCADE,
            turn INTEGER NOT NULL,
            status TEXT NOT NULL,
            created_at REAL NOT NULL,
            body TEXT NOT NULL
        )""",
        """CREATE TABLE gw_tasks (
            id TEXT PRIMARY KEY,
            conversation_id TEXT NOT NULL REFERENCES gw_conversations(id) ON DELETE CASCADE,
            status TEXT NOT NULL,
            created_at REAL NOT NULL,
            ended_at REAL,
            prompt TEXT NOT NULL DEFAULT ''
        )""",
        "CREATE INDEX gw_tasks_by_conversation ON gw_tasks(conversation_id, created_at)",
        """CREATE TABLE gw_task_events (
            task_id TEXT NOT NULL REFERENCES gw_tasks(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            type TEXT NOT NULL,
            at REAL NOT NULL,
            payload TEXT NOT NULL,
            PRIMARY KEY (task_id, seq)
        )""",
    ),
)

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


@dataclass(slots=True)
class Conversation:
    """One ACP session seen from HTTP."""

    id: str
    owner: str
    agent: str
    source: str  # "chat" | "responses" | "task"
    session_id: str | None = None
    title: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    turn_count: int = 0
    transcript_hash: str | None = None


@dataclass(slots=True)
class ResponseRecord:
    """A Responses API object as last returned, and where it sits in its conversation."""

    id: str
    conversation_id: str
    turn: int
    status: str
    body: dict[str, Any]
    created_at: float = 0.0


@dataclass(slots=True)
class TaskRecord:
    id: str
    conversation_id: str
    status: str  # "running" | "ended" | "error"
    prompt: str = ""
    created_at: float = 0.0
    ended_at: float | None = None


@dataclass(frozen=True, slots=True)
class TaskEvent:
    """One task-stream frame: `payload` holds everything but `seq`, `type` and `at`."""

    task_id: str
    seq: int
    type: str
    at: float
    payload: dict[str, Any] = field(default_factory=dict)

    def frame(self) -> dict[str, Any]:
        return {"seq": self.seq, "type": self.type, "at": self.at, **self.payload}


class GatewayStore(Protocol):
    """What the gateway persists. Every method is a short, atomic operation."""

    async def create_conversation(self, conv: Conversation) -> None: ...
    async def get_conversation(self, conversation_id: str) -> Conversation | None: ...
    async def find_by_transcript(
        self, owner: str, agent: str, hashes: Sequence[str]
    ) -> tuple[Conversation, str] | None: ...
    async def update_conversation(self, conv: Conversation) -> None: ...
    async def list_conversations(self, owner: str | None, limit: int) -> list[Conversation]: ...
    async def put_response(self, record: ResponseRecord) -> None: ...
    async def get_response(self, response_id: str) -> ResponseRecord | None: ...
    async def delete_response(self, response_id: str) -> bool: ...
    async def get_task(self, task_id: str) -> TaskRecord | None: ...
    async def finish_task(
        self, task_id: str, status: str, conversation: Conversation | None = None
    ) -> None: ...
    async def list_tasks(self, conversation_id: str) -> list[TaskRecord]: ...
    async def append_events(
        self,
        events: Sequence[TaskEvent],
        tasks: Sequence[TaskRecord] = (),
        conversations: Sequence[Conversation] = (),
    ) -> None: ...
    async def events_after(self, task_id: str, after_seq: int) -> list[TaskEvent]: ...
    def close(self) -> None: ...


class SqliteGatewayStore:
    """`GatewayStore` on a SQLite `Database` opened with `GATEWAY_SCHEMA`."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # ---- conversations ----------------------------------------------------------------

    async def create_conversation(self, conv: Conversation) -> None:
        now = time.time()
        conv.created_at = conv.created_at or now
        conv.updated_at = conv.updated_at or now
        await self.db.call(lambda c: _insert_conversation(c, conv))

    async def get_conversation(self, conversation_id: str) -> Conversation | None:
        row = await self.db.call(
            lambda c: c.execute(
                "SELECT * FROM gw_conversations WHERE id = ?", (conversation_id,)
            ).fetchone()
        )
        return _conversation(row) if row else None

    async def find_by_transcript(
        self, owner: str, agent: str, hashes: Sequence[str]
    ) -> tuple[Conversation, str] | None:
        """The conversation whose last answer ends one of `hashes` (tried in order)."""
        return await self.db.call(lambda c: _find_by_transcript(c, owner, agent, hashes))

    async def update_conversation(self, conv: Conversation) -> None:
        conv.updated_at = time.time()
        await self.db.call(lambda c: _update_conversation(c, conv))

    async def list_conversations(self, owner: str | None, limit: int = 100) -> list[Conversation]:
        """Most recently updated first; `owner=None` lists everyone's."""
        if owner is None:
            sql, args = "SELECT * FROM gw_conversations", ()
        else:
            sql, args = "SELECT * FROM gw_conversations WHERE owner = ?", (owner,)
        sql += " ORDER BY updated_at DESC LIMIT ?"
        rows = await self.db.call(lambda c: c.execute(sql, (*args, limit)).fetchall())
        return [_conversation(r) for r in rows]

    # ---- responses ----------------------------------------------------------------------

    async def put_response(self, record: ResponseRecord) -> None:
        record.created_at = record.created_at or time.time()
        body = _encode(record.body).decode()
        await self.db.call(
            lambda c: c.execute(
                "INSERT INTO gw_responses (id, conversation_id, turn, status, created_at, body) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
                "status = excluded.status, body = excluded.body, turn = excluded.turn",
                (
                    record.id,
                    record.conversation_id,
                    record.turn,
                    record.status,
                    record.created_at,
                    body,
                ),
            )
        )

    async def get_response(self, response_id: str) -> ResponseRecord | None:
        row = await self.db.call(
            lambda c: c.execute(
                "SELECT * FROM gw_responses WHERE id = ?", (response_id,)
            ).fetchone()
        )
        if row is None:
            return None
        return ResponseRecord(
            row["id"],
            row["conversation_id"],
            row["turn"],
            row["status"],
            _decode(row["body"]),
            row["created_at"],
        )

    async def delete_response(self, response_id: str) -> bool:
        cursor = await self.db.call(
            lambda c: c.execute("DELETE FROM gw_responses WHERE id = ?", (response_id,))
        )
        return cursor.rowcount > 0

    # ---- tasks and their events -------------------------------------------------------

    async def get_task(self, task_id: str) -> TaskRecord | None:
        row = await self.db.call(
            lambda c: c.execute("SELECT * FROM gw_tasks WHERE id = ?", (task_id,)).fetchone()
        )
        return _task(row) if row else None

    async def finish_task(
        self, task_id: str, status: str, conversation: Conversation | None = None
    ) -> None:
        """Mark a task ended, and save its conversation as it is now, in one transaction."""
        now = time.time()
        if conversation is not None:
            conversation.updated_at = now

        def finish(c: sqlite3.Connection) -> None:
            c.execute(
                "UPDATE gw_tasks SET status = ?, ended_at = ? WHERE id = ?", (status, now, task_id)
            )
            if conversation is not None:
                _update_conversation(c, conversation)

        await self.db.transaction(finish)

    async def list_tasks(self, conversation_id: str) -> list[TaskRecord]:
        rows = await self.db.call(
            lambda c: c.execute(
                "SELECT * FROM gw_tasks WHERE conversation_id = ? ORDER BY created_at, rowid",
                (conversation_id,),
            ).fetchall()
        )
        return [_task(r) for r in rows]

    async def append_events(
        self,
        events: Sequence[TaskEvent],
        tasks: Sequence[TaskRecord] = (),
        conversations: Sequence[Conversation] = (),
    ) -> None:
        """Save conversations (insert or update), then new task rows, then events, in one
        transaction (all or none): the order their references need."""
        now = time.time()
        for task in tasks:
            task.created_at = task.created_at or now
        for conv in conversations:
            conv.created_at = conv.created_at or now
            conv.updated_at = now
        new = [(t.id, t.conversation_id, t.status, t.created_at, t.prompt) for t in tasks]
        rows = [(e.task_id, e.seq, e.type, e.at, _encode(e.payload).decode()) for e in events]

        def append(c: sqlite3.Connection) -> None:
            for conv in conversations:
                _upsert_conversation(c, conv)
            c.executemany(
                "INSERT INTO gw_tasks (id, conversation_id, status, created_at, prompt) "
                "VALUES (?, ?, ?, ?, ?)",
                new,
            )
            c.executemany(
                "INSERT INTO gw_task_events (task_id, seq, type, at, payload) "
                "VALUES (?, ?, ?, ?, ?)",
                rows,
            )

        await self.db.transaction(append)

    async def events_after(self, task_id: str, after_seq: int) -> list[TaskEvent]:
        rows = await self.db.call(
            lambda c: c.execute(
                "SELECT * FROM gw_task_events WHERE task_id = ? AND seq > ? ORDER BY seq",
                (task_id, after_seq),
            ).fetchall()
        )
        return [
            TaskEvent(r["task_id"], r["seq"], r["type"], r["at"], _decode(r["payload"]))
            for r in rows
        ]

    def close(self) -> None:
        self.db.close()


def _insert_conversation(conn: sqlite3.Connection, v: Conversation) -> None:
    conn.execute(
        "INSERT INTO gw_conversations (id, owner, agent, session_id, title, source, created_at, "
        "updated_at, turn_count, transcript_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            v.id,
            v.owner,
            v.agent,
            v.session_id,
            v.title,
            v.source,
            v.created_at,
            v.updated_at,
            v.turn_count,
            v.transcript_hash,
        ),
    )


def _upsert_conversation(conn: sqlite3.Connection, v: Conversation) -> None:
    conn.execute(
        "INSERT INTO gw_conversations (id, owner, agent, session_id, title, source, created_at, "
        "updated_at, turn_count, transcript_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(id) DO UPDATE SET session_id = excluded.session_id, title = excluded.title, "
        "updated_at = excluded.updated_at, turn_count = excluded.turn_count, "
        "transcript_hash = excluded.transcript_hash",
        (
            v.id,
            v.owner,
            v.agent,
            v.session_id,
            v.title,
            v.source,
            v.created_at,
            v.updated_at,
            v.turn_count,
            v.transcript_hash,
        ),
    )


def _update_conversation(conn: sqlite3.Connection, v: Conversation) -> None:
    conn.execute(
        "UPDATE gw_conversations SET session_id = ?, title = ?, updated_at = ?, "
        "turn_count = ?, transcript_hash = ? WHERE id = ?",
        (v.session_id, v.title, v.updated_at, v.turn_count, v.transcript_hash, v.id),
    )


def _find_by_transcript(
    conn: sqlite3.Connection, owner: str, agent: str, hashes: Sequence[str]
) -> tuple[Conversation, str] | None:
    for digest in hashes:
        row = conn.execute(
            "SELECT * FROM gw_conversations WHERE owner = ? AND agent = ? AND transcript_hash = ? "
            "ORDER BY updated_at DESC LIMIT 1",
            (owner, agent, digest),
        ).fetchone()
        if row is not None:
            return _conversation(row), digest
    return None


def _conversation(row: sqlite3.Row) -> Conversation:
    return Conversation(
        id=row["id"],
        owner=row["owner"],
        agent=row["agent"],
        source=row["source"],
        session_id=row["session_id"],
        title=row["title"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        turn_count=row["turn_count"],
        transcript_hash=row["transcript_hash"],
    )


def _task(row: sqlite3.Row) -> TaskRecord:
    return TaskRecord(
        id=row["id"],
        conversation_id=row["conversation_id"],
        status=row["status"],
        prompt=row["prompt"],
        created_at=row["created_at"],
        ended_at=row["ended_at"],
    )


def open_gateway_store(path: Path | str) -> SqliteGatewayStore:
    """A `SqliteGatewayStore` on its own file (created and migrated if needed)."""
    return SqliteGatewayStore(Database.open(path, [GATEWAY_SCHEMA]))


__all__ = [
    "GATEWAY_SCHEMA",
    "Conversation",
    "GatewayStore",
    "ResponseRecord",
    "SqliteGatewayStore",
    "TaskEvent",
    "TaskRecord",
    "open_gateway_store",
]
