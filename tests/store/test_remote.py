"""Remote ACP connections and their messages, on SQLite and on PostgreSQL (see conftest)."""

from __future__ import annotations

from agentao.store.remote import RemoteConnection, RemoteMessage


async def test_messages_are_numbered_per_connection_and_replayed_by_stream(store) -> None:
    remote = store.remote
    for cid in ("a", "b"):
        await remote.put_connection(
            RemoteConnection(cid, "alice", "agentao", "ws", {"fs": {"readTextFile": True}}, "boot")
        )
    assert (await remote.get_connection("a")).capabilities == {"fs": {"readTextFile": True}}
    assert await remote.get_connection("zzz") is None
    assert await remote.last_seq("a") == 0
    sent = [RemoteMessage("a", n, "" if n == 1 else "s1", b'{"n":%d}' % n) for n in (1, 2, 3)]
    await remote.append_messages(sent, seen=[("a", 50.0)])
    await remote.append_messages([RemoteMessage("b", 1, "", b"{}")])  # b counts from 1 too
    assert await remote.last_seq("a") == 3 and await remote.last_seq("b") == 1
    assert await remote.messages_after("a", 0, None) == sent
    assert [m.seq for m in await remote.messages_after("a", 1, "s1")] == [2, 3]
    assert [m.seq for m in await remote.messages_after("a", 0, "")] == [1]
    assert (await remote.get_connection("a")).seen_at == 50.0


async def test_idle_connections_and_deleting_one_drops_its_messages(store) -> None:
    remote = store.remote
    await remote.put_connection(RemoteConnection("old", "alice", "agentao", "http", seen_at=1.0))
    await remote.put_connection(RemoteConnection("new", "alice", "agentao", "http", seen_at=9.0))
    await remote.append_messages([RemoteMessage("old", 1, "", b"{}")])
    assert await remote.idle_connections(5.0) == ["old"]
    await remote.delete_connection("old")
    assert await remote.get_connection("old") is None
    assert await remote.messages_after("old", 0, None) == []
    assert await remote.idle_connections(5.0) == []
