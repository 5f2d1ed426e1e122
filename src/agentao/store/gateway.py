"""The gateway's tables: conversations, stored responses, tasks and their event logs.

Theory of operation. A *conversation* is one ACP session of one agent, seen from
HTTP: it remembers which agent and `sessionId` carry it, who owns it (the API
key's name) and, for Chat Completions clients that send no session key, a hash
of the transcript as of its last answer (`transcript_hash`), so the next request
can be matched by its prefix. A *response* row maps a Responses API id to its
conversation and turn, which is what makes `previous_response_id` survive a
gateway restart. A *task* is one turn. A conversation has *one log*: the frames of
all its tasks (each turn's start with its prompt, every agent update, permission
questions and answers, the turn's end with usage, errors), numbered per
*conversation* from 1 across its tasks, written before any reader sees them. Readers
read it by that number: `events_after(conversation_id, seq)` for the whole log,
`task_events(task_id, seq)` for one task's frames (the same numbers: a task's seqs
are increasing, not contiguous). What the agent sends while no turn runs is in the log
too, as frames of no task (`LogNote`: numbered with the rest, `task_id` NULL, so
`task_events` never returns them). Frames are stored a batch to a row (`gw_log_frames`:
the conversation, the first and last seq, the task, the frames as one JSON array): a
5,000-chunk answer is a handful of inserts, not 5,000. A row's conversation is its
task's, looked up as the row is written (a frame of an unknown task is an error); a
note's is named. Deleting a conversation deletes every frame of its log (cascaded).

Retention (`prune_log`): the log frames of conversations not updated since a time and
with no task running are deleted (their rows, tasks and responses stay).

Each response and task row in flight names the *boot* that runs it: one row of
`gw_boots` per gateway process (a random id, its host, pid and the pid's start
time). A process that dies leaves its rows `in_progress` / `running`; the next
gateway that finds the boot dead settles them (`settle`) in one transaction, so
no client waits forever on a response nobody will finish.

Each key's spend a day (its budgets' count) is `GatewayStore.spend` (store/spend.py).

`GatewayStore` is the interface the gateway codes against; `SqliteGatewayStore`
implements it on `store/sqlite.py`'s `Database` (one writer thread and a few
readers, WAL); `PostgresGatewayStore` (store/postgres.py) on a database several
gateways share. `open_store` picks one by its target: a path or a `postgresql://` URL.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from agentao.store.cluster import Cluster, SoloCluster
from agentao.store.gateway_records import (
    IN_FLIGHT_RESPONSE,
    IN_FLIGHT_TASK,
    INSERT_LOG_FRAMES,
    INSERT_NOTE_FRAMES,
    LAST_SEQ,
    LAST_SEQ_OF_TASK,
    PRUNE_LOG,
    RUNNING_FRAMES,
    Boot,
    Conversation,
    LogNote,
    ResponseRecord,
    Settlement,
    TaskEvent,
    TaskRecord,
    best_by_transcript,
    boot_from_row,
    boot_row,
    conversation_from_row,
    decode_frames,
    encode_json,
    escape_like,
    frame_rows,
    new_task_row,
    note_rows,
    response_from_row,
    response_row,
    stamp_batch,
    task_end_row,
    task_from_row,
)
from agentao.store.gateway_schema import GATEWAY_SCHEMA, GATEWAY_TITLES_SCHEMA
from agentao.store.remote import REMOTE_SCHEMA, RemoteStore, SqliteRemoteStore
from agentao.store.spend import SPEND_SCHEMA, SpendStore, SqliteSpend
from agentao.store.sqlite import Database
from agentao.store.target import (
    DEFAULT_CONNECT_SECONDS,
    DEFAULT_POOL_SIZE,
    StoreUnavailable,
    StoreUrlInvalid,
    check_store_url,
    is_postgres_url,
)


class GatewayStore(Protocol):
    """What the gateway persists. Every method is a short, atomic operation."""

    async def create_conversation(self, conv: Conversation) -> None: ...
    async def get_conversation(self, conversation_id: str) -> Conversation | None: ...
    async def conversation_by_session(self, agent: str, session_id: str) -> Conversation | None: ...
    async def find_by_transcript(
        self, owner: str, agent: str, hashes: Sequence[str]
    ) -> tuple[Conversation, str] | None: ...
    async def update_conversation(self, conv: Conversation) -> None: ...
    async def list_conversations(
        self, owner: str | None, limit: int, query: str | None = None
    ) -> list[Conversation]: ...
    async def delete_conversation(self, conversation_id: str) -> bool: ...
    async def put_response(self, record: ResponseRecord) -> None: ...
    async def get_response(self, response_id: str) -> ResponseRecord | None: ...
    async def delete_response(self, response_id: str) -> bool: ...
    async def get_task(self, task_id: str) -> TaskRecord | None: ...
    async def list_tasks(self, conversation_id: str) -> list[TaskRecord]: ...
    async def append_events(
        self,
        events: Sequence[TaskEvent],
        tasks: Sequence[TaskRecord] = (),
        conversations: Sequence[Conversation] = (),
        responses: Sequence[ResponseRecord] = (),
        ended: Sequence[TaskRecord] = (),
        notes: Sequence[LogNote] = (),
    ) -> None: ...
    async def events_after(self, conversation_id: str, after_seq: int) -> list[TaskEvent]: ...
    async def task_events(self, task_id: str, after_seq: int) -> list[TaskEvent]: ...
    async def last_seq(self, conversation_id: str) -> int: ...
    async def running_events(self, owner: str) -> list[tuple[str, TaskEvent]]: ...
    async def prune_log(self, updated_before: float) -> int: ...
    async def register_boot(self, boot: Boot) -> None: ...
    async def boots(self) -> list[Boot]: ...
    async def in_flight(
        self, boot_ids: Sequence[str | None]
    ) -> tuple[list[ResponseRecord], list[TaskRecord]]: ...
    async def settle(self, settlement: Settlement) -> None: ...
    async def close(self) -> None: ...
    @property
    def remote(self) -> RemoteStore: ...  # remote ACP connections and their messages
    @property
    def cluster(self) -> Cluster: ...  # the other gateways on this store, if any
    @property
    def spend(self) -> SpendStore: ...  # what each key spent a day (spend.py)


_SOLO = SoloCluster()


class SqliteGatewayStore:
    """`GatewayStore` on a SQLite `Database` opened with `GATEWAY_SCHEMA`. Lookups run on
    the database's readers, so a slow one holds up no write (see `store/sqlite.py`)."""

    def __init__(self, db: Database, inline_commit_bytes: int = 0) -> None:
        self.db = db
        # A batch writing at most this many bytes of frames commits on the event loop when
        # the writer is idle (`Database.transaction(inline=True)`); 0: always on its thread.
        self.inline_commit_bytes = inline_commit_bytes
        self._remote = SqliteRemoteStore(db, inline_commit_bytes)
        self._spend = SqliteSpend(db)

    @property
    def remote(self) -> SqliteRemoteStore:
        return self._remote

    @property
    def cluster(self) -> SoloCluster:
        return _SOLO  # an SQLite file is one gateway's (or a few on one host, see boots.py)

    @property
    def spend(self) -> SqliteSpend:
        return self._spend

    # ---- conversations ----------------------------------------------------------------

    async def create_conversation(self, conv: Conversation) -> None:
        now = time.time()
        conv.created_at = conv.created_at or now
        conv.updated_at = conv.updated_at or now
        await self.db.call(lambda c: _insert_conversation(c, conv))

    async def get_conversation(self, conversation_id: str) -> Conversation | None:
        row = await self.db.read(  # a turn waits for it: on the loop when a reader is idle
            lambda c: c.execute(
                "SELECT * FROM gw_conversations WHERE id = ?", (conversation_id,)
            ).fetchone(),
            inline=True,
        )
        return conversation_from_row(row) if row else None

    async def conversation_by_session(self, agent: str, session_id: str) -> Conversation | None:
        """The conversation an agent's session id carries (the newest, if several)."""
        row = await self.db.read(
            lambda c: c.execute(
                "SELECT * FROM gw_conversations WHERE agent = ? AND session_id = ? "
                "ORDER BY updated_at DESC LIMIT 1",
                (agent, session_id),
            ).fetchone()
        )
        return conversation_from_row(row) if row else None

    async def find_by_transcript(
        self, owner: str, agent: str, hashes: Sequence[str]
    ) -> tuple[Conversation, str] | None:
        """The conversation whose last answer ends the earliest of `hashes` that any does:
        one indexed query, whatever the number of hashes (the caller bounds it)."""
        if not hashes:
            return None
        return await self.db.read(lambda c: _find_by_transcript(c, owner, agent, hashes))

    async def update_conversation(self, conv: Conversation) -> None:
        conv.updated_at = time.time()
        await self.db.call(lambda c: _update_conversation(c, conv))

    async def list_conversations(
        self, owner: str | None, limit: int = 100, query: str | None = None
    ) -> list[Conversation]:
        """Most recently updated first; `owner=None` lists everyone's. With `query`, only
        those whose title or one of whose prompts holds it (case-insensitive for ASCII)."""
        where, args = ["1"], []
        if owner is not None:
            where.append("owner = ?")
            args.append(owner)
        if query:
            pattern = "%" + escape_like(query) + "%"
            where.append(
                "(title LIKE ? ESCAPE '\\' OR EXISTS (SELECT 1 FROM gw_tasks t WHERE "
                "t.conversation_id = gw_conversations.id AND t.prompt LIKE ? ESCAPE '\\'))"
            )
            args += [pattern, pattern]
        sql = (
            f"SELECT * FROM gw_conversations WHERE {' AND '.join(where)} "
            "ORDER BY updated_at DESC LIMIT ?"
        )
        rows = await self.db.read(lambda c: c.execute(sql, (*args, limit)).fetchall())
        return [conversation_from_row(r) for r in rows]

    async def delete_conversation(self, conversation_id: str) -> bool:
        """Delete a conversation with its responses, tasks and their frames (cascaded)."""
        cursor = await self.db.call(
            lambda c: c.execute("DELETE FROM gw_conversations WHERE id = ?", (conversation_id,))
        )
        return cursor.rowcount > 0

    # ---- responses ----------------------------------------------------------------------

    async def put_response(self, record: ResponseRecord) -> None:
        """Insert or replace a response row (its status, body and owner)."""
        record.created_at = record.created_at or time.time()
        row = response_row(record)
        await self.db.call(
            lambda c: c.execute(
                _INSERT_RESPONSE + " ON CONFLICT(id) DO UPDATE SET status = excluded.status, "
                "body = excluded.body, turn = excluded.turn, boot_id = excluded.boot_id",
                row,
            )
        )

    async def get_response(self, response_id: str) -> ResponseRecord | None:
        row = await self.db.read(
            lambda c: c.execute(
                "SELECT * FROM gw_responses WHERE id = ?", (response_id,)
            ).fetchone()
        )
        return response_from_row(row) if row is not None else None

    async def delete_response(self, response_id: str) -> bool:
        cursor = await self.db.call(
            lambda c: c.execute("DELETE FROM gw_responses WHERE id = ?", (response_id,))
        )
        return cursor.rowcount > 0

    # ---- tasks and their events -------------------------------------------------------

    async def get_task(self, task_id: str) -> TaskRecord | None:
        row = await self.db.read(
            lambda c: c.execute("SELECT * FROM gw_tasks WHERE id = ?", (task_id,)).fetchone()
        )
        return task_from_row(row) if row else None

    async def list_tasks(self, conversation_id: str) -> list[TaskRecord]:
        rows = await self.db.read(
            lambda c: c.execute(
                "SELECT * FROM gw_tasks WHERE conversation_id = ? ORDER BY created_at, rowid",
                (conversation_id,),
            ).fetchall()
        )
        return [task_from_row(r) for r in rows]

    async def append_events(
        self,
        events: Sequence[TaskEvent],
        tasks: Sequence[TaskRecord] = (),
        conversations: Sequence[Conversation] = (),
        responses: Sequence[ResponseRecord] = (),
        ended: Sequence[TaskRecord] = (),
        notes: Sequence[LogNote] = (),
    ) -> None:
        """Save conversations (insert or update), then new task rows, new response rows
        (kept if the row exists: a later `put_response` wins), then events and notes
        (frames of no task), then the ends of tasks (their status, ended_at and error),
        in one transaction (all or none): the order their references need."""
        stamp_batch(tasks, responses, conversations, time.time())
        new = [new_task_row(t) for t in tasks]
        started = [response_row(r) for r in responses]
        rows = frame_rows(events)
        noted = [row[:4] for row in note_rows(notes)]  # SQLite has no leases to check

        ends = [task_end_row(t) for t in ended]

        def append(c: sqlite3.Connection) -> None:
            for conv in conversations:
                _upsert_conversation(c, conv)
            # Only the statements with rows: a streamed answer's batch is frames alone,
            # and each statement costs its lookup and step even with nothing to do.
            for statement, params in (
                (_INSERT_TASKS, new),
                (_INSERT_RESPONSE + " ON CONFLICT(id) DO NOTHING", started),
                (_INSERT_FRAMES, rows),
                (_INSERT_NOTES, noted),
                (_END_TASKS, ends),
            ):
                if params:
                    c.executemany(statement, params)

        size = sum(len(row[4]) for row in rows) + sum(len(row[3]) for row in noted)
        inline = self.inline_commit_bytes > 0 and size <= self.inline_commit_bytes
        await self.db.transaction(append, inline=inline, size=size)

    async def events_after(self, conversation_id: str, after_seq: int) -> list[TaskEvent]:
        """The conversation's log after `after_seq`, in order (every task's frames)."""
        return await self._frames("conversation_id", conversation_id, after_seq)

    async def task_events(self, task_id: str, after_seq: int) -> list[TaskEvent]:
        """One task's frames after `after_seq` (a seq of its conversation's log)."""
        return await self._frames("task_id", task_id, after_seq)

    async def _frames(self, column: str, key: str, after_seq: int) -> list[TaskEvent]:
        rows = await self.db.read(
            lambda c: c.execute(
                f"SELECT frames FROM gw_log_frames WHERE {column} = ? AND last_seq > ? "
                "ORDER BY first_seq",
                (key, after_seq),
            ).fetchall()
        )
        return [e for row in rows for e in decode_frames(row[0]) if e.seq > after_seq]

    async def running_events(self, owner: str) -> list[tuple[str, TaskEvent]]:
        """The frames of `owner`'s running tasks, each with its conversation, each
        conversation's in log order."""
        rows = await self.db.read(
            lambda c: c.execute(
                RUNNING_FRAMES.replace("%s", "?"), (IN_FLIGHT_TASK, owner)
            ).fetchall()
        )
        return [(row[0], e) for row in rows for e in decode_frames(row[1])]

    async def last_seq(self, conversation_id: str) -> int:
        """The seq of the conversation's last stored frame (0: none)."""
        row = await self.db.read(
            lambda c: c.execute(LAST_SEQ.replace("%s", "?"), (conversation_id,)).fetchone()
        )
        return int(row[0])

    async def prune_log(self, updated_before: float) -> int:
        """Delete the log frames of conversations not updated since `updated_before` and
        with no task running; how many rows of frames went."""
        cursor = await self.db.call(
            lambda c: c.execute(PRUNE_LOG.replace("%s", "?"), (updated_before, IN_FLIGHT_TASK))
        )
        return cursor.rowcount

    # ---- owners of rows in flight -----------------------------------------------------

    async def register_boot(self, boot: Boot) -> None:
        await self.db.call(lambda c: c.execute(_INSERT_BOOT, boot_row(boot)))

    async def boots(self) -> list[Boot]:
        rows = await self.db.read(lambda c: c.execute("SELECT * FROM gw_boots").fetchall())
        return [boot_from_row(r) for r in rows]

    async def in_flight(
        self, boot_ids: Sequence[str | None]
    ) -> tuple[list[ResponseRecord], list[TaskRecord]]:
        """Responses `in_progress` and tasks `running` owned by these boots (None: rows
        written before owners were recorded)."""
        return await self.db.read(lambda c: _in_flight(c, boot_ids))

    async def settle(self, settlement: Settlement) -> None:
        """Store what dead boots left in flight as final, in one transaction."""
        await self.db.transaction(lambda c: _settle(c, settlement, time.time()))

    async def close(self) -> None:
        self.db.close()


