"""A small transaction is committed on the event loop when the SQLite writer is idle
(`Database.transaction(fn, inline=True)`), instead of two thread hand-offs; it never
waits for another connection's lock there, never overtakes a write queued before it,
and leaves the WAL's checkpoints to the writer's thread. Checked by the thread each
statement ran on, never by time."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from pathlib import Path

import pytest

import agentao.store.sqlite as sqlite_module
from agentao.store.sqlite import INLINE_CHECKPOINT_BYTES, Database, Schema

SCHEMA = Schema("inline_test", ("CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)",))


@pytest.fixture
def db(tmp_path: Path) -> Database:
    database = Database.open(tmp_path / "t.sqlite3", [SCHEMA], readers=1)
    yield database
    database.close()


def insert(value: bytes, ran_on: list[str]) -> object:
    def fn(conn: sqlite3.Connection) -> None:
        ran_on.append(threading.current_thread().name)
        conn.execute("INSERT INTO t (v) VALUES (?)", (value,))

    return fn


async def rows(db: Database) -> list[bytes]:
    found = await db.read(lambda c: c.execute("SELECT v FROM t ORDER BY id").fetchall())
    return [row[0] for row in found]


async def test_a_transaction_runs_on_the_event_loop_when_the_writer_is_idle(db: Database) -> None:
    ran_on: list[str] = []
    await db.transaction(insert(b"a", ran_on), inline=True)
    assert ran_on == [threading.current_thread().name]
    assert await rows(db) == [b"a"]  # committed: a reader sees it


async def test_control_without_inline_it_runs_on_the_writers_thread(db: Database) -> None:
    ran_on: list[str] = []
    await db.transaction(insert(b"a", ran_on))
    assert ran_on == ["agentao-store"]


async def test_a_transaction_behind_a_busy_writer_waits_its_turn_on_the_thread(
    db: Database,
) -> None:
    """Inline would overtake the write already queued: it goes to the thread, after it."""
    gate = threading.Event()
    ran_on: list[str] = []

    def first(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO t (v) VALUES (?)", (b"first",))
        gate.wait()

    busy = asyncio.ensure_future(db.transaction(first))
    await asyncio.sleep(0)  # submitted: the writer holds it
    second = asyncio.ensure_future(db.transaction(insert(b"second", ran_on), inline=True))
    await asyncio.sleep(0)
    assert not second.done()
    gate.set()
    await asyncio.gather(busy, second)
    assert ran_on == ["agentao-store"]
    assert await rows(db) == [b"first", b"second"]


async def test_a_lock_another_connection_holds_never_blocks_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inline, BEGIN IMMEDIATE would wait `busy_timeout` on the loop (here far longer than
    the holder keeps its lock: it lets go only once the loop ran on, or after a deadlock
    breaker, and the transaction would then run inline). Instead it goes to the writer's
    thread, which waits there while the loop runs on."""
    monkeypatch.setattr(sqlite_module, "BUSY_TIMEOUT_MS", 600_000)
    db = Database.open(tmp_path / "t.sqlite3", [SCHEMA], readers=1)
    other = sqlite3.connect(
        tmp_path / "t.sqlite3", isolation_level=None, timeout=60, check_same_thread=False
    )
    other.execute("BEGIN IMMEDIATE")
    loop_ran = threading.Event()

    def holder() -> None:
        loop_ran.wait(timeout=60)  # only a deadlock breaker: the loop sets it at once
        other.execute("COMMIT")
        other.close()

    releaser = threading.Thread(target=holder)
    releaser.start()
    ran_on: list[str] = []
    try:
        task = asyncio.ensure_future(db.transaction(insert(b"a", ran_on), inline=True))
        for _ in range(3):
            await asyncio.sleep(0)
        loop_ran.set()  # the loop was free while the lock was held
        await task
        assert ran_on == ["agentao-store"]
        assert await rows(db) == [b"a"]
    finally:
        loop_ran.set()
        await asyncio.to_thread(releaser.join)
        db.close()


async def test_inline_commits_leave_the_checkpoints_to_the_writers_thread(
    db: Database, tmp_path: Path
) -> None:
    """A checkpoint copies the WAL into the database and syncs it: never on the loop. The
    writer's thread checkpoints once `INLINE_CHECKPOINT_BYTES` were committed inline, so
    the WAL stays about that size however much is committed."""
    checkpoints: list[str] = []

    def traced(sql: str) -> None:
        if "wal_checkpoint" in sql:
            checkpoints.append(threading.current_thread().name)

    db.trace(traced)
    value = b"x" * (256 * 1024)
    commits = 4 * INLINE_CHECKPOINT_BYTES // len(value)
    ran_on: list[str] = []
    for _ in range(commits):
        await db.transaction(insert(value, ran_on), inline=True, size=len(value))
    await db.call(lambda _c: None)  # whatever the writer was given is done
    assert ran_on.count(threading.current_thread().name) > commits // 2
    assert checkpoints and set(checkpoints) == {"agentao-store"}
    wal = await asyncio.to_thread(os.path.getsize, f"{tmp_path / 't.sqlite3'}-wal")
    assert wal < INLINE_CHECKPOINT_BYTES + 4 * len(value)


async def test_a_failing_inline_transaction_is_rolled_back(db: Database) -> None:
    def fails(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO t (v) VALUES (?)", (b"lost",))
        raise ValueError("no")

    with pytest.raises(ValueError):
        await db.transaction(fails, inline=True)
    await db.transaction(insert(b"kept", []), inline=True)  # the connection is usable
    assert await rows(db) == [b"kept"]


async def test_inline_commits_in_a_row_set_the_connection_for_the_loop_once(db: Database) -> None:
    """Each inline commit used to turn the busy timeout and the automatic checkpoint off
    and back on: four statements per commit, as many as the commit's own. Now the
    connection is set for the loop once, and back for the writer's thread when it next
    runs something there."""
    pragmas: list[str] = []
    db.trace(lambda sql: pragmas.append(sql) if sql.startswith("PRAGMA") else None)
    ran_on: list[str] = []
    for i in range(10):
        await db.transaction(insert(b"%d" % i, ran_on), inline=True)
    assert ran_on == [threading.current_thread().name] * 10
    assert sorted(pragmas) == ["PRAGMA busy_timeout=0", "PRAGMA wal_autocheckpoint=0"]
    db.trace(None)

    def settings(conn: sqlite3.Connection) -> tuple[int, int]:
        timeout = conn.execute("PRAGMA busy_timeout").fetchone()[0]
        return timeout, conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]

    # The thread's job finds its busy timeout and SQLite's checkpoint back.
    assert await db.call(settings) == (sqlite_module.BUSY_TIMEOUT_MS, 1000)
