"""A remote connection's numbered messages (gateway/remote/clients.py): a reference to a
stored frame of a conversation's log is delivered ahead of its own row, in order, and a
stream opened before that row is stored still replays it.

Real parts: the gateway's SQLite store on a file, and a second SQLite connection that
holds the file's write lock (`BEGIN IMMEDIATE`), so the hub's writer cannot store the
reference row until the test lets it.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from agentao.gateway.acp_routes import _events
from agentao.gateway.auth import Principal
from agentao.gateway.config import Limits
from agentao.gateway.remote.bridge import V2Bridge
from agentao.gateway.remote.clients import RemoteClient, RemoteClients
from agentao.protocol.connection import Connection as Wire
from agentao.store.gateway import SqliteGatewayStore, open_gateway_store
from agentao.store.gateway_records import TaskEvent
from agentao.store.remote import RemoteMessage

pytestmark = pytest.mark.timeout(60)
GUARD_SECONDS = 3  # a hang guard, below the store's 5 s busy timeout (then the write fails)
SESSION = "sess_1"
KEEPALIVE = 60.0  # no keep-alive pings in these streams


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteGatewayStore]:
    # A reader connection: a stream reads the store while the writer is held up.
    opened = open_gateway_store(tmp_path / "gateway.sqlite3", readers=1)
    yield opened
    await opened.close()


@pytest.fixture
async def connection(store: SqliteGatewayStore) -> AsyncIterator[RemoteClient]:
    clients = RemoteClients(store.remote, store, Limits(), "boot_1")
    principal = Principal("local", None, "all", "all")
    opened = await clients.open(principal, "agentao", "ws", {}, Wire("agent"))
    yield opened
    await clients.close_all()
    clients.hub.close()


@contextmanager
def write_lock(path: Path) -> Iterator[None]:
    """Another connection holds the database's write lock: the hub's writer waits."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


def _frame(seq: int) -> TaskEvent:
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}
    return TaskEvent("task_1", seq, "task-running", 0.0, {"update": update})


async def _next(stream: AsyncIterator[RemoteMessage | None]) -> RemoteMessage:
    message = await asyncio.wait_for(anext(stream), GUARD_SECONDS)
    assert message is not None
    return message


async def _started(
    connection: RemoteClient, stream: AsyncIterator[RemoteMessage | None]
) -> asyncio.Future[RemoteMessage | None]:
    """The stream's first message, to come: its task's first step (one turn of the event
    loop, not a pause) registers the stream's reader."""
    first = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0)
    assert connection.readers, "the stream did not open"
    return first


async def _then(first: asyncio.Future[RemoteMessage | None]) -> RemoteMessage:
    message = await asyncio.wait_for(first, GUARD_SECONDS)
    assert message is not None
    return message


async def _stored(store: SqliteGatewayStore, connection: RemoteClient) -> list[int]:
    return [m.seq for m in await store.remote.messages_after(connection.id, 0, None)]


async def _sent_behind_the_lock(
    store: SqliteGatewayStore, connection: RemoteClient, tmp_path: Path
) -> tuple[AsyncIterator[RemoteMessage | None], RemoteMessage]:
    """A frame of the log sent while another connection holds the store's write lock: the
    session stream that read it, and the message, read before its row was stored."""
    stream = connection.stream(SESSION, None, KEEPALIVE)
    waiting = await _started(connection, stream)
    with write_lock(tmp_path / "gateway.sqlite3"):
        connection.send_logged("conv_1", _frame(7), SESSION)
        message = await _then(waiting)
        assert await _stored(store, connection) == []  # its row waits behind the lock
        assert connection.ahead  # kept for a stream opened meanwhile
    return stream, message


async def test_a_logged_update_reaches_its_reader_before_its_reference_row_is_stored(
    store: SqliteGatewayStore, connection: RemoteClient, tmp_path: Path
) -> None:
    stream, message = await _sent_behind_the_lock(store, connection, tmp_path)
    assert (message.seq, message.log_seq, message.scope) == (1, 7, SESSION)
    assert b'"agent_message_chunk"' in message.body
    await connection.hub.flush()
    assert await _stored(store, connection) == [1]  # and is stored once the lock goes
    assert connection.ahead == {}
    await stream.aclose()


