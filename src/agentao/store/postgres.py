"""The gateway's store on PostgreSQL: the same tables and semantics as on SQLite.

Theory of operation. `PostgresGatewayStore` implements `GatewayStore` (store/gateway.py)
and its `.remote`, a `PostgresRemoteStore`, implements `RemoteStore` (store/remote.py)
(and its `.spend`, each key's daily spend, `SpendStore`: store/spend.py),
statement for statement the same operations as the SQLite ones: read their docstrings
there. Several gateways may share one database; each holds a small pool
(`PgDatabase`, store/postgres_db.py) and every method is one statement or one
transaction, so they never see each other's half-written turns.

Where the types differ from SQLite's: times are DOUBLE PRECISION (epoch seconds, as
the records carry them); a response's body is JSON (text kept as written: its keys
stay in the order the client is sent them, which JSONB would not keep); a remote
client's capabilities and a session's parameters are JSONB; batches of task frames
and remote messages are BYTEA, encoded once by msgspec and returned as they went in.
PostgreSQL has no rowid, so tasks carry an identity column `n` for their order.

The migrations start afresh (this database never held the older SQLite layouts); the
indexes match the SQLite ones. The conversation log (`gw_log_frames`) replaced the
per-task frames (`gw_task_frames`) by a migration that renumbers them; its frames of no
task (notes) are written only by the conversation's lease holder (`_INSERT_HELD_NOTES`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from agentao.store.gateway_records import (
    IN_FLIGHT_RESPONSE,
    IN_FLIGHT_TASK,
    INSERT_LOG_FRAMES,
    LAST_SEQ,
    LAST_SEQ_OF_TASK,
    PRUNE_LOG,
    RUNNING_FRAMES,
    Boot,
    Conversation,
    LogNote,
    ResponseRecord,
    Row,
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
from agentao.store.postgres_cluster import PG_CLUSTER_SCHEMA, PgCluster
from agentao.store.postgres_db import PgDatabase, PgTransaction
from agentao.store.postgres_remote import PG_REMOTE_SCHEMA, PostgresRemoteStore
from agentao.store.spend import PG_SPEND_SCHEMA, PostgresSpend
from agentao.store.sqlite import Schema
from agentao.store.target import DEFAULT_CONNECT_SECONDS, DEFAULT_POOL_SIZE

PG_GATEWAY_SCHEMA = Schema(
    "gateway",
    (
        """CREATE TABLE gw_conversations (
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            agent TEXT NOT NULL,
            session_id TEXT,
            title TEXT,
            source TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            turn_count INTEGER NOT NULL DEFAULT 0,
            transcript_hash TEXT,
            title_by TEXT,
            session_params JSONB
        )""",
        "CREATE INDEX gw_conversations_by_hash ON gw_conversations(owner, agent, transcript_hash)",
        "CREATE INDEX gw_conversations_by_update ON gw_conversations(owner, updated_at DESC)",
        "CREATE INDEX gw_conversations_by_session ON gw_conversations(agent, session_id)",
        """CREATE TABLE gw_responses (
            id TEXT PRIMARY KEY,
            conversation_id TEXT NOT NULL REFERENCES gw_conversations(id) ON DELETE CASCADE,
            turn INTEGER NOT NULL,
            status TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            body JSON NOT NULL,
            boot_id TEXT
        )""",
        # Responses are found by id; this one is for deleting a conversation's (the cascade).
        "CREATE INDEX gw_responses_by_conversation ON gw_responses(conversation_id)",
        """CREATE TABLE gw_tasks (
            id TEXT PRIMARY KEY,
            n BIGINT GENERATED ALWAYS AS IDENTITY,
            conversation_id TEXT NOT NULL REFERENCES gw_conversations(id) ON DELETE CASCADE,
            status TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            ended_at DOUBLE PRECISION,
            prompt TEXT NOT NULL DEFAULT '',
            boot_id TEXT,
            error TEXT
        )""",
        "CREATE INDEX gw_tasks_by_conversation ON gw_tasks(conversation_id, created_at)",
        """CREATE TABLE gw_boots (
            id TEXT PRIMARY KEY,
            host TEXT NOT NULL,
            machine_boot TEXT NOT NULL,
            pid_ns TEXT NOT NULL,
            pid INTEGER NOT NULL,
            pid_start TEXT NOT NULL,
            started_at DOUBLE PRECISION NOT NULL
        )""",
        "CREATE INDEX gw_responses_in_flight ON gw_responses(boot_id) WHERE status = 'in_progress'",
        "CREATE INDEX gw_tasks_in_flight ON gw_tasks(boot_id) WHERE status = 'running'",
        """CREATE TABLE gw_task_frames (
            task_id TEXT NOT NULL REFERENCES gw_tasks(id) ON DELETE CASCADE,
            first_seq BIGINT NOT NULL,
            last_seq BIGINT NOT NULL,
            frames BYTEA NOT NULL,
            PRIMARY KEY (task_id, first_seq)
        )""",
        # One log per conversation (see store/gateway.py): the frames of before, numbered
        # per task, renumbered in the order their tasks were created, one row per frame
        # (JSON, not JSONB: the text of each frame is kept as written).
        """CREATE TABLE gw_log_frames (
            conversation_id TEXT NOT NULL REFERENCES gw_conversations(id) ON DELETE CASCADE,
            first_seq BIGINT NOT NULL,
            last_seq BIGINT NOT NULL,
            task_id TEXT NOT NULL REFERENCES gw_tasks(id) ON DELETE CASCADE,
            frames BYTEA NOT NULL,
            PRIMARY KEY (conversation_id, first_seq)
        )""",
        """INSERT INTO gw_log_frames (conversation_id, first_seq, last_seq, task_id, frames)
        SELECT conversation_id, n, n, task_id, convert_to('[[' || to_json(task_id)::text || ','
            || n || ',' || (e->2)::text || ',' || (e->3)::text || ',' || (e->4)::text || ']]',
            'UTF8')
        FROM (
            SELECT t.conversation_id, f.task_id, x.e, ROW_NUMBER() OVER (
                PARTITION BY t.conversation_id ORDER BY t.created_at, t.n, f.first_seq, x.i
            ) AS n
            FROM gw_task_frames f JOIN gw_tasks t ON t.id = f.task_id
            CROSS JOIN LATERAL json_array_elements(convert_from(f.frames, 'UTF8')::json)
                WITH ORDINALITY AS x(e, i)
        ) AS numbered""",
        "DROP TABLE gw_task_frames",
        "CREATE INDEX gw_log_frames_by_task ON gw_log_frames(task_id, first_seq)",
        # Frames of no task (what the agent sent while no turn ran: `LogNote`).
        "ALTER TABLE gw_log_frames ALTER COLUMN task_id DROP NOT NULL",
    ),
)

_CONVERSATION_COLUMNS = (
    "id, owner, agent, session_id, title, source, created_at, updated_at, turn_count, "
    "transcript_hash, title_by, session_params"
)
_INSERT_CONVERSATION = (
    f"INSERT INTO gw_conversations ({_CONVERSATION_COLUMNS}) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)
_UPSERT_CONVERSATION = (
    _INSERT_CONVERSATION + " ON CONFLICT (id) DO UPDATE SET session_id = excluded.session_id, "
    "title = excluded.title, updated_at = excluded.updated_at, "
    "turn_count = excluded.turn_count, transcript_hash = excluded.transcript_hash, "
    "title_by = excluded.title_by, session_params = excluded.session_params"
)
_INSERT_RESPONSE = (
    "INSERT INTO gw_responses (id, conversation_id, turn, status, created_at, body, boot_id) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s)"
)
_INSERT_TASK = (
    "INSERT INTO gw_tasks (id, conversation_id, status, created_at, prompt, boot_id) "
    "VALUES (%s, %s, %s, %s, %s, %s)"
)
_INSERT_FRAMES = INSERT_LOG_FRAMES
# A turn's frames, written only while no other replica holds the conversation's lease
# (gw_leases, postgres_cluster.py): a replica that stalled past its lease and woke up
# must not number frames into a log its successor writes on. Params: (first seq, last
# seq, frames, task).
_INSERT_HELD_FRAMES = (
    "INSERT INTO gw_log_frames (conversation_id, first_seq, last_seq, task_id, frames) "
    "SELECT t.conversation_id, %s, %s, t.id, %s FROM gw_tasks t WHERE t.id = %s "
    "AND NOT EXISTS (SELECT 1 FROM gw_leases l "
    "WHERE l.conversation_id = t.conversation_id AND l.boot_id <> t.boot_id)"
)
# A batch of notes (frames of no task), written only by the replica that holds the
# conversation's lease: one that lost it (or never had it) appends nothing to a log
# another may be numbering. Params: (conversation, first seq, last seq, frames, boot).
_INSERT_HELD_NOTES = (
    "INSERT INTO gw_log_frames (conversation_id, first_seq, last_seq, task_id, frames) "
    "SELECT l.conversation_id, %s, %s, NULL, %s FROM gw_leases l "
    "WHERE l.conversation_id = %s AND l.boot_id = %s"
)
# Who holds the lease of a task's conversation (row locked), and the task's own boot.
_LOG_HOLDER_OF_TASK = (
    "SELECT l.boot_id, t.boot_id AS task_boot FROM gw_tasks t "
    "JOIN gw_leases l ON l.conversation_id = t.conversation_id WHERE t.id = %s FOR UPDATE OF l"
)
_INSERT_BOOT = (
    "INSERT INTO gw_boots (id, host, machine_boot, pid_ns, pid, pid_start, started_at) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s)"
)


class LogNotHeld(RuntimeError):
    """A batch named a task whose conversation another replica holds (or no task), or
    held notes of a conversation whose lease this replica does not hold: none of it is
    stored."""


class PostgresGatewayStore:
    """`GatewayStore` on a PostgreSQL `PgDatabase` migrated with `PG_GATEWAY_SCHEMA`."""

    def __init__(self, db: PgDatabase, url: str) -> None:
        self.db = db
        self._remote = PostgresRemoteStore(db)
        self._cluster = PgCluster(db, url)
        self._spend = PostgresSpend(db)

    @property
    def remote(self) -> PostgresRemoteStore:
        return self._remote

    @property
    def cluster(self) -> PgCluster:
        return self._cluster

    @property
    def spend(self) -> PostgresSpend:
        return self._spend

    # ---- conversations ----------------------------------------------------------------

    async def create_conversation(self, conv: Conversation) -> None:
        now = time.time()
        conv.created_at = conv.created_at or now
        conv.updated_at = conv.updated_at or now
        await self.db.execute(_INSERT_CONVERSATION, _conversation_row(conv))

    async def get_conversation(self, conversation_id: str) -> Conversation | None:
        row = await self.db.fetchone(
            "SELECT * FROM gw_conversations WHERE id = %s", (conversation_id,)
        )
        return conversation_from_row(row) if row else None

    async def conversation_by_session(self, agent: str, session_id: str) -> Conversation | None:
        row = await self.db.fetchone(
            "SELECT * FROM gw_conversations WHERE agent = %s AND session_id = %s "
            "ORDER BY updated_at DESC LIMIT 1",
            (agent, session_id),
        )
        return conversation_from_row(row) if row else None

    async def find_by_transcript(
        self, owner: str, agent: str, hashes: Sequence[str]
    ) -> tuple[Conversation, str] | None:
        if not hashes:
            return None
        rows = await self.db.fetchall(
            "SELECT * FROM gw_conversations WHERE owner = %s AND agent = %s "
            "AND transcript_hash = ANY(%s)",
            (owner, agent, list(hashes)),
        )
        best = best_by_transcript(rows, hashes)
        return (conversation_from_row(best), best["transcript_hash"]) if best else None

    async def update_conversation(self, conv: Conversation) -> None:
        conv.updated_at = time.time()
        row = _conversation_row(conv)
        await self.db.execute(
            "UPDATE gw_conversations SET session_id = %s, title = %s, updated_at = %s, "
            "turn_count = %s, transcript_hash = %s, title_by = %s, session_params = %s "
            "WHERE id = %s",
            (*row[3:5], *row[7:], conv.id),  # session_id, title; updated_at .. params
        )

    async def list_conversations(
        self, owner: str | None, limit: int = 100, query: str | None = None
    ) -> list[Conversation]:
        """As on SQLite; the search is ILIKE (SQLite's LIKE ignores ASCII case only)."""
        where, args = ["TRUE"], []
        if owner is not None:
            where.append("owner = %s")
            args.append(owner)
        if query:
            pattern = "%" + escape_like(query) + "%"
            where.append(
                "(title ILIKE %s ESCAPE '\\' OR EXISTS (SELECT 1 FROM gw_tasks t WHERE "
                "t.conversation_id = gw_conversations.id AND t.prompt ILIKE %s ESCAPE '\\'))"
            )
            args += [pattern, pattern]
        sql = (
            f"SELECT * FROM gw_conversations WHERE {' AND '.join(where)} "
            "ORDER BY updated_at DESC LIMIT %s"
        )
        return [conversation_from_row(r) for r in await self.db.fetchall(sql, (*args, limit))]

    async def delete_conversation(self, conversation_id: str) -> bool:
        deleted = await self.db.execute(
            "DELETE FROM gw_conversations WHERE id = %s", (conversation_id,)
        )
        return deleted > 0

    # ---- responses ----------------------------------------------------------------------

    async def put_response(self, record: ResponseRecord) -> None:
        record.created_at = record.created_at or time.time()
        await self.db.execute(
            _INSERT_RESPONSE + " ON CONFLICT (id) DO UPDATE SET status = excluded.status, "
            "body = excluded.body, turn = excluded.turn, boot_id = excluded.boot_id",
            response_row(record),
        )

    async def get_response(self, response_id: str) -> ResponseRecord | None:
        row = await self.db.fetchone("SELECT * FROM gw_responses WHERE id = %s", (response_id,))
        return response_from_row(row) if row is not None else None

    async def delete_response(self, response_id: str) -> bool:
        return await self.db.execute("DELETE FROM gw_responses WHERE id = %s", (response_id,)) > 0

    # ---- tasks and their events -------------------------------------------------------

    async def get_task(self, task_id: str) -> TaskRecord | None:
        row = await self.db.fetchone("SELECT * FROM gw_tasks WHERE id = %s", (task_id,))
        return task_from_row(row) if row else None

    async def list_tasks(self, conversation_id: str) -> list[TaskRecord]:
        rows = await self.db.fetchall(
            "SELECT * FROM gw_tasks WHERE conversation_id = %s ORDER BY created_at, n",
            (conversation_id,),
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
        stamp_batch(tasks, responses, conversations, time.time())
        upserts = [_conversation_row(c) for c in conversations]
        new = [new_task_row(t) for t in tasks]
        started = [response_row(r) for r in responses]
        rows = [(first, last, frames, task) for task, first, last, _, frames in frame_rows(events)]
        ends = [task_end_row(t) for t in ended]
        noted = [
            (first, last, frames, conv, boot)
            for conv, first, last, frames, boot in note_rows(notes)
        ]

        async def append(tx: PgTransaction) -> None:
            await tx.executemany(_UPSERT_CONVERSATION, upserts)
            await tx.executemany(_INSERT_TASK, new)
            await tx.executemany(_INSERT_RESPONSE + " ON CONFLICT (id) DO NOTHING", started)
            if await tx.executemany(_INSERT_HELD_FRAMES, rows) != len(rows):
                raise LogNotHeld(
                    "frames refused: another replica holds the conversation now, or the "
                    "task is unknown"
                )
            if await tx.executemany(_INSERT_HELD_NOTES, noted) != len(noted):
                raise LogNotHeld(
                    "notes refused: this replica does not hold the conversation's lease"
                )
            await tx.executemany(
                "UPDATE gw_tasks SET status = %s, ended_at = %s, error = %s WHERE id = %s", ends
            )

        await self.db.transaction(append)

    async def events_after(self, conversation_id: str, after_seq: int) -> list[TaskEvent]:
        return await self._frames("conversation_id", conversation_id, after_seq)

    async def task_events(self, task_id: str, after_seq: int) -> list[TaskEvent]:
        return await self._frames("task_id", task_id, after_seq)

    async def _frames(self, column: str, key: str, after_seq: int) -> list[TaskEvent]:
        rows = await self.db.fetchall(
            f"SELECT frames FROM gw_log_frames WHERE {column} = %s AND last_seq > %s "
            "ORDER BY first_seq",
            (key, after_seq),
        )
        return [e for row in rows for e in decode_frames(row["frames"]) if e.seq > after_seq]

    async def last_seq(self, conversation_id: str) -> int:
        row = await self.db.fetchone(LAST_SEQ, (conversation_id,))
        return int(row["last"]) if row else 0

    async def running_events(self, owner: str) -> list[tuple[str, TaskEvent]]:
        rows = await self.db.fetchall(RUNNING_FRAMES, (IN_FLIGHT_TASK, owner))
        return [(r["conversation_id"], e) for r in rows for e in decode_frames(r["frames"])]

    async def prune_log(self, updated_before: float) -> int:
        return await self.db.execute(PRUNE_LOG, (updated_before, IN_FLIGHT_TASK))

    # ---- owners of rows in flight -----------------------------------------------------

    async def register_boot(self, boot: Boot) -> None:
        await self.db.execute(_INSERT_BOOT, boot_row(boot))

    async def boots(self) -> list[Boot]:
        return [boot_from_row(r) for r in await self.db.fetchall("SELECT * FROM gw_boots")]

    async def in_flight(
        self, boot_ids: Sequence[str | None]
    ) -> tuple[list[ResponseRecord], list[TaskRecord]]:
        where, named = _owned_by(boot_ids)
        responses = await self.db.fetchall(
            f"SELECT * FROM gw_responses WHERE status = %s AND {where}",
            (IN_FLIGHT_RESPONSE, named),
        )
        tasks = await self.db.fetchall(
            f"SELECT * FROM gw_tasks WHERE status = %s AND {where}", (IN_FLIGHT_TASK, named)
        )
        return [response_from_row(r) for r in responses], [task_from_row(r) for r in tasks]

    async def settle(self, settlement: Settlement) -> None:
        now = time.time()
        await self.db.transaction(lambda tx: _settle(tx, settlement, now))

    async def close(self) -> None:
        await self.db.close()


def _conversation_row(v: Conversation) -> tuple[Any, ...]:
    params = encode_json(v.session_params).decode() if v.session_params is not None else None
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


def _owned_by(boot_ids: Sequence[str | None]) -> tuple[str, list[str]]:
    """A WHERE clause on boot_id for these boots (None: no owner recorded), taking the
    list of named ones as its one parameter."""
    named = [b for b in boot_ids if b is not None]
    clause = "boot_id = ANY(%s)"
    if None in boot_ids:
        clause = f"({clause} OR boot_id IS NULL)"
    return clause, named


async def _settle(tx: PgTransaction, s: Settlement, now: float) -> None:
    for r in s.responses:
        await tx.execute(
            "UPDATE gw_responses SET status = %s, body = %s WHERE id = %s AND status = %s",
            (r.status, encode_json(r.body).decode(), r.id, IN_FLIGHT_RESPONSE),
        )
    for t in s.tasks:
        settled = await tx.execute(
            "UPDATE gw_tasks SET status = %s, error = %s, ended_at = %s "
            "WHERE id = %s AND status = %s",
            (t.status, t.error, now, t.id, IN_FLIGHT_TASK),
        )
        if settled and t.id in s.frames:
            await _append_last_frame(tx, t.id, s.frames[t.id], now)
    await tx.executemany("DELETE FROM gw_boots WHERE id = %s", [(b,) for b in s.boots])


async def _append_last_frame(
    tx: PgTransaction, task_id: str, frame: tuple[str, dict[str, Any]], now: float
) -> None:
    """The settled task's last frame, unless another replica holds its conversation now:
    that one numbers the log on from where it read its end, and a frame put in meanwhile
    would take the seq it is about to write. The lease's row stays locked until this
    commits, so a takeover waits for the frame and then reads the end after it."""
    holder: Row | None = await tx.fetchone(_LOG_HOLDER_OF_TASK, (task_id,))
    if holder is not None and holder["boot_id"] != holder["task_boot"]:
        return
    row: Row | None = await tx.fetchone(LAST_SEQ_OF_TASK, (task_id,))
    last = int(row["last"]) if row else 0
    kind, payload = frame
    await tx.executemany(
        _INSERT_FRAMES, frame_rows([TaskEvent(task_id, last + 1, kind, now, payload)])
    )


def open_postgres_store(
    url: str,
    *,
    pool_size: int = DEFAULT_POOL_SIZE,
    connect_seconds: float = DEFAULT_CONNECT_SECONDS,
    idle_in_transaction_seconds: float | None = None,
) -> PostgresGatewayStore:
    """A `PostgresGatewayStore` on the database at `url`, migrated (once, whichever
    gateway comes first). Raises `StoreUnavailable` when it cannot be reached.
    `idle_in_transaction_seconds`: see `PgDatabase.open` (the gateway passes its lease)."""
    schemas = [PG_GATEWAY_SCHEMA, PG_REMOTE_SCHEMA, PG_CLUSTER_SCHEMA, PG_SPEND_SCHEMA]
    db = PgDatabase.open(
        url,
        schemas,
        pool_size=pool_size,
        connect_seconds=connect_seconds,
        idle_in_transaction_seconds=idle_in_transaction_seconds,
    )
    return PostgresGatewayStore(db, url)


__all__ = ["PG_GATEWAY_SCHEMA", "LogNotHeld", "PostgresGatewayStore", "open_postgres_store"]
