"""Stored before sent, under failure: a frame no store holds never reaches a reader.

The store fails mid-turn for real: a SQLite store made read-only under its writer
(`PRAGMA query_only`, which refuses every write as a read-only file does, even to
root), or a real PostgreSQL server stopped with `pg_ctl -m immediate`. Every reader
of the turn -- the task stream WebSocket, the Chat Completions stream, a remote ACP
client -- gets an error with code `store_failed`, and nothing that was not stored.
The writer itself is supervised: a batch whose write raises is failed to its waiters
and later batches flow.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import websockets
from websockets.sync.client import connect

from agentao.gateway.auth import POLICY_HEADER
from agentao.gateway.batches import WriterBackoff
from agentao.gateway.config import Limits
from agentao.gateway.tasklog import STORE_FAILED, TaskHub, wire_frame
from agentao.store.gateway import SqliteGatewayStore, open_gateway_store
from agentao.store.gateway_records import Conversation, TaskEvent, TaskRecord
from tests.conftest import postgres_bindir
from tests.gateway.conftest import LiveGateway
from tests.postgres import PostgresServer

pytestmark = pytest.mark.timeout(120)
GUARD_SECONDS = 20  # how long a test waits for an event before calling it lost (a hang guard)
READ_ONLY = (
    "PRAGMA query_only = 1"  # every later write fails: "attempt to write a readonly database"
)


# ---- the hub and its writer, on a real SQLite store ------------------------------------------


@pytest.fixture
async def store(tmp_path: Path) -> Any:
    opened = open_gateway_store(tmp_path / "gateway.sqlite3")
    for conversation_id in ("conv_1", "conv_2"):
        await opened.create_conversation(Conversation(conversation_id, "local", "agentao", "task"))
    yield opened
    await opened.close()


async def _next(queue: asyncio.Queue[TaskEvent]) -> TaskEvent:
    return await asyncio.wait_for(queue.get(), GUARD_SECONDS)


async def _open_task(
    hub: TaskHub, task_id: str, conversation_id: str = "conv_1"
) -> tuple[Any, asyncio.Queue[TaskEvent]]:
    task_log = await hub.open(TaskRecord(task_id, conversation_id, "running"))
    watcher = task_log.subscribe()
    await asyncio.wait_for(task_log.stored.wait(), GUARD_SECONDS)
    return task_log, watcher


async def test_a_frame_the_store_refused_is_never_delivered(store: SqliteGatewayStore) -> None:
    hub = TaskHub(store, "boot_1", backoff=WriterBackoff(0, 0))
    task_log, watcher = await _open_task(hub, "task_a")
    task_log.emit("task-running", {"update": {"n": 1}})
    await hub.flush()
    assert (await _next(watcher)).seq == 1  # control: a stored frame is delivered

    await store.db.call(lambda c: c.execute(READ_ONLY))
    task_log.emit("task-running", {"update": {"n": 2}, "secret": "never-stored"})
    got = await _next(watcher)
    assert got.type == "task-error" and got.payload["error"]["code"] == STORE_FAILED
    assert "readonly" in got.payload["error"]["message"]
    assert "seq" not in wire_frame(got)  # not part of the log: no number to resume from
    assert task_log.failed.is_set()
    # The task takes nothing more, and what the store holds is what the watcher had.
    task_log.emit("task-running", {"update": {"n": 3}})
    await hub.flush()
    assert watcher.empty()
    assert [e.seq for e in await store.task_events("task_a", 0)] == [1]
    hub.close()


async def test_frames_queued_behind_a_refused_batch_are_not_stored(
    store: SqliteGatewayStore,
) -> None:
    """A batch of a task is refused while the task's next frame waits for the next batch:
    that frame is not stored either (stored, it would number on past a gap)."""
    hub = TaskHub(store, "boot_1", backoff=WriterBackoff(0, 0))
    task_log, watcher = await _open_task(hub, "task_a")
    task_log.emit("task-running", {"update": {"n": 1}})
    await hub.flush()
    writing, refuse = asyncio.Event(), asyncio.Event()
    append = store.append_events

    async def refused_once(*args: Any, **kwargs: Any) -> None:
        store.append_events = append  # type: ignore[method-assign]
        writing.set()
        await refuse.wait()
        raise RuntimeError("the store refused this batch")

    store.append_events = refused_once  # type: ignore[method-assign]
    task_log.emit("task-running", {"update": {"n": 2}})
    await asyncio.wait_for(writing.wait(), GUARD_SECONDS)
    task_log.emit("task-running", {"update": {"n": 3}})  # queued behind the batch of 2
    refuse.set()
    assert (await _next(watcher)).seq == 1
    assert (await _next(watcher)).payload["error"]["code"] == STORE_FAILED
    await hub.flush()
    assert [e.seq for e in await store.task_events("task_a", 0)] == [1]
    hub.close()


async def test_a_writer_whose_batch_raises_logs_it_and_writes_the_next(
    store: SqliteGatewayStore, caplog: pytest.LogCaptureFixture
) -> None:
    calls = 0

    async def wake_other_replicas(_stored: list[tuple[str, str]]) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:  # an unexpected bug, once, inside the writer's task
            raise RuntimeError("boom in the writer")

    hub = TaskHub(store, "boot_1", wake_other_replicas, WriterBackoff(0.01, 0.01))
    with caplog.at_level(logging.ERROR, logger="agentao.gateway"):
        first, first_watcher = await _open_task(hub, "task_a")
        first.emit("task-running", {"update": {"n": 1}})
        assert (await _next(first_watcher)).seq == 1  # stored: the raise came after
        failed = await _next(first_watcher)  # the batch it held is failed to its waiters
        assert failed.type == "task-error" and failed.payload["error"]["code"] == STORE_FAILED
        assert "RuntimeError: boom in the writer" in failed.payload["error"]["message"]

        # The writer lives on (a task of another conversation: its log starts at 1).
        second, second_watcher = await _open_task(hub, "task_b", "conv_2")
        second.emit("task-running", {"update": {"n": 1}})
        second.emit("task-ended", {"stopReason": "end_turn"})
        assert [(await _next(second_watcher)).seq for _ in range(2)] == [1, 2]
    logged = [r for r in caplog.records if "store writer failed a batch" in r.getMessage()]
    assert logged and logged[0].exc_info is not None  # with its traceback
    hub.close()


def test_the_back_off_doubles_up_to_its_limit() -> None:
    backoff = WriterBackoff.of(Limits(writer_backoff_seconds=0.1, max_writer_backoff_seconds=0.3))
    assert [backoff.after(n) for n in (1, 2, 3, 4)] == [0.1, 0.2, 0.3, 0.3]


# ---- a real gateway whose store fails mid-turn ------------------------------------------------


@dataclass
class BreakableStore:
    target: str  # a SQLite file or a PostgreSQL URL
    kind: str
    halt: Callable[[LiveGateway], None]
    mend: Callable[[LiveGateway], None]  # the store takes writes again


def _sqlite_read_only(gw: LiveGateway) -> None:
    gw.run(gw.gateway.store.db.call(lambda c: c.execute(READ_ONLY)))


def _sqlite_writable(gw: LiveGateway) -> None:
    gw.run(gw.gateway.store.db.call(lambda c: c.execute("PRAGMA query_only = 0")))


@pytest.fixture(params=["sqlite", "postgres"])
def breakable(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BreakableStore]:
    if request.param == "sqlite":
        target = str(tmp_path / "gateway.sqlite3")
        yield BreakableStore(target, "sqlite", _sqlite_read_only, _sqlite_writable)
        return
    server = PostgresServer.start(postgres_bindir())  # a cluster of its own: this test stops it
    try:
        yield BreakableStore(
            server.create_database(),
            "postgres",
            lambda _gw: server.halt(),
            lambda _gw: server.restart(),
        )
    finally:
        server.stop()


def _failing_gateway(gateway_factory: Any, breakable: BreakableStore) -> LiveGateway:
    # A stopped PostgreSQL refuses connections at once; the bound keeps shutdown short.
    return gateway_factory(store=breakable.target, limits=Limits(store_connect_seconds=0.5))


def test_every_reader_of_a_turn_gets_the_store_failure_and_nothing_unstored(
    gateway_factory: Any, breakable: BreakableStore
) -> None:
    gw = _failing_gateway(gateway_factory, breakable)
    body = {
        "model": "agentao",
        "stream": True,
        "messages": [{"role": "user", "content": "write the file"}],
    }
    with (
        gw.http() as http,
        http.stream(
            "POST", "/v1/chat/completions", json=body, headers={POLICY_HEADER: "ask"}
        ) as chat,
    ):
        assert chat.status_code == 200
        task_id = chat.headers["x-task-id"]
        with connect(gw.ws_url(f"/v1/tasks/{task_id}/stream")) as ws:
            frames = _watch_and_approve(ws, lambda: breakable.halt(gw))
        chat_events = [line[6:] for line in chat.iter_lines() if line.startswith("data: ")]

    # The task stream: the stored frames, then the failure with no seq, then the end.
    *stored, last = [f for f in frames if f["type"] != "ping"]
    assert last["type"] == "task-error" and last["error"]["code"] == STORE_FAILED
    assert "seq" not in last
    assert [f["type"] for f in stored][-1] == "permission-request"  # the answer was not stored
    assert all("seq" in f for f in stored)
    if breakable.kind == "sqlite":  # still readable: what was sent is what is stored
        in_store = gw.run(gw.gateway.store.task_events(task_id, 0))
        assert [e.frame() for e in in_store] == stored

    # The Chat Completions stream of that turn: an error with the same code, and no text
    # the agent wrote after the store failed (its frames were never stored).
    assert chat_events[-1] == "[DONE]"
    error = json.loads(chat_events[-2])["error"]
    assert error["code"] == STORE_FAILED and breakable.kind in _store_words(error["message"])
    text = "".join(
        (json.loads(e)["choices"][0]["delta"].get("content") or "")
        for e in chat_events[:-2]
        if "choices" in json.loads(e)
    )
    assert "Wrote hello.txt" not in text


def test_a_conversation_whose_turn_the_store_failed_takes_turns_once_it_is_back(
    gateway_factory: Any, breakable: BreakableStore
) -> None:
    """The turn that failed releases its conversation whatever the store answers as it
    ends (on PostgreSQL, its lease cannot be checked either): once the store is back, the
    conversation's next request is served, not told "busy" for good."""
    gw = _failing_gateway(gateway_factory, breakable)
    keyed = {"model": "agentao", "x_session_id": "kept-through-an-outage"}
    ask = {POLICY_HEADER: "ask"}
    with gw.http() as http:
        body = {**keyed, "stream": True, "messages": [_said("write the file")]}
        with http.stream("POST", "/v1/chat/completions", json=body, headers=ask) as chat:
            with connect(gw.ws_url(f"/v1/tasks/{chat.headers['x-task-id']}/stream")) as ws:
                _watch_and_approve(ws, lambda: breakable.halt(gw))
            assert STORE_FAILED in chat.read().decode()
        breakable.mend(gw)
        answer = http.post("/v1/chat/completions", json={**keyed, "messages": [_said("hello")]})
    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["message"]["content"]