async def test_a_stream_opened_before_the_row_is_stored_replays_the_update_sent_ahead(
    store: SqliteGatewayStore, connection: RemoteClient, tmp_path: Path
) -> None:
    with write_lock(tmp_path / "gateway.sqlite3"):
        connection.send_logged("conv_1", _frame(7), SESSION)
        # A client that reconnects now (`Last-Event-ID: 0`): its row is not in the store.
        resumed = connection.stream(SESSION, 0, KEEPALIVE)
        message = await _next(resumed)
        assert await _stored(store, connection) == []
    assert (message.seq, message.log_seq) == (1, 7)
    await connection.hub.flush()
    connection.send_logged("conv_1", _frame(8), SESSION)
    assert (await _next(resumed)).seq == 2  # then the live ones, nothing twice
    await resumed.aclose()


async def test_a_logged_update_waits_behind_an_earlier_message_not_yet_stored(
    store: SqliteGatewayStore, connection: RemoteClient, tmp_path: Path
) -> None:
    """A reply still in the writer's hands holds back the update after it: one
    connection's messages reach a reader in their order, every one of them."""
    every_scope = connection.stream(None, None, KEEPALIVE)
    first = await _started(connection, every_scope)
    with write_lock(tmp_path / "gateway.sqlite3"):
        connection.reply(3, {"stopReason": "end_turn"}, SESSION)
        connection.send_logged("conv_1", _frame(7), SESSION)  # not sent ahead of the reply
    got: list[Any] = [await _then(first), await _next(every_scope)]
    assert [m.seq for m in got] == [1, 2]
    assert got[1].log_seq == 7
    await every_scope.aclose()


async def test_a_message_reaches_a_waiting_stream_on_the_next_turn_of_the_event_loop(
    connection: RemoteClient,
) -> None:
    """The critical path of a remote turn's first token: a delivered message wakes its
    stream's reader at once (not through a task of its own per wait, as
    `asyncio.wait_for` did on Python 3.11: two more turns of the loop per message)."""
    stream = connection.stream(SESSION, None, KEEPALIVE)
    connection.send_logged("conv_1", _frame(7), SESSION)
    assert (await _next(stream)).log_seq == 7  # the stream has read the store: it is live
    waiting = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0)  # it waits for the next message
    connection.send_logged("conv_1", _frame(8), SESSION)  # delivered ahead, at once
    await asyncio.sleep(0)  # one turn of the event loop
    assert waiting.done(), "the stream needed more than one turn of the loop"
    assert (await _then(waiting)).log_seq == 8
    await stream.aclose()


async def test_a_quiet_stream_yields_a_keepalive_then_goes_on(connection: RemoteClient) -> None:
    stream = connection.stream(SESSION, None, 0.01)
    assert await asyncio.wait_for(anext(stream), GUARD_SECONDS) is None  # the ping
    connection.send_logged("conv_1", _frame(7), SESSION)
    assert (await _next(stream)).log_seq == 7  # and the stream lives on
    await stream.aclose()


# ---- a turn's reference rows: held, then written with the reply (one transaction) --------


@contextmanager
def transactions(store: SqliteGatewayStore) -> Iterator[list[str]]:
    """Every transaction the store's connections begin meanwhile."""
    begun: list[str] = []
    store.db.trace(lambda sql: begun.append(sql) if sql.startswith("BEGIN") else None)
    try:
        yield begun
    finally:
        store.db.trace(None)


async def _turn(connection: RemoteClient, stream: AsyncIterator[Any], updates: int) -> list[int]:
    """A turn as a prompter's stream sees it: `updates` logged updates, each read as it
    comes (the writer is free between them), then the prompt's reply; the seqs read."""
    seqs = []
    for log_seq in range(1, updates + 1):
        connection.send_logged("conv_1", _frame(log_seq), SESSION)
        seqs.append((await _next(stream)).seq)
    connection.reply(3, {"stopReason": "end_turn"}, SESSION)
    seqs.append((await _next(stream)).seq)
    return seqs


async def test_a_turns_reference_rows_are_stored_with_its_reply_in_one_transaction(
    store: SqliteGatewayStore, connection: RemoteClient
) -> None:
    stream = connection.stream(SESSION, None, KEEPALIVE)
    with transactions(store) as begun:
        seqs = await _turn(connection, stream, updates=10)
        await connection.hub.flush()
    assert seqs == list(range(1, 12))
    assert len(begun) == 1, begun  # not one per update: the rows wait for the reply's
    assert await _stored(store, connection) == list(range(1, 12))
    assert connection.ahead == {} and connection.hub.held == 0
    await stream.aclose()