_INSERT_CONVERSATION = (
    "INSERT INTO gw_conversations (id, owner, agent, session_id, title, source, created_at, "
    "updated_at, turn_count, transcript_hash, title_by, session_params) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _conversation_row(v: Conversation) -> tuple[Any, ...]:
    params = encode_json(v.session_params) if v.session_params is not None else None
    return (
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
        v.title_by,
        params,
    )


def _insert_conversation(conn: sqlite3.Connection, v: Conversation) -> None:
    conn.execute(_INSERT_CONVERSATION, _conversation_row(v))


def _upsert_conversation(conn: sqlite3.Connection, v: Conversation) -> None:
    conn.execute(
        _INSERT_CONVERSATION + " "
        "ON CONFLICT(id) DO UPDATE SET session_id = excluded.session_id, title = excluded.title, "
        "updated_at = excluded.updated_at, turn_count = excluded.turn_count, "
        "transcript_hash = excluded.transcript_hash, title_by = excluded.title_by, "
        "session_params = excluded.session_params",
        _conversation_row(v),
    )


def _update_conversation(conn: sqlite3.Connection, v: Conversation) -> None:
    conn.execute(
        "UPDATE gw_conversations SET session_id = ?, title = ?, updated_at = ?, "
        "turn_count = ?, transcript_hash = ?, title_by = ?, session_params = ? WHERE id = ?",
        (
            v.session_id,
            v.title,
            v.updated_at,
            v.turn_count,
            v.transcript_hash,
            v.title_by,
            encode_json(v.session_params) if v.session_params is not None else None,
            v.id,
        ),
    )


def _find_by_transcript(
    conn: sqlite3.Connection, owner: str, agent: str, hashes: Sequence[str]
) -> tuple[Conversation, str] | None:
    marks = ", ".join("?" * len(hashes))
    rows = conn.execute(
        "SELECT * FROM gw_conversations WHERE owner = ? AND agent = ? "
        f"AND transcript_hash IN ({marks})",
        (owner, agent, *hashes),
    ).fetchall()
    best = best_by_transcript(rows, hashes)
    return (conversation_from_row(best), best["transcript_hash"]) if best else None


_INSERT_TASKS = (
    "INSERT INTO gw_tasks (id, conversation_id, status, created_at, prompt, boot_id) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)
_END_TASKS = "UPDATE gw_tasks SET status = ?, ended_at = ?, error = ? WHERE id = ?"
_INSERT_FRAMES = INSERT_LOG_FRAMES.replace("%s", "?")
_INSERT_NOTES = INSERT_NOTE_FRAMES.replace("%s", "?")
_LAST_SEQ_OF_TASK = LAST_SEQ_OF_TASK.replace("%s", "?")


_INSERT_RESPONSE = (
    "INSERT INTO gw_responses (id, conversation_id, turn, status, created_at, body, boot_id) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_BOOT = (
    "INSERT INTO gw_boots (id, host, machine_boot, pid_ns, pid, pid_start, started_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)


def _owned_by(boot_ids: Sequence[str | None]) -> tuple[str, tuple[str, ...]]:
    """A WHERE clause on boot_id for these boots (None: no owner recorded)."""
    named = tuple(b for b in boot_ids if b is not None)
    parts = [f"boot_id IN ({', '.join('?' * len(named))})"] if named else []
    if None in boot_ids:
        parts.append("boot_id IS NULL")
    return "(" + (" OR ".join(parts) or "0") + ")", named


def _in_flight(
    conn: sqlite3.Connection, boot_ids: Sequence[str | None]
) -> tuple[list[ResponseRecord], list[TaskRecord]]:
    where, args = _owned_by(boot_ids)
    responses = conn.execute(
        f"SELECT * FROM gw_responses WHERE status = ? AND {where}", (IN_FLIGHT_RESPONSE, *args)
    ).fetchall()
    tasks = conn.execute(
        f"SELECT * FROM gw_tasks WHERE status = ? AND {where}", (IN_FLIGHT_TASK, *args)
    ).fetchall()
    return [response_from_row(r) for r in responses], [task_from_row(r) for r in tasks]


def _settle(conn: sqlite3.Connection, s: Settlement, now: float) -> None:
    for r in s.responses:
        conn.execute(
            "UPDATE gw_responses SET status = ?, body = ? WHERE id = ? AND status = ?",
            (r.status, encode_json(r.body).decode(), r.id, IN_FLIGHT_RESPONSE),
        )
    for t in s.tasks:
        settled = conn.execute(
            "UPDATE gw_tasks SET status = ?, error = ?, ended_at = ? WHERE id = ? AND status = ?",
            (t.status, t.error, now, t.id, IN_FLIGHT_TASK),
        ).rowcount
        if settled and t.id in s.frames:
            kind, payload = s.frames[t.id]
            last = conn.execute(_LAST_SEQ_OF_TASK, (t.id,)).fetchone()[0]
            conn.executemany(
                _INSERT_FRAMES, frame_rows([TaskEvent(t.id, last + 1, kind, now, payload)])
            )
    conn.executemany("DELETE FROM gw_boots WHERE id = ?", [(b,) for b in s.boots])


def open_gateway_store(
    path: Path | str, *, readers: int = 0, inline_commit_bytes: int = 0
) -> SqliteGatewayStore:
    """A `SqliteGatewayStore` on its own file (created and migrated if needed), with
    `readers` read-only connections for its lookups; a batch of frames or messages of at
    most `inline_commit_bytes` commits on the event loop when the writer is idle."""
    schemas = [GATEWAY_SCHEMA, GATEWAY_TITLES_SCHEMA, REMOTE_SCHEMA, SPEND_SCHEMA]
    db = Database.open(path, schemas, readers=readers)
    return SqliteGatewayStore(db, inline_commit_bytes)


def open_store(
    target: Path | str,
    *,
    readers: int = 0,
    pool_size: int = DEFAULT_POOL_SIZE,
    connect_seconds: float = DEFAULT_CONNECT_SECONDS,
    idle_in_transaction_seconds: float | None = None,
    inline_commit_bytes: int = 0,
) -> GatewayStore:
    """The gateway's store at `target`: PostgreSQL at a `postgresql://` URL (a pool of
    `pool_size`, a session idle that long inside a transaction ended by the server), else
    SQLite at that path (with `readers`, and `inline_commit_bytes`: PostgreSQL's commits
    always go over the network, so it ignores that). Raises `StoreUnavailable` when a database cannot
    be reached."""
    if not is_postgres_url(target):
        return open_gateway_store(target, readers=readers, inline_commit_bytes=inline_commit_bytes)
    try:
        check_store_url(str(target))
    except StoreUrlInvalid as exc:
        raise StoreUnavailable(str(exc)) from None
    try:  # psycopg is optional: only a PostgreSQL store loads it
        from agentao.store.postgres import open_postgres_store
    except ImportError as exc:
        raise StoreUnavailable(
            f"a PostgreSQL store needs the `postgres` extra (psycopg, psycopg-pool): {exc}"
        ) from None
    return open_postgres_store(
        str(target),
        pool_size=pool_size,
        connect_seconds=connect_seconds,
        idle_in_transaction_seconds=idle_in_transaction_seconds,
    )


__all__ = [
    "GATEWAY_SCHEMA",
    "GATEWAY_TITLES_SCHEMA",
    "IN_FLIGHT_RESPONSE",
    "IN_FLIGHT_TASK",
    "GatewayStore",
    "SqliteGatewayStore",
    "open_gateway_store",
    "open_store",
]
