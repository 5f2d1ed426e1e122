"""What only the PostgreSQL session store has to show: it shares a database with the
gateway's tables and with other agent processes, and says where it failed to connect."""

from __future__ import annotations

import asyncio
import socket

import psycopg
import pytest

from agentao.store.gateway import open_store
from agentao.store.postgres_sessions import open_postgres_session_store
from agentao.store.session_target import OpenedOnFirstUse, agent_store_url, open_agent_sessions
from agentao.store.sessions import SessionRecord, SqliteSessionStore, StoreSettings, TurnRecord
from agentao.store.target import StoreUnavailable


async def test_beside_the_gateway_tables_in_one_database(pg_url):
    gateway = open_store(pg_url)
    sessions = open_postgres_session_store(pg_url)
    again = open_postgres_session_store(pg_url)  # a second process: nothing left to migrate
    try:
        await sessions.create(SessionRecord("s1", "/w"))
        assert (await again.get("s1")).cwd == "/w"
    finally:
        await sessions.close()
        await again.close()
        await gateway.close()
    with psycopg.connect(pg_url) as conn:
        versions = dict(conn.execute("SELECT name, version FROM schema_versions").fetchall())
    assert versions["agent_sessions"] == 3 and versions["gateway"] >= 1


async def test_two_processes_commit_to_one_session_in_turn(pg_url):
    """Two stores (as two agent processes would) commit at once: the row lock orders them,
    so every turn gets its own number and none is lost."""
    one, two = open_postgres_session_store(pg_url), open_postgres_session_store(pg_url)
    try:
        await one.create(SessionRecord("s1", "/w"))
        commits = [
            store.commit_turn("s1", TurnRecord({"n": n}, "end_turn", 1.0 + n), {"last": n})
            for n in range(10)
            for store in [(one, two)[n % 2]]
        ]
        await asyncio.gather(*commits)
        assert sorted(t.data["n"] for t in await two.turns("s1")) == list(range(10))
        assert (await one.get("s1")).turn_count == 10
    finally:
        await one.close()
        await two.close()


def unreachable_url() -> str:
    """A URL with a password, on a loopback port no server listens on (refused at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"postgresql://agent:s3cret-pw@127.0.0.1:{port}/sessions_db"


def test_unreachable_names_host_and_database_not_password():
    url = unreachable_url()
    with pytest.raises(StoreUnavailable) as caught:
        open_postgres_session_store(url, StoreSettings(connect_seconds=2))
    assert "127.0.0.1:" in str(caught.value) and "/sessions_db" in str(caught.value)
    assert "s3cret-pw" not in str(caught.value)
    assert caught.value.where and caught.value.where.endswith("/sessions_db")


async def test_opened_on_first_use_tries_again_after_a_failure(pg_url):
    attempts: list[str] = []
    urls = iter([unreachable_url(), pg_url])

    def opener():
        url = next(urls)
        attempts.append(url)
        return open_postgres_session_store(url, StoreSettings(connect_seconds=2))

    store = OpenedOnFirstUse(opener, StoreSettings())
    with pytest.raises(StoreUnavailable):
        await store.get("s1")
    await store.create(SessionRecord("s1", "/w"))  # the database is there now
    assert (await store.get("s1")).cwd == "/w" and len(attempts) == 2
    await store.close()


async def test_selection_by_the_environment(tmp_path, pg_url):
    assert agent_store_url({}) is None
    assert agent_store_url({"AGENTAO_STORE_URL": str(tmp_path / "x.sqlite3")}) is None
    assert agent_store_url({"AGENTAO_STORE_URL": pg_url}) == pg_url
    local = open_agent_sessions({"AGENTAO_HOME": str(tmp_path)}, StoreSettings())
    assert isinstance(local, SqliteSessionStore)
    await local.close()
    shared = open_agent_sessions({"AGENTAO_STORE_URL": pg_url}, StoreSettings())
    assert isinstance(shared, OpenedOnFirstUse)
    await shared.create(SessionRecord("s1", "/w"))
    assert (await shared.latest()) is None  # no turn yet
    await shared.close()
