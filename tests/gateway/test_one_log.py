"""One log per conversation: every frame of every turn numbered once, per conversation.

Real gateways on real stores (SQLite and PostgreSQL), the task stream over a real
WebSocket; the hub's conversation watch on a real SQLite store.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from websockets.sync.client import connect

from agentao.client import AgentCommand, Client
from agentao.gateway.auth import POLICY_HEADER
from agentao.gateway.batches import WriterBackoff
from agentao.gateway.config import ConfigError, Limits, config_from_dict
from agentao.gateway.tasklog import TaskHub
from agentao.store.gateway import open_gateway_store
from agentao.store.gateway_records import Conversation, TaskEvent, TaskRecord
from tests.gateway.acp_peers import RawPeer, reply_to, until
from tests.gateway.conftest import SHARED_ON_EACH_STORE, LiveGateway
from tests.gateway.test_replicas import ALICE, KEYS, WRITE_TWICE, Replicas
from tests.gateway.test_tasks import frames, start_task
from tests.postgres import PostgresServer

GUARD_SECONDS = 20  # how long a test waits for an event before calling it lost (a hang guard)


def _watch(gw: LiveGateway, task: dict[str, Any]) -> list[dict[str, Any]]:
    with connect(gw.ws_url(task["stream_url"])) as ws:
        return frames(ws)


@SHARED_ON_EACH_STORE
def test_seq_is_contiguous_across_two_turns_of_one_conversation(
    shared_gateway: LiveGateway,
) -> None:
    first = start_task(shared_gateway, "brief please")
    first_frames = _watch(shared_gateway, first)
    second = start_task(shared_gateway, "brief please", conversation_id=first["conversation_id"])
    second_frames = _watch(shared_gateway, second)
    seqs = [f["seq"] for f in first_frames + second_frames]
    assert seqs == list(range(1, len(seqs) + 1))  # the second turn numbers on
    assert second_frames[0]["type"] == "task-started" and second_frames[0]["taskId"] == second["id"]
    # `after_seq` is a seq of the conversation's log: the second task's frames after it.
    middle = second_frames[len(second_frames) // 2]["seq"]
    with connect(shared_gateway.ws_url(f"{second['stream_url']}?after_seq={middle}")) as ws:
        assert [f["seq"] for f in frames(ws)] == [s for s in seqs if s > middle]
    # The store's log of the conversation is both turns, in order, each frame once.
    log = shared_gateway.run(shared_gateway.gateway.store.events_after(first["conversation_id"], 0))
    assert [e.frame() for e in log] == first_frames + second_frames


async def test_a_conversation_watcher_gets_every_stored_frame_of_its_tasks_once_in_order(
    tmp_path: Path,
) -> None:
    store = open_gateway_store(tmp_path / "gateway.sqlite3")
    for conversation_id in ("conv_1", "conv_2"):
        await store.create_conversation(Conversation(conversation_id, "local", "agentao", "task"))
    hub = TaskHub(store, "boot_1", backoff=WriterBackoff(0, 0))
    watcher: asyncio.Queue[TaskEvent] = asyncio.Queue()
    hub.watch_conversation("conv_1", watcher)
    first = await hub.open(TaskRecord("task_a", "conv_1", "running"))
    other = await hub.open(TaskRecord("task_x", "conv_2", "running"))  # another log
    first.emit("task-started", {})
    other.emit("task-started", {})
    first.emit("task-ended", {"stopReason": "end_turn"})
    hub.end(first, "ended")
    await asyncio.wait_for(first.closed.wait(), GUARD_SECONDS)
    second = await hub.open(TaskRecord("task_b", "conv_1", "running"))  # numbers on
    second.emit("task-started", {})
    await hub.flush()
    got = [watcher.get_nowait() for _ in range(watcher.qsize())]
    assert [(e.task_id, e.seq) for e in got] == [("task_a", 1), ("task_a", 2), ("task_b", 3)]
    assert [e.seq for e in await store.events_after("conv_1", 0)] == [1, 2, 3]
    assert [e.seq for e in await store.events_after("conv_2", 0)] == [1]
    hub.unwatch_conversation("conv_1", watcher)
    second.emit("task-ended", {"stopReason": "end_turn"})
    await hub.flush()
    assert watcher.empty()  # unwatched: nothing more
    hub.close()
    await store.close()


class _RunWatcher:
    """A watcher that takes a stored run of frames at once (as a turn's inbox does)."""

    def __init__(self) -> None:
        self.runs: list[list[int]] = []
        self.one_by_one: list[int] = []

    def put_frames(self, frames: list[TaskEvent]) -> None:
        self.runs.append([e.seq for e in frames])

    def put_nowait(self, frame: TaskEvent) -> None:
        self.one_by_one.append(frame.seq)


async def test_each_stored_run_of_a_tasks_frames_is_delivered_at_once_in_order(
    tmp_path: Path,
) -> None:
    """The writer hands a task's watchers each run of its frames in a batch in one call
    (`put_frames`; one call per update was most of the relay's cost), in order, up to its
    terminal frame; a queue (control) still gets the same frames one at a time."""
    store = open_gateway_store(tmp_path / "gateway.sqlite3")
    for conversation_id in ("conv_1", "conv_2"):
        await store.create_conversation(Conversation(conversation_id, "local", "agentao", "task"))
    hub = TaskHub(store, "boot_1", backoff=WriterBackoff(0, 0))
    task = await hub.open(TaskRecord("task_a", "conv_1", "running"))
    other = await hub.open(TaskRecord("task_x", "conv_2", "running"))
    runs, queue = _RunWatcher(), asyncio.Queue[TaskEvent]()
    task.watch(runs)
    task.watch(queue)
    reader: asyncio.Queue[TaskEvent] = asyncio.Queue()
    hub.watch_conversation("conv_1", reader)
    for log, type_ in [(task, "task-started"), (task, "task-running"), (other, "task-started")]:
        log.emit(type_, {})
    task.emit("task-running", {})
    task.emit("task-ended", {"stopReason": "end_turn"})
    task.emit("task-running", {"late": True})  # after its end: stored, never delivered
    await hub.flush()  # all of it was one batch: the writer was not woken in between
    assert runs.runs == [[1, 2], [3, 4]] and runs.one_by_one == []
    assert [queue.get_nowait().seq for _ in range(queue.qsize())] == [1, 2, 3, 4]
    assert [reader.get_nowait().seq for _ in range(reader.qsize())] == [1, 2, 3, 4]
    assert task.finished.is_set()
    assert [e.seq for e in await store.events_after("conv_1", 0)] == [1, 2, 3, 4, 5]
    hub.close()
    await store.close()


async def test_a_new_hub_numbers_on_from_the_stored_log(tmp_path: Path) -> None:
    """A gateway restarted (or another replica taking the conversation over) numbers the
    next turn after what the store holds, not from 1."""
    store = open_gateway_store(tmp_path / "gateway.sqlite3")
    await store.create_conversation(Conversation("conv_1", "local", "agentao", "task"))
    hub = TaskHub(store, "boot_1", backoff=WriterBackoff(0, 0))
    first = await hub.open(TaskRecord("task_a", "conv_1", "running"))
    first.emit("task-started", {})
    first.emit("task-ended", {})
    await hub.flush()
    hub.close()
    later = TaskHub(store, "boot_2", backoff=WriterBackoff(0, 0))
    second = await later.open(TaskRecord("task_b", "conv_1", "running"))
    assert second.emit("task-started", {}).seq == 3
    await later.flush()
    assert [e.seq for e in await store.events_after("conv_1", 0)] == [1, 2, 3]
    later.close()
    await store.close()


def test_logs_past_their_retention_are_pruned_and_others_kept(
    gateway_factory: Any, tmp_path: Path
) -> None:
    # SQLite: the test moves a conversation's last update back two days by hand.
    gw = gateway_factory(limits=Limits(log_retention_days=1), store=tmp_path / "gw.sqlite3")
    task = start_task(gw, "brief please")
    watched = _watch(gw, task)
    assert watched[-1]["type"] == "task-ended"
    store = gw.gateway.store
    assert gw.run(gw.gateway.prune_logs()) == 0  # control: a day has not passed
    assert len(gw.run(store.events_after(task["conversation_id"], 0))) == len(watched)
    two_days_ago = "UPDATE gw_conversations SET updated_at = updated_at - 2 * 86400"
    gw.run(store.db.call(lambda c: c.execute(two_days_ago)))
    assert gw.run(gw.gateway.prune_logs()) > 0
    assert gw.run(store.events_after(task["conversation_id"], 0)) == []
    assert gw.run(store.get_task(task["id"])).status == "ended"  # the rows stay


def test_log_retention_is_a_named_setting_that_keeps_everything_by_default() -> None:
    assert Limits().log_retention_days == 0
    assert config_from_dict({"limits": {"log_retention_days": 30}}).limits.log_retention_days == 30
    with pytest.raises(ConfigError, match="log_retention_days"):
        config_from_dict({"limits": {"log_retention_days": -1}})


# ---- remote ACP clients read the log -----------------------------------------------------


async def _send(socket: Any, request_id: int, method: str, params: dict[str, Any]) -> None:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    await socket.send(json.dumps(message))


async def _until(
    socket: Any, done: Any, seen: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Messages from `socket` until one for which `done(message)` holds (kept in `seen`)."""
    while True:
        message = json.loads(await asyncio.wait_for(socket.recv(), GUARD_SECONDS))
        if seen is not None:
            seen.append(message)
        if done(message):
            return message


async def _remote_client(gw: LiveGateway) -> Any:
    socket = await websockets.connect(f"ws://127.0.0.1:{gw.port}/acp")
    await _send(socket, 1, "initialize", {"protocolVersion": 1})
    await _until(socket, lambda m: m.get("id") == 1)
    return socket


async def _allow_once(socket: Any, asked: dict[str, Any]) -> None:
    """Answer a `session/request_permission` with its allow_once option."""
    allow = next(o for o in asked["params"]["options"] if o["kind"] == "allow_once")
    outcome = {"outcome": "selected", "optionId": allow["optionId"]}
    await socket.send(
        json.dumps({"jsonrpc": "2.0", "id": asked["id"], "result": {"outcome": outcome}})
    )


def _updates(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m["params"]["update"] for m in messages if m.get("method") == "session/update"]


def _stored(gw: LiveGateway, sql: str) -> list[Any]:
    return gw.run(gw.gateway.store.db.read(lambda c: c.execute(sql).fetchall()))


async def test_an_update_two_remote_clients_watch_is_stored_once(
    gateway_factory: Any, tmp_path: Path
) -> None:
    gw = gateway_factory(store=tmp_path / "gw.sqlite3")  # SQLite: its rows are counted
    first, second = await _remote_client(gw), await _remote_client(gw)
    try:
        sid, seen_first, seen_second = await _a_turn_two_clients_watch(gw, first, second)
        # Read while the connections are open (closing one deletes its messages).
        await gw.gateway.remote.connections.hub.flush()
        rows = [dict(r) for r in _stored(gw, "SELECT * FROM gw_acp_messages")]
    finally:
        await first.close()
        await second.close()
    conversation = gw.gateway.conversations.live_session(sid).id
    log = gw.run(gw.gateway.store.events_after(conversation, 0))
    logged = [e.payload["update"] for e in log if e.type == "task-running"]
    # Both clients saw the turn's updates, in the log's order...
    assert logged and _updates(seen_first)[-len(logged) :] == logged
    assert _updates(seen_second)[-len(logged) :] == logged
    # ...and the store holds each once: in the log, and for each client a reference to
    # it with no body; no copy of a logged update among the stored messages.
    bodies = [bytes(r["body"]) for r in rows]
    stored_updates = [
        json.dumps(u, sort_keys=True) for u in _updates([json.loads(b) for b in bodies if b])
    ]
    assert not {json.dumps(u, sort_keys=True) for u in logged} & set(stored_updates)
    references = [r for r in rows if r.get("log_conversation") == conversation]
    assert len(references) == 2 * len(logged) and not any(r["body"] for r in references)


async def _a_turn_two_clients_watch(
    gw: LiveGateway, first: Any, second: Any
) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """`first` opens a session and `second` loads it; `first` prompts a turn with a tool
    call and a permission question, and approves it: what each client got."""
    cwd = gw.config.agents[0].cwd
    await _send(first, 2, "session/new", {"cwd": cwd, "mcpServers": []})
    sid = (await _until(first, lambda m: m.get("id") == 2))["result"]["sessionId"]
    await _send(second, 2, "session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []})
    await _until(second, lambda m: m.get("id") == 2)
    prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "write the file"}]}
    await _send(first, 3, "session/prompt", prompt)
    seen_first: list[dict[str, Any]] = []
    asked = await _until(
        first, lambda m: m.get("method") == "session/request_permission", seen_first
    )
    await _allow_once(first, asked)
    done = await _until(first, lambda m: m.get("id") == 3, seen_first)
    assert done["result"]["stopReason"] == "end_turn"
    seen_second: list[dict[str, Any]] = []
    last = _updates(seen_first)[-1]
    await _until(second, lambda m: _updates([m]) == [last], seen_second)
    return sid, seen_first, seen_second


async def test_a_client_resuming_mid_turn_gets_exactly_the_rest_from_the_log(
    gateway_factory: Any, tmp_path: Path
) -> None:
    gw = gateway_factory(store=tmp_path / "gw.sqlite3")
    peer = RawPeer(f"{gw.url}/acp")
    try:
        await peer.initialize()
        cwd = gw.config.agents[0].cwd
        request_id, _ = await peer.post("session/new", {"cwd": cwd, "mcpServers": []})
        async with peer.stream() as events:
            sid = (await until(events, reply_to(request_id)))[-1].message["result"]["sessionId"]
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "brief please"}]}
        async with peer.stream(sid) as events:
            prompted, _ = await peer.post("session/prompt", prompt, session=sid)
            first = await until(events, lambda e: len(_updates([e.message])) and e.id >= 10)
        # The stream dropped mid-turn; the client comes back after the last id it got.
        async with peer.stream(sid, last_event_id=first[-1].id) as events:
            rest = await until(events, reply_to(prompted))
        references = _stored(
            gw,
            "SELECT seq FROM gw_acp_messages WHERE log_conversation IS NOT NULL "
            f"AND connection_id = '{peer.connection_id}'",
        )
    finally:
        await peer.close()
    ids = [e.id for e in first + rest]
    assert ids == list(range(ids[0], ids[0] + len(ids)))  # nothing missed, nothing twice
    text = "".join(
        u["content"]["text"]
        for u in _updates([e.message for e in first + rest])
        if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert text == "tock " * 40
    # What it got again came from the log: the turn's updates are references to it.
    resumed = {e.id for e in rest if _updates([e.message])}
    assert resumed and resumed <= {r[0] for r in references}


async def test_a_load_replays_the_log_as_references_to_its_frames(
    gateway_factory: Any, tmp_path: Path
) -> None:
    """A client that loads a session this gateway opened gets its history from the log:
    each turn's prompt, then every update the live clients got, in order, each stored
    for it as a reference to the log's frame (no body), and rebuilt from the log when
    read again."""
    gw = gateway_factory(store=tmp_path / "gw.sqlite3")  # SQLite: its rows are read
    first, second = await _remote_client(gw), await _remote_client(gw)
    late = await _remote_client(gw)
    try:
        sid, seen_first, _ = await _a_turn_two_clients_watch(gw, first, second)
        cwd = gw.config.agents[0].cwd
        await _send(late, 2, "session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []})
        replayed: list[dict[str, Any]] = []
        await _until(late, lambda m: m.get("id") == 2, replayed)
        await gw.gateway.remote.connections.hub.flush()
        rows = [dict(r) for r in _stored(gw, "SELECT * FROM gw_acp_messages WHERE scope = ''")]
        references = [r for r in rows if r["log_conversation"] is not None]
        hub = gw.gateway.remote.connections.hub
        again = await hub.stored_after(references[0]["connection_id"], 0, "") if references else []
    finally:
        for socket in (first, second, late):
            await socket.close()
    conversation = gw.gateway.conversations.live_session(sid).id
    log = gw.run(gw.gateway.store.events_after(conversation, 0))
    logged = [e.payload["update"] for e in log if e.type == "task-running"]
    said = {
        "sessionUpdate": "user_message_chunk",
        "content": {"type": "text", "text": "write the file"},
    }
    # The same updates the live clients got, after the turn's prompt, then the session's
    # commands, as an agent's load sends them before its reply (remote/v1_calls.py)...
    commands = _updates(replayed)[-1]
    assert commands["sessionUpdate"] == "available_commands_update", commands
    assert _updates(replayed) == [said, *logged, commands]
    assert _updates(seen_first)[-len(logged) :] == logged
    # ...each a reference to the log's frame, with no body: nothing copied.
    assert len(references) == len(logged) + 1 and not any(r["body"] for r in references)
    assert {r["log_conversation"] for r in references} == {conversation}
    # Read again from the store (a reconnect), they are rebuilt from the log as sent.
    assert _updates([json.loads(m.body) for m in again]) == [said, *logged, commands]
    assert all(json.loads(m.body)["params"]["sessionId"] == sid for m in again if m.log_seq)


async def test_a_session_opened_elsewhere_is_replayed_from_the_agent_s_history(
    gateway_factory: Any, tmp_path: Path
) -> None:
    """Control: a session our agent opened outside the gateway has turns the log never
    saw; its load replays the agent's own history, as before."""
    gw = gateway_factory(store=tmp_path / "gw.sqlite3")
    spec = gw.config.agents[0]
    async with Client(AgentCommand(spec.command, env=dict(spec.env))) as direct:
        session = await direct.new_session(spec.cwd)
        async for _event in session.prompt("hello"):
            pass
    client = await _remote_client(gw)
    try:
        params = {"sessionId": session.id, "cwd": spec.cwd, "mcpServers": []}
        await _send(client, 2, "session/load", params)
        replayed: list[dict[str, Any]] = []
        reply = await _until(client, lambda m: m.get("id") == 2, replayed)
        await gw.gateway.remote.connections.hub.flush()
        references = _stored(
            gw, "SELECT seq FROM gw_acp_messages WHERE log_conversation IS NOT NULL"
        )
    finally:
        await client.close()
    assert reply["result"]["sessionId"] == session.id
    kinds = [(u["sessionUpdate"], u.get("content", {}).get("text")) for u in _updates(replayed)]
    assert ("user_message_chunk", "hello") in kinds and (
        "agent_message_chunk",
        "Answer one.",
    ) in kinds
    assert references == []  # the log holds none of it: the agent's replay, as messages


# ---- a session live on another replica ------------------------------------------------------


@pytest.fixture
def held_on_a(gateway_factory: Any, pg_url: str) -> tuple[LiveGateway, LiveGateway]:
    """Two gateways on one real PostgreSQL database, in this process (so a test can
    count what one of them does): A and B."""
    return gateway_factory(store=pg_url), gateway_factory(store=pg_url)


async def _a_turn_held_on(a: LiveGateway) -> tuple[Any, str]:
    """A client of `a` that opened a session there and ran a turn on it (A holds it)."""
    client = await _remote_client(a)
    cwd = a.config.agents[0].cwd
    await _send(client, 2, "session/new", {"cwd": cwd, "mcpServers": []})
    sid = (await _until(client, lambda m: m.get("id") == 2))["result"]["sessionId"]
    hello = {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]}
    await _send(client, 3, "session/prompt", hello)
    await _until(client, lambda m: m.get("id") == 3)
    return client, sid


async def test_a_load_of_a_session_held_elsewhere_asks_who_holds_it_not_the_lease(
    held_on_a: tuple[LiveGateway, LiveGateway],
) -> None:
    """B attaches to the session A holds as a far session after asking the store who
    holds it; it never tries to take A's lease (no refusal used to choose the path)."""
    a, b = held_on_a
    at_a, sid = await _a_turn_held_on(a)
    claims: list[str] = []
    replica = b.gateway.replica
    claim = replica.claim

    async def counted(conversation_id: str, held_token: int | None) -> tuple[int, bool]:
        claims.append(conversation_id)  # the real claim still runs
        return await claim(conversation_id, held_token)

    replica.claim = counted
    at_b = await _remote_client(b)
    try:
        cwd = b.config.agents[0].cwd
        await _send(at_b, 2, "session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []})
        replayed: list[dict[str, Any]] = []
        reply = await _until(at_b, lambda m: m.get("id") == 2, replayed)
    finally:
        await at_a.close()
        await at_b.close()
    # a far session: the holder's agent says the rest (remote/far_open.py)
    assert reply["result"]["sessionId"] == sid and "modes" in reply["result"], reply
    texts = [u["content"]["text"] for u in _updates(replayed) if "content" in u]
    assert texts[0] == "hello" and "Answer one." in "".join(texts)
    assert claims == []


async def test_a_far_session_s_load_replays_the_log_as_references_to_its_frames(
    held_on_a: tuple[LiveGateway, LiveGateway],
) -> None:
    a, b = held_on_a
    at_a, sid = await _a_turn_held_on(a)
    at_b = await _remote_client(b)
    try:
        cwd = b.config.agents[0].cwd
        await _send(at_b, 2, "session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []})
        replayed: list[dict[str, Any]] = []
        await _until(at_b, lambda m: m.get("id") == 2, replayed)
        await b.gateway.remote.connections.hub.flush()
        conversation = _conversation_of(a.store, sid)
        references = _references(a.store, conversation)  # while both are open
        bodies = _bodies(a.store)
    finally:
        await at_a.close()
        await at_b.close()
    log = b.run(b.gateway.store.events_after(conversation, 0))
    logged = [e.payload["update"] for e in log if e.type == "task-running"]
    said = {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hello"}}
    commands = _updates(replayed)[-1]  # the holder's, before the reply (remote/far_open.py)
    assert commands["sessionUpdate"] == "available_commands_update", commands
    assert _updates(replayed) == [said, *logged, commands]
    # B's client's replay is references to the log (A's client got the turn live so).
    replay = [e.seq for e in log if e.type in ("task-started", "task-running")]
    assert replay in references.values()
    logged_bodies = {json.dumps(u, sort_keys=True) for u in logged}
    assert not logged_bodies & {json.dumps(u, sort_keys=True) for u in _updates(bodies)}


def _bodies(store_url: str) -> list[dict[str, Any]]:
    """Every remote message stored with a body of its own."""
    import psycopg

    with psycopg.connect(store_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT body FROM gw_acp_messages WHERE log_conversation IS NULL"
        ).fetchall()
    return [json.loads(bytes(r[0])) for r in rows if r[0]]


# ---- every face, the same events ------------------------------------------------------------


@pytest.fixture
def keyed(tmp_path: Path, postgres_server: PostgresServer) -> Iterator[Replicas]:
    """Replicas of one gateway on one real PostgreSQL database, with API keys."""
    group = Replicas(tmp_path, postgres_server.create_database(), server=KEYS, script=WRITE_TWICE)
    yield group
    group.stop()


async def test_every_face_sees_the_same_events_of_a_turn_in_the_same_order(
    keyed: Replicas,
) -> None:
    """One turn with a tool call and a permission question, started by a Chat Completions
    stream on replica A: its stream, the task stream, a remote ACP client on A and one on
    replica B (a far session: the store and its wake-ups) see the same updates in order."""
    a, b = keyed.start(), keyed.start()
    auth = {"Authorization": f"Bearer {ALICE}"}
    at_a, at_b = await _remote_client_of(a, auth), await _remote_client_of(b, auth)
    try:
        cwd = str(keyed.work)
        await _send(at_a, 2, "session/new", {"cwd": cwd, "mcpServers": []})
        sid = (await _until(at_a, lambda m: m.get("id") == 2))["result"]["sessionId"]
        hello = {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]}
        await _send(at_a, 3, "session/prompt", hello)  # a turn before: the log numbers on
        await _until(at_a, lambda m: m.get("id") == 3)
        await _send(at_b, 2, "session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []})
        await _until(at_b, lambda m: m.get("id") == 2)
        conversation = _conversation_of(keyed.store_url, sid)
        chat = asyncio.ensure_future(_chat_stream(a, auth, conversation))
        seen_a: list[dict[str, Any]] = []
        seen_b: list[dict[str, Any]] = []
        asked = await _until(
            at_a, lambda m: m.get("method") == "session/request_permission", seen_a
        )
        # B reads the log on its own; a question already answered when B reads it is not
        # offered there (only withdrawn), so B must have it before A answers.
        await _until(at_b, lambda m: m.get("method") == "session/request_permission", seen_b)
        await _allow_once(at_a, asked)
        chat_text, task_id = await asyncio.wait_for(chat, GUARD_SECONDS)
        task_frames = await _task_stream(a, auth, task_id)
        assert task_frames[0]["seq"] > 1  # one log: numbered on after the turn before
        logged = [f["update"] for f in task_frames if f["type"] == "task-running"]
        await _until(at_a, lambda m: _updates([m]) == logged[-1:], seen_a)
        await _until(at_b, lambda m: _updates([m]) == logged[-1:], seen_b)
        for client in (at_a, at_b):  # a reply: stored with the update rows held before it
            await _send(client, 9, "session/list", {})
            await _until(client, lambda m: m.get("id") == 9)
        references = _references(keyed.store_url, conversation)  # while A and B are open
    finally:
        await at_a.close()
        await at_b.close()
    asked_b = [m for m in seen_b if m.get("method") == "session/request_permission"]
    # The task stream: the turn, numbered on after the turn before it, in the log's order.
    log = _log_of(keyed.store_url, conversation)
    assert [f["seq"] for f in task_frames] == list(
        range(len(log) - len(task_frames) + 1, len(log) + 1)
    )
    assert task_frames[0]["seq"] > 1 and [f["seq"] for f in task_frames] == log[-len(task_frames) :]
    kinds = [f["type"] for f in task_frames]
    assert kinds[0] == "task-started" and kinds[-1] == "task-ended"
    assert "permission-request" in kinds and "permission-response" in kinds
    assert any(u["sessionUpdate"] == "tool_call" for u in logged)
    # Both remote clients: the same updates in the same order, the same question.
    assert _updates(seen_a)[-len(logged) :] == logged
    assert _updates(seen_b)[-len(logged) :] == logged
    question = next(f for f in task_frames if f["type"] == "permission-request")
    assert asked["params"]["toolCall"] == question["toolCall"]
    assert [m["params"]["toolCall"] for m in asked_b] == [question["toolCall"]]
    # Each remote client's messages of the turn are the log's own frames, by their seq.
    running = [f["seq"] for f in task_frames if f["type"] == "task-running"]
    assert len(references) == 2
    assert all(seqs[-len(running) :] == running for seqs in references.values())
    # The Chat Completions stream: the agent's text, as the log has it.
    said = [u["content"]["text"] for u in logged if u["sessionUpdate"] == "agent_message_chunk"]
    assert chat_text == "".join(said) == "Wrote one.txt."


async def _remote_client_of(replica: Any, auth: dict[str, str]) -> Any:
    ws_url = replica.url.replace("http://", "ws://") + "/acp"
    socket = await websockets.connect(ws_url, additional_headers=auth)
    await _send(socket, 1, "initialize", {"protocolVersion": 1})
    await _until(socket, lambda m: m.get("id") == 1)
    return socket


def _conversation_of(store_url: str, session_id: str) -> str:
    import psycopg

    with psycopg.connect(store_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT id FROM gw_conversations WHERE session_id = %s", (session_id,)
        ).fetchone()
    assert row is not None
    return str(row[0])


def _log_of(store_url: str, conversation: str) -> list[int]:
    """The seqs of the conversation's log, as stored."""
    import psycopg

    from agentao.store.gateway_records import decode_frames

    with psycopg.connect(store_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT frames FROM gw_log_frames WHERE conversation_id = %s ORDER BY first_seq",
            (conversation,),
        ).fetchall()
    return [e.seq for row in rows for e in decode_frames(bytes(row[0]))]


def _references(store_url: str, conversation: str) -> dict[str, list[int]]:
    """Each remote connection's messages that are frames of the log: their log seqs."""
    import psycopg

    with psycopg.connect(store_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT connection_id, log_seq FROM gw_acp_messages WHERE log_conversation = %s "
            "ORDER BY connection_id, seq",
            (conversation,),
        ).fetchall()
    out: dict[str, list[int]] = {}
    for connection_id, seq in rows:
        out.setdefault(connection_id, []).append(seq)
    return out


async def _chat_stream(replica: Any, auth: dict[str, str], conversation: str) -> tuple[str, str]:
    """A streamed Chat Completions turn on `conversation`: its text, and its task id."""
    body = {"model": "agentao", "stream": True, "messages": [{"role": "user", "content": "write"}]}
    headers = {**auth, "X-Session-Id": conversation, POLICY_HEADER: "ask"}
    async with (
        httpx.AsyncClient(timeout=GUARD_SECONDS) as http,
        http.stream("POST", f"{replica.url}/v1/chat/completions", json=body, headers=headers) as r,
    ):
        assert r.status_code == 200
        text = []
        async for line in r.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            for choice in chunk.get("choices", []):
                text.append(choice["delta"].get("content") or "")
        return "".join(text), r.headers["x-task-id"]


async def _task_stream(replica: Any, auth: dict[str, str], task_id: str) -> list[dict[str, Any]]:
    ws_url = replica.url.replace("http://", "ws://") + f"/v1/tasks/{task_id}/stream"
    async with websockets.connect(ws_url, additional_headers=auth) as socket:
        return [
            frame async for message in socket if (frame := json.loads(message))["type"] != "ping"
        ]


async def test_a_stale_writer_cannot_write_into_a_log_another_numbered_on(
    tmp_path: Path,
) -> None:
    """A replica that stalled past its lease numbers on from what it knew: the store
    refuses those seqs (the new holder wrote them), its readers get `store_failed`, and
    its task's row still records why it stopped."""
    store = open_gateway_store(tmp_path / "gateway.sqlite3")
    await store.create_conversation(Conversation("conv_1", "local", "agentao", "task"))
    stale = TaskHub(store, "boot_a", backoff=WriterBackoff(0, 0))
    holder = TaskHub(store, "boot_b", backoff=WriterBackoff(0, 0))
    old = await stale.open(TaskRecord("task_a", "conv_1", "running"))
    watcher = old.subscribe()
    old.emit("task-started", {})
    await stale.flush()
    new = await holder.open(TaskRecord("task_b", "conv_1", "running"))  # numbers on: 2
    new.emit("task-started", {})
    await holder.flush()
    old.emit("task-running", {"update": {"late": True}})  # seq 2 again: refused
    stale.end(old, "error", "lease lost")
    await asyncio.wait_for(old.closed.wait(), GUARD_SECONDS)
    await stale.flush()
    got = [watcher.get_nowait() for _ in range(watcher.qsize())]
    assert [e.type for e in got] == ["task-started", "task-error"]
    assert got[-1].payload["error"]["code"] == "store_failed"
    assert [(e.task_id, e.seq) for e in await store.events_after("conv_1", 0)] == [
        ("task_a", 1),
        ("task_b", 2),
    ]
    row = await store.get_task("task_a")
    assert (row.status, row.error) == ("error", "lease lost")
    stale.close()
    holder.close()
    await store.close()
