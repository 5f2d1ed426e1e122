"""A point read a request waits for runs on the event loop when a SQLite reader is idle
(`Database.read(fn, inline=True)`), instead of two thread hand-offs (each a wake-up
that waits for a CPU on a loaded machine: the turn's start, `bench/gateway.py`); it
never waits for another connection there, and goes to the reader's thread when that
one is busy. The gateway's lookup of a conversation by id, on every turn's start, is
such a read. Checked by the thread each statement ran on, never by time."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from agentao.store.gateway import open_gateway_store
from agentao.store.gateway_records import Conversation
from agentao.store.sqlite import Database, Schema

SCHEMA = Schema("inline_read_test", ("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)",))


@pytest.fixture
def db(tmp_path: Path) -> Database:
    database = Database.open(tmp_path / "t.sqlite3", [SCHEMA], readers=1)
    database.call_sync(lambda c: c.execute("INSERT INTO t (id, v) VALUES (1, 'a')"))
    yield database
    database.close()


def lookup(ran_on: list[str]) -> object:
    def fn(conn: sqlite3.Connection) -> str:
        ran_on.append(threading.current_thread().name)
        return conn.execute("SELECT v FROM t WHERE id = 1").fetchone()[0]

    return fn


async def test_a_point_read_runs_on_the_event_loop_when_a_reader_is_idle(db: Database) -> None:
    ran_on: list[str] = []
    assert await db.read(lookup(ran_on), inline=True) == "a"
    assert ran_on == [threading.current_thread().name]


async def test_control_without_inline_it_runs_on_the_readers_thread(db: Database) -> None:
    ran_on: list[str] = []
    assert await db.read(lookup(ran_on)) == "a"
    assert ran_on == ["agentao-store-read0"]


async def test_a_point_read_behind_a_busy_reader_waits_its_turn_on_the_thread(
    db: Database,
) -> None:
    gate = threading.Event()
    first = asyncio.ensure_future(db.read(lambda _c: gate.wait(10)))
    await asyncio.sleep(0)  # the first read is queued on the reader
    ran_on: list[str] = []
    second = asyncio.ensure_future(db.read(lookup(ran_on), inline=True))
    await asyncio.sleep(0)
    assert ran_on == []  # not run on the loop past the busy reader
    gate.set()
    assert await second == "a" and await first is True
    assert ran_on == ["agentao-store-read0"]


async def test_a_point_read_sees_the_last_commit(db: Database) -> None:
    await db.transaction(lambda c: c.execute("UPDATE t SET v = 'b' WHERE id = 1"), inline=True)
    assert await db.read(lookup([]), inline=True) == "b"


async def test_the_gateway_finds_a_conversation_by_id_on_the_event_loop(tmp_path: Path) -> None:
    store = open_gateway_store(tmp_path / "gateway.sqlite3", readers=2)
    await store.create_conversation(Conversation("conv_1", "local", "agentao", "chat"))
    threads: list[str] = []

    def traced(sql: str) -> None:
        if sql.lstrip().startswith("SELECT * FROM gw_conversations WHERE id"):
            threads.append(threading.current_thread().name)

    store.db.trace(traced)
    found = await store.get_conversation("conv_1")
    store.db.close()
    assert found is not None and found.id == "conv_1"
    assert threads == [threading.current_thread().name]
