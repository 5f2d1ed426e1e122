"""The agent's session store on each backend: every test taking `store` or `open_store`
runs on a real SQLite file and on a real PostgreSQL server (a database of its own)."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable

import pytest

from agentao.store.postgres_sessions import PostgresSessionStore, open_postgres_session_store
from agentao.store.sessions import (
    SESSIONS_SCHEMA,
    SessionRecord,
    SessionStore,
    SqliteSessionStore,
    StoreSettings,
    TurnRecord,
    open_session_store,
)
from agentao.store.sqlite import Database, Schema
from agentao.store.target import is_postgres_url

Opener = Callable[..., SessionStore]


@pytest.fixture
async def open_store(store_target: str) -> AsyncIterator[Opener]:
    """Opens session stores on this test's backend (with given settings); closes them after."""
    opened: list[SessionStore] = []

    def open_(settings: StoreSettings | None = None) -> SessionStore:
        if is_postgres_url(store_target):
            s: SessionStore = open_postgres_session_store(store_target, settings)
        else:
            s = open_session_store(store_target, settings)
        opened.append(s)
        return s

    yield open_
    for s in opened:
        await s.close()


@pytest.fixture
def store(open_store: Opener) -> SessionStore:
    return open_store()


async def count_turns(store: SessionStore) -> int:
    if isinstance(store, PostgresSessionStore):
        row = await store.db.fetchone("SELECT count(*) AS n FROM agent_turns")
        return row["n"] if row else 0
    assert isinstance(store, SqliteSessionStore)
    return await store.db.call(lambda c: c.execute("SELECT count(*) FROM turns").fetchone()[0])


def turn(n: int, stop: str | None = "end_turn") -> TurnRecord:
    return TurnRecord({"events": [{"text": f"t{n}"}], "messages": [f"m{n}"]}, stop, 100.0 + n)


async def test_create_get_and_turns_in_order(store):
    await store.create(SessionRecord("s1", "/w", ["/x"]))
    for n in range(3):
        await store.commit_turn("s1", turn(n), {"mode": f"m{n}"}, title=f"first prompt {n}")
    record = await store.get("s1")
    assert record.cwd == "/w" and record.additional_directories == ["/x"]
    assert record.turn_count == 3 and record.state == {"mode": "m2"}
    assert record.title == "first prompt 0"  # the first turn names the session
    turns = await store.turns("s1")
    assert [t.data["events"][0]["text"] for t in turns] == ["t0", "t1", "t2"]
    assert turns[1].data["messages"] == ["m1"] and turns[1].ended_at == 101.0


async def test_unknown_session(store):
    assert await store.get("nope") is None
    assert await store.turns("nope") == []
    with pytest.raises(KeyError):
        await store.commit_turn("nope", turn(0), {})
    assert await store.delete("nope") is False


async def test_failed_turn_is_kept_with_no_stop_reason(store):
    await store.create(SessionRecord("s1", "/w"))
    await store.commit_turn("s1", turn(0, stop=None), {})
    assert (await store.turns("s1"))[0].stop_reason is None


async def test_failed_commit_leaves_nothing(store):
    await store.create(SessionRecord("s1", "/w"))
    bad = TurnRecord([object()], "end_turn")  # not JSON-encodable
    with pytest.raises(TypeError):
        await store.commit_turn("s1", bad, {"mode": "x"})
    record = await store.get("s1")
    assert record.turn_count == 0 and record.state == {}


async def test_page_latest_delete(open_store):
    store = open_store(StoreSettings(2))
    for i in range(5):
        await store.create(SessionRecord(f"s{i}", "/a" if i % 2 else "/b", updated_at=100.0 + i))
    page, cursor = await store.page()
    assert [r.id for r in page] == ["s4", "s3"] and cursor == "2"
    page, cursor = await store.page(cursor=cursor)
    assert [r.id for r in page] == ["s2", "s1"]
    page, cursor = await store.page(cursor=cursor)
    assert [r.id for r in page] == ["s0"] and cursor is None
    page, _ = await store.page(cwd="/a")
    assert [r.id for r in page] == ["s3", "s1"]
    assert await store.latest() is None  # no session has a turn yet
    await store.commit_turn("s1", turn(7), {})
    assert (await store.latest()).id == "s1"
    assert await store.delete("s1") is True
    assert await store.latest() is None
    assert await count_turns(store) == 0  # the session's turns went with it


