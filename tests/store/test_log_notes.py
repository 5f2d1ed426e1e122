"""Frames of no task in a conversation's log (`LogNote`: what the agent sent while no turn
ran), on a real SQLite file and a real PostgreSQL database: stored in the log's order,
never a task's, deleted with their conversation, fenced by the lease on a shared store,
and the SQLite stores of before migrated with their frames kept."""

from __future__ import annotations

import psycopg
import pytest

from agentao.store.gateway import GATEWAY_SCHEMA, GatewayStore, open_gateway_store, open_store
from agentao.store.gateway_records import (
    NO_TASK,
    Conversation,
    LogNote,
    TaskEvent,
    TaskRecord,
)
from agentao.store.postgres import PG_GATEWAY_SCHEMA, LogNotHeld
from agentao.store.postgres_db import migrate
from agentao.store.sqlite import Database, Schema

LEASE_SECONDS = 30.0
MODE = {"update": {"sessionUpdate": "current_mode_update", "currentModeId": "plan"}}
NEW_MIGRATIONS_SQLITE = 5  # the rebuild of gw_log_frames with a nullable task_id
NEW_MIGRATIONS_PG = 1  # ALTER COLUMN task_id DROP NOT NULL


def _note(conversation_id: str, seq: int, boot_id: str = "boot_a") -> LogNote:
    return LogNote(conversation_id, boot_id, TaskEvent(NO_TASK, seq, "session-update", 1.0, MODE))


async def _two_turns_and_a_note_between(store: GatewayStore) -> None:
    """c1: task t1 (seqs 1, 2), a note (3), task t2 (4); c2: one task of its own."""
    await store.create_conversation(Conversation("c1", "local", "agentao", "acp"))
    await store.create_conversation(Conversation("c2", "local", "agentao", "acp"))
    assert (await store.cluster.claim("c1", "boot_a", LEASE_SECONDS)).granted
    t1, t2 = TaskRecord("t1", "c1", "running"), TaskRecord("t2", "c1", "running")
    t1.boot_id = t2.boot_id = "boot_a"
    first = [TaskEvent("t1", 1, "task-started", 1.0), TaskEvent("t1", 2, "task-ended", 1.0)]
    await store.append_events(first, tasks=[t1], notes=[_note("c1", 3)])
    other = TaskRecord("t9", "c2", "running")
    other.boot_id = "boot_a"
    await store.append_events([TaskEvent("t9", 1, "task-started", 1.0)], tasks=[other])
    await store.append_events([TaskEvent("t2", 4, "task-started", 1.0)], tasks=[t2])


async def test_a_note_is_a_frame_of_the_log_and_of_no_task(store: GatewayStore) -> None:
    await _two_turns_and_a_note_between(store)
    log = await store.events_after("c1", 0)
    assert [(e.task_id, e.seq, e.type) for e in log] == [
        ("t1", 1, "task-started"),
        ("t1", 2, "task-ended"),
        (NO_TASK, 3, "session-update"),
        ("t2", 4, "task-started"),
    ]
    assert log[2].payload == MODE
    assert await store.last_seq("c1") == 4  # the next turn numbers on after it
    assert [e.seq for e in await store.events_after("c1", 2)] == [3, 4]  # resumable by seq
    # A task's own frames never include it (the task stream of t1 or t2).
    assert [e.seq for e in await store.task_events("t1", 0)] == [1, 2]
    assert [e.seq for e in await store.task_events("t2", 0)] == [4]
    assert await store.task_events(NO_TASK, 0) == []


async def test_a_note_between_a_task_s_frames_in_one_batch_is_read_in_order(
    store: GatewayStore,
) -> None:
    """One batch: a task's frames 1 and 3, a note 2 between them (the agent's update
    after the prompt's answer, before the gateway's `task-ended`): read back 1, 2, 3."""
    await store.create_conversation(Conversation("c1", "local", "agentao", "acp"))
    assert (await store.cluster.claim("c1", "boot_a", LEASE_SECONDS)).granted
    task = TaskRecord("t1", "c1", "running")
    task.boot_id = "boot_a"
    frames = [TaskEvent("t1", 1, "task-started", 1.0), TaskEvent("t1", 3, "task-ended", 1.0)]
    await store.append_events(frames, tasks=[task], notes=[_note("c1", 2)])
    assert [(e.task_id, e.seq) for e in await store.events_after("c1", 0)] == [
        ("t1", 1),
        (NO_TASK, 2),
        ("t1", 3),
    ]


async def test_deleting_a_conversation_deletes_its_notes(store: GatewayStore) -> None:
    await _two_turns_and_a_note_between(store)
    assert await store.delete_conversation("c1")
    assert await store.events_after("c1", 0) == []
    assert [e.task_id for e in await store.events_after("c2", 0)] == ["t9"]  # control