async def test_past_remote_references_held_the_rows_are_written_without_a_reply(
    store: SqliteGatewayStore,
) -> None:
    """The control: the hold is bounded (a long turn, a watcher that never prompts)."""
    clients = RemoteClients(store.remote, store, Limits(remote_references_held=3), "boot_1")
    principal = Principal("local", None, "all", "all")
    connection = await clients.open(principal, "agentao", "ws", {}, Wire("agent"))
    stream = connection.stream(SESSION, None, KEEPALIVE)
    held = []
    for log_seq in range(1, 5):
        connection.send_logged("conv_1", _frame(log_seq), SESSION)
        held.append(clients.hub.held)
        await _next(stream)
    assert held == [1, 2, 0, 1]  # the third filled the hold: the three went to the writer
    await clients.hub.flush()
    assert await _stored(store, connection) == [1, 2, 3, 4]
    await stream.aclose()
    await clients.close_all()
    clients.hub.close()


async def test_a_stream_dropped_mid_turn_resumes_with_exactly_the_rest(
    store: SqliteGatewayStore, connection: RemoteClient
) -> None:
    """`Last-Event-ID` after a drop mid-turn: the updates sent while it was away (their
    rows held, not stored) and then the reply, each once, in order."""
    stream = connection.stream(SESSION, None, KEEPALIVE)
    for log_seq in range(1, 4):
        connection.send_logged("conv_1", _frame(log_seq), SESSION)
    got = [(await _next(stream)).seq for _ in range(3)]
    await stream.aclose()  # the client's stream drops, the turn goes on
    for log_seq in range(4, 7):
        connection.send_logged("conv_1", _frame(log_seq), SESSION)
    assert await _stored(store, connection) == []  # every row still held
    resumed = connection.stream(SESSION, got[-1], KEEPALIVE)  # Last-Event-ID: 3
    rest = [await _next(resumed) for _ in range(3)]
    connection.reply(3, {"stopReason": "end_turn"}, SESSION)
    rest.append(await _next(resumed))
    assert got == [1, 2, 3]
    assert [m.seq for m in rest] == [4, 5, 6, 7]
    assert [m.log_seq for m in rest[:3]] == [4, 5, 6] and b'"end_turn"' in rest[3].body
    await connection.hub.flush()
    assert await _stored(store, connection) == list(range(1, 8))  # each row once
    await resumed.aclose()


async def test_a_burst_delivered_together_leaves_in_one_write_of_the_stream(
    connection: RemoteClient,
) -> None:
    """A turn's updates stored in one batch reach a waiting SSE stream as one chunk (one
    write, one send(2)), each still its own numbered event; then the stream goes on."""
    events = _events(connection, SESSION, None, KEEPALIVE)
    waiting = asyncio.ensure_future(anext(events))
    await asyncio.sleep(0)  # the stream has read the store, and waits
    for log_seq in (7, 8, 9):
        connection.send_logged("conv_1", _frame(log_seq), SESSION)
    chunk = await asyncio.wait_for(waiting, GUARD_SECONDS)
    assert re.findall(rb"^id: (\d+)$", chunk, re.M) == [b"1", b"2", b"3"]
    assert chunk.count(b"data: ") == 3 and chunk.endswith(b"\n\n")
    connection.send_logged("conv_1", _frame(10), SESSION)
    later = await asyncio.wait_for(anext(events), GUARD_SECONDS)
    assert re.findall(rb"^id: (\d+)$", later, re.M) == [b"4"]
    await events.aclose()
    assert not connection.readers  # the stream's reader went with it


async def test_a_v2_clients_translation_of_a_stored_frame_is_not_held_back_by_its_row(
    store: SqliteGatewayStore, connection: RemoteClient, tmp_path: Path
) -> None:
    """Through the v2 bridge an update is sent as translated, and stored whole; made of a
    frame the log stored already, it reaches the reader before its row is stored, as a
    reference does, and a resume still finds it (in the store once the lock goes)."""
    connection.bridge = V2Bridge()
    stream, message = await _sent_behind_the_lock(store, connection, tmp_path)
    update = json.loads(message.body)["params"]["update"]
    assert update["sessionUpdate"] == "agent_message_chunk" and message.log_conversation is None
    await connection.hub.flush()
    assert await _stored(store, connection) == [message.seq]
    resumed = connection.stream(SESSION, 0, KEEPALIVE)
    assert (await _next(resumed)).body == message.body  # the row holds it whole
    await stream.aclose()
    await resumed.aclose()
