"""What only the PostgreSQL store has: migrations shared by gateways, and its URL."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from typing import Any

import psycopg
import pytest

from agentao.store.gateway import open_store
from agentao.store.gateway_records import Conversation, Settlement, TaskEvent, TaskRecord
from agentao.store.postgres import PG_GATEWAY_SCHEMA, LogNotHeld
from agentao.store.postgres_db import migrate
from agentao.store.postgres_remote import PG_REMOTE_SCHEMA
from agentao.store.sqlite import Schema
from agentao.store.target import StoreUnavailable, shown

SCHEMAS = (PG_GATEWAY_SCHEMA, PG_REMOTE_SCHEMA)


def test_gateways_starting_together_migrate_once(pg_url: str) -> None:
    start = threading.Barrier(3)
    applied: list[int] = []

    def open_and_migrate() -> None:
        with psycopg.connect(pg_url) as conn:
            start.wait()
            applied.append(migrate(conn, SCHEMAS))

    threads = [threading.Thread(target=open_and_migrate) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = sum(len(s.migrations) for s in SCHEMAS)
    assert sorted(applied) == [0, 0, total]  # one did it all, the others found it done
    with psycopg.connect(pg_url) as conn:
        versions = dict(conn.execute("SELECT name, version FROM schema_versions").fetchall())
    assert versions == {s.name: len(s.migrations) for s in SCHEMAS}


async def test_two_stores_opening_one_database_together(pg_url: str) -> None:
    stores = []
    start = threading.Barrier(2)

    def open_one() -> None:
        start.wait()
        stores.append(open_store(pg_url))

    threads = [threading.Thread(target=open_one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(stores) == 2
    assert await stores[0].boots() == await stores[1].boots() == []
    for s in stores:
        await s.close()


async def test_frames_numbered_per_task_migrate_into_one_log_per_conversation(
    pg_url: str,
) -> None:
    before = Schema("gateway", PG_GATEWAY_SCHEMA.migrations[:12])  # per-task gw_task_frames
    assert "gw_task_frames" in before.migrations[-1]
    with psycopg.connect(pg_url) as conn:
        migrate(conn, [before])
        conn.execute(
            "INSERT INTO gw_conversations (id, owner, agent, source, created_at, updated_at) "
            "VALUES ('c1', 'local', 'agentao', 'task', 1, 1)"
        )
        conn.execute(
            "INSERT INTO gw_tasks (id, conversation_id, status, created_at) VALUES "
            "('t1', 'c1', 'running', 2), ('t0', 'c1', 'ended', 1)"
        )
        conn.execute(
            "INSERT INTO gw_task_frames VALUES ('t1', 1, 2, %s), ('t0', 1, 1, %s)",
            (
                b'[["t1",1,"task-started",1795477115.1160305,{}],'
                b'["t1",2,"task-running",2.5,{"update":{"b":1,"a":"\\u00e9"}}]]',
                b'[["t0",1,"task-ended",0.75,{}]]',
            ),
        )
    store = open_store(pg_url)
    assert [(e.task_id, e.seq, e.type, e.at) for e in await store.events_after("c1", 0)] == [
        ("t0", 1, "task-ended", 0.75),
        ("t1", 2, "task-started", 1795477115.1160305),
        ("t1", 3, "task-running", 2.5),
    ]
    running = (await store.task_events("t1", 2))[0]
    assert list(running.payload["update"]) == ["b", "a"]  # its text kept as written
    assert running.payload["update"]["a"] == "é"
    assert await store.last_seq("c1") == 3
    await store.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nobody listens once it is closed


def test_an_unreachable_database_is_a_clear_error_without_the_password() -> None:
    url = f"postgresql://agentao:s3cret-pw@127.0.0.1:{_closed_port()}/gw"
    with pytest.raises(StoreUnavailable) as caught:
        open_store(url)
    message = str(caught.value)
    assert "127.0.0.1" in message and "/gw" in message
    assert "s3cret-pw" not in message


def test_a_missing_database_names_it(postgres_server) -> None:
    with pytest.raises(StoreUnavailable, match="does not exist"):
        open_store(postgres_server.url("no_such_db"))


def test_urls_are_shown_without_their_password() -> None:
    assert shown("postgresql://u:pw@h:5/d?sslmode=require") == (
        "postgresql://[redacted]@h:5/d?sslmode=require"
    )
    assert shown("/var/lib/agentao/gateway.sqlite3") == "/var/lib/agentao/gateway.sqlite3"


async def test_a_replica_that_lost_the_lease_cannot_write_into_the_log(pg_url: str) -> None:
    """A replica that stalled past its lease and woke up (its task's boot) is refused
    frames into the conversation's log once another holds the lease; the holder writes."""
    store = open_store(pg_url)
    try:
        await store.create_conversation(Conversation("c1", "local", "agentao", "task"))
        stale, holder = TaskRecord("t_a", "c1", "running"), TaskRecord("t_b", "c1", "running")
        stale.boot_id, holder.boot_id = "boot_a", "boot_b"
        await store.append_events([TaskEvent("t_a", 1, "task-started", 1.0, {})], tasks=[stale])
        assert (await store.cluster.claim("c1", "boot_b", 30.0)).granted
        with pytest.raises(LogNotHeld):
            await store.append_events([TaskEvent("t_a", 2, "task-running", 2.0, {})])
        await store.append_events([TaskEvent("t_b", 2, "task-started", 2.0, {})], tasks=[holder])
        log = await store.events_after("c1", 0)
        assert [(e.task_id, e.seq) for e in log] == [("t_a", 1), ("t_b", 2)]
    finally:
        await store.close()


async def test_settling_a_dead_replicas_task_never_numbers_into_the_new_holders_log(
    pg_url: str,
) -> None:
    """B took the conversation over from A (gone quiet) and numbers its log on from where
    the store said it ended; a settler of A's task in flight (B's own heartbeat, or another
    replica's) runs meanwhile. Its error frame must not take a seq B is about to write
    (CI saw B's next batch refused: a duplicate key, and B's turn failed with it): the row
    is settled, and the frame is left out of a log another replica holds now."""
    store = open_store(pg_url)
    try:
        await store.create_conversation(Conversation("c1", "local", "agentao", "task"))
        stale, holder = TaskRecord("t_a", "c1", "running"), TaskRecord("t_b", "c1", "running")
        stale.boot_id, holder.boot_id = "boot_a", "boot_b"
        assert (await store.cluster.claim("c1", "boot_a", 0.0)).granted  # expires at once
        await store.append_events([TaskEvent("t_a", 1, "task-started", 1.0, {})], tasks=[stale])
        assert (await store.cluster.claim("c1", "boot_b", 30.0)).granted
        log_end = await store.last_seq("c1")  # where B numbers on from
        gone = TaskRecord("t_a", "c1", "error", boot_id="boot_a", error="A went quiet")
        frame = ("task-error", {"error": {"code": "gateway_stopped"}})
        await store.settle(Settlement(tasks=[gone], frames={"t_a": frame}))
        started = TaskEvent("t_b", log_end + 1, "task-started", 2.0, {})
        await store.append_events([started], tasks=[holder])
        assert [(e.task_id, e.seq) for e in await store.events_after("c1", 0)] == [
            ("t_a", 1),
            ("t_b", 2),
        ]
        assert (await store.get_task("t_a")).status == "error"
    finally:
        await store.close()


async def test_a_task_settled_before_the_takeover_ends_its_log_with_why(pg_url: str) -> None:
    """The other order: the settler runs while the dead replica still holds the lease, so
    its frame is the log's last and the next holder numbers on after it."""
    store = open_store(pg_url)
    try:
        await store.create_conversation(Conversation("c1", "local", "agentao", "task"))
        stale = TaskRecord("t_a", "c1", "running", boot_id="boot_a")
        assert (await store.cluster.claim("c1", "boot_a", 0.0)).granted
        await store.append_events([TaskEvent("t_a", 1, "task-started", 1.0, {})], tasks=[stale])
        gone = TaskRecord("t_a", "c1", "error", boot_id="boot_a", error="A went quiet")
        frame = ("task-error", {"error": {"code": "gateway_stopped"}})
        await store.settle(Settlement(tasks=[gone], frames={"t_a": frame}))
        assert [(e.seq, e.type) for e in await store.task_events("t_a", 0)] == [
            (1, "task-started"),
            (2, "task-error"),
        ]
        assert (await store.cluster.claim("c1", "boot_b", 30.0)).granted
        assert await store.last_seq("c1") == 2
    finally:
        await store.close()


async def test_a_replica_stalled_inside_a_transaction_does_not_hold_the_others_up(
    pg_url: str,
) -> None:
    """A stalls inside a transaction that holds its lease's row lock (a process stopped
    mid-heartbeat). The server ends that session after `idle_in_transaction_seconds`, so B
    takes the conversation over once the lease ran out, instead of waiting on the lock for
    as long as A is stopped (what CI saw: a takeover hanging until the client gave up)."""
    a = open_store(pg_url, idle_in_transaction_seconds=0.5)
    b = open_store(pg_url, idle_in_transaction_seconds=0.5)
    stalled = asyncio.Event()

    async def stall(tx: Any) -> None:
        await tx.execute("UPDATE gw_leases SET expires_at = expires_at WHERE boot_id = 'boot_a'")
        stalled.set()
        await asyncio.Event().wait()  # never commits: A is stopped here

    try:
        await a.create_conversation(Conversation("c1", "local", "agentao", "task"))
        assert (await a.cluster.claim("c1", "boot_a", 0.1)).granted
        stalling = asyncio.ensure_future(a.cluster.db.transaction(stall))
        await stalled.wait()
        # A bound on a hang, not a measurement: without the setting B waits forever.
        claim = await asyncio.wait_for(_claimed_when_free(b, "c1", "boot_b"), 15)
        assert claim.granted and claim.owner == "boot_b"
        stalling.cancel()
        with contextlib.suppress(asyncio.CancelledError, psycopg.Error):
            await stalling
    finally:
        await a.close()
        await b.close()


async def _claimed_when_free(store: Any, conversation: str, boot: str) -> Any:
    for _ in range(300):
        claim = await store.cluster.claim(conversation, boot, 30.0)
        if claim.granted:
            return claim
        await asyncio.sleep(0.05)  # the holder's 0.1 s lease running out
    raise AssertionError(f"never granted: held by {claim.owner}")