def _said(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def _watch_and_approve(ws: Any, break_store: Callable[[], None]) -> list[dict[str, Any]]:
    """The task stream's frames; at the permission question the store breaks, and then
    the question is approved (its answer is the first frame the store cannot take)."""
    frames = []
    for message in ws:
        frame = json.loads(message)
        frames.append(frame)
        if frame["type"] == "permission-request":
            break_store()
            allow = next(o for o in frame["options"] if o["kind"] == "allow_once")
            answer = {"requestId": frame["requestId"], "optionId": allow["optionId"]}
            ws.send(json.dumps({"type": "permission-response", **answer}))
    return frames


def _store_words(message: str) -> str:
    """Which store's error a message names: sqlite3's or psycopg's."""
    lowered = message.lower()
    if "readonly" in lowered or "sqlite" in lowered:
        return "sqlite"
    return "postgres" if ("operational" in lowered or "psycopg" in lowered) else "?"


async def test_a_remote_acp_client_gets_the_store_failure_as_an_error(
    gateway_factory: Any, breakable: BreakableStore
) -> None:
    gw = _failing_gateway(gateway_factory, breakable)
    socket = await websockets.connect(f"ws://127.0.0.1:{gw.port}/acp")
    try:
        sid = await _remote_session(socket, gw)
        await _send(socket, 3, "session/prompt", {"sessionId": sid, "prompt": [_text("write")]})
        asked = await _until(socket, lambda m: m.get("method") == "session/request_permission")
        await asyncio.to_thread(breakable.halt, gw)
        allow = next(o for o in asked["params"]["options"] if o["kind"] == "allow_once")
        outcome = {"outcome": "selected", "optionId": allow["optionId"]}
        await socket.send(
            json.dumps({"jsonrpc": "2.0", "id": asked["id"], "result": {"outcome": outcome}})
        )
        after = [json.loads(m) async for m in _received(socket)]
    finally:
        await socket.close()
    # One JSON-RPC error for the connection, then the socket closes with 1011: the turn's
    # updates and the prompt's reply, which the store refused, never arrive.
    assert len(after) == 1, after
    error = after[0]
    assert error["id"] is None and error["error"]["code"] == -32603
    assert error["error"]["data"]["code"] == STORE_FAILED
    assert socket.close_code == 1011 and socket.close_reason == STORE_FAILED


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


async def _send(socket: Any, request_id: int, method: str, params: dict[str, Any]) -> None:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    await socket.send(json.dumps(message))


async def _until(socket: Any, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    while True:
        message = json.loads(await asyncio.wait_for(socket.recv(), GUARD_SECONDS))
        if done(message):
            return message


async def _received(socket: Any) -> Any:
    """Every message until the socket closes."""
    try:
        while True:
            yield await asyncio.wait_for(socket.recv(), GUARD_SECONDS)
    except websockets.ConnectionClosed:
        return


async def _remote_session(socket: Any, gw: LiveGateway) -> str:
    await _send(socket, 1, "initialize", {"protocolVersion": 1})
    await _send(socket, 2, "session/new", {"cwd": gw.config.agents[0].cwd, "mcpServers": []})
    reply = await _until(socket, lambda m: m.get("id") == 2)
    return reply["result"]["sessionId"]