async def test_a_note_of_an_unknown_conversation_is_refused(store: GatewayStore) -> None:
    with pytest.raises(Exception):  # noqa: B017 (the driver's integrity error, or LogNotHeld)
        await store.append_events([], notes=[_note("c_gone", 1)])


async def test_a_replica_that_does_not_hold_the_lease_cannot_append_a_note(pg_url: str) -> None:
    """The lease fence covers notes: the holder appends one; a replica that lost the
    lease (another claimed it) or never held it cannot, and nothing of its batch is
    stored."""
    store = open_store(pg_url)
    try:
        await store.create_conversation(Conversation("c1", "local", "agentao", "acp"))
        assert (await store.cluster.claim("c1", "boot_a", LEASE_SECONDS)).granted
        await store.append_events([], notes=[_note("c1", 1, "boot_a")])  # control: held
        with pytest.raises(LogNotHeld):  # never held it
            await store.append_events([], notes=[_note("c1", 2, "boot_b")])
        await store.cluster.release("c1", "boot_a")
        assert (await store.cluster.claim("c1", "boot_b", LEASE_SECONDS)).granted
        with pytest.raises(LogNotHeld):  # lost it to boot_b
            await store.append_events([], notes=[_note("c1", 2, "boot_a")])
        await store.append_events([], notes=[_note("c1", 2, "boot_b")])
        log = await store.events_after("c1", 0)
        assert [e.seq for e in log] == [1, 2]
    finally:
        await store.close()


async def test_a_sqlite_store_of_before_keeps_its_frames_and_takes_notes(tmp_path) -> None:
    path = tmp_path / "before.sqlite3"
    before = Schema("gateway", GATEWAY_SCHEMA.migrations[:-NEW_MIGRATIONS_SQLITE])
    assert "gw_log_frames_by_task" in before.migrations[-1]  # the one log, task NOT NULL
    db = Database.open(path, [before])
    db.call_sync(
        lambda c: c.executescript(
            "INSERT INTO gw_conversations (id, owner, agent, source, created_at, updated_at) "
            "VALUES ('c1', 'local', 'agentao', 'acp', 1, 1);"
            "INSERT INTO gw_tasks (id, conversation_id, status, created_at) "
            "VALUES ('t1', 'c1', 'ended', 1);"
            "INSERT INTO gw_log_frames VALUES ('c1', 1, 2, 't1', "
            """'[["t1",1,"task-started",1.5,{}],"""
            """["t1",2,"task-ended",2.5,{"stopReason":"end_turn"}]]');"""
        )
    )
    db.close()
    store = open_gateway_store(path)
    try:
        assert await store.events_after("c1", 0) == [
            TaskEvent("t1", 1, "task-started", 1.5, {}),
            TaskEvent("t1", 2, "task-ended", 2.5, {"stopReason": "end_turn"}),
        ]
        await store.append_events([], notes=[_note("c1", 3)])
        assert [(e.task_id, e.seq) for e in await store.events_after("c1", 0)] == [
            ("t1", 1),
            ("t1", 2),
            (NO_TASK, 3),
        ]
        assert [e.seq for e in await store.task_events("t1", 0)] == [1, 2]  # its index
        assert await store.delete_conversation("c1")
        assert await store.events_after("c1", 0) == []
    finally:
        await store.close()


async def test_a_postgres_store_of_before_keeps_its_frames_and_takes_notes(pg_url: str) -> None:
    before = Schema("gateway", PG_GATEWAY_SCHEMA.migrations[:-NEW_MIGRATIONS_PG])
    with psycopg.connect(pg_url) as conn:
        migrate(conn, [before])
        conn.execute(
            "INSERT INTO gw_conversations (id, owner, agent, source, created_at, updated_at) "
            "VALUES ('c1', 'local', 'agentao', 'acp', 1, 1)"
        )
        conn.execute(
            "INSERT INTO gw_tasks (id, conversation_id, status, created_at) "
            "VALUES ('t1', 'c1', 'ended', 1)"
        )
        conn.execute(
            "INSERT INTO gw_log_frames VALUES ('c1', 1, 1, 't1', %s)",
            (b'[["t1",1,"task-started",1.5,{}]]',),
        )
    store = open_store(pg_url)
    try:
        assert await store.events_after("c1", 0) == [TaskEvent("t1", 1, "task-started", 1.5)]
        assert (await store.cluster.claim("c1", "boot_a", LEASE_SECONDS)).granted
        await store.append_events([], notes=[_note("c1", 2)])
        assert [(e.task_id, e.seq) for e in await store.events_after("c1", 0)] == [
            ("t1", 1),
            (NO_TASK, 2),
        ]
    finally:
        await store.close()