async def test_many_sessions_no_cap(store):
    for i in range(150):
        await store.create(SessionRecord(f"s{i:03}", "/w", updated_at=float(i)))
    seen, cursor = [], None
    while True:
        page, cursor = await store.page(cursor=cursor)
        seen += page
        if cursor is None:
            break
    assert len(seen) == 150


def test_schema_migrations_are_incremental(tmp_path):
    path = tmp_path / "db"
    one = Schema("gateway", ("CREATE TABLE g (x INTEGER)",))
    Database.open(path, [SESSIONS_SCHEMA, one]).close()
    two = Schema("gateway", (*one.migrations, "ALTER TABLE g ADD COLUMN y TEXT"))
    db = Database.open(path, [SESSIONS_SCHEMA, two])
    versions = dict(db.call_sync(lambda c: c.execute("SELECT * FROM schema_versions").fetchall()))
    assert versions == {"sessions": 3, "gateway": 2}
    db.call_sync(lambda c: c.execute("INSERT INTO g (x, y) VALUES (1, 'a')"))
    db.close()
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_ties_break_by_id_in_byte_order(open_store):
    store = open_store(StoreSettings(2))
    for sid in ("b", "B", "a", "_"):  # byte order: "B" < "_" < "a" < "b"
        await store.create(SessionRecord(sid, "/w", updated_at=5.0))
    first, cursor = await store.page()
    second, _ = await store.page(cursor=cursor)
    assert [r.id for r in first + second] == ["B", "_", "a", "b"]


async def test_save_state_and_payloads_round_trip(store):
    await store.create(SessionRecord("s1", "/w", ["/ü"], state={"z": 1, "a": [None, 1.5]}))
    await store.save_state("s1", {"mode": "plan", "meta": {"k": "ü\\n"}})
    record = await store.get("s1")
    assert record.state == {"mode": "plan", "meta": {"k": "ü\\n"}}
    assert record.additional_directories == ["/ü"] and record.updated_at > 0
    await store.commit_turn("s1", turn(0), record.state, title="x" * 500)
    assert (await store.get("s1")).title == "x" * StoreSettings().title_chars


async def test_a_title_set_is_kept_over_later_turns_and_cut_to_title_chars(open_store):
    store = open_store(StoreSettings(title_chars=8))
    await store.create(SessionRecord("s1", "/w"))
    await store.commit_turn("s1", turn(0), {}, title="first prompt")
    assert await store.set_title("s1", "chosen by a person") is True
    await store.commit_turn("s1", turn(1), {}, title="another prompt")
    assert (await store.get("s1")).title == "chosen b"  # the person's, cut; never replaced
    assert await store.set_title("nope", "x") is False


async def test_truncate_turns_drops_the_later_turns_and_numbers_on_from_there(store):
    """A rewound conversation (server/rewind.py): the turns from `keep` on are gone, with
    the state, and the next commit is numbered after the kept ones."""
    await store.create(SessionRecord("s1", "/w", []))
    await store.create(SessionRecord("s2", "/w", []))
    for n in range(4):
        await store.commit_turn("s1", turn(n), {"mode": f"m{n}"})
    await store.commit_turn("s2", turn(9), {})
    await store.truncate_turns("s1", 1, {"mode": "back"})
    await store.commit_turn("s1", turn(5), {"mode": "again"})
    record = await store.get("s1")
    assert [t.data["events"][0]["text"] for t in await store.turns("s1")] == ["t0", "t5"]
    assert record.turn_count == 2 and record.state == {"mode": "again"}
    assert len(await store.turns("s2")) == 1  # another session's turns untouched
    await store.truncate_turns("nope", 0, {})  # an unknown session: nothing happens
