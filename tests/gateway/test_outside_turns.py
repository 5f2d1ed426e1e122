"""What the agent sends while no turn runs is in the conversation's log too.

A remote ACP client changes the mode between two turns (`session/set_mode`): the
agent's `current_mode_update` is appended to the log as a `session-update` frame of no
task, numbered between the two turns' frames, and every reader gets it from there: a
second client on the same replica, and one on another replica (a far session, reading
the shared PostgreSQL store), and one that comes back over HTTP/SSE from before it
(`Last-Event-ID`). Real gateways, our real agent, real stores; the hub's
numbering of notes on a real SQLite store.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agentao.gateway.batches import WriterBackoff
from agentao.gateway.tasklog import STORE_FAILED, UNSTORED, TaskHub
from agentao.gateway.views import fold
from agentao.store.gateway import open_gateway_store
from agentao.store.gateway_records import Conversation, TaskEvent, TaskRecord
from tests.gateway.acp_peers import RawPeer, reply_to, until
from tests.gateway.conftest import LiveGateway
from tests.gateway.test_one_log import (
    GUARD_SECONDS,
    _remote_client,
    _send,
    _stored,
    _until,
    _updates,
)

MODE = "read-only"  # below every ceiling: any client may switch to it
# As the log has them (tasklog.SESSION_UPDATE, gateway_records.NO_TASK), spelt out.
SESSION_UPDATE = "session-update"
NO_TASK = ""


def _mode_update(message: dict[str, Any]) -> bool:
    return any(u.get("sessionUpdate") == "current_mode_update" for u in _updates([message]))


async def _open(gw: LiveGateway, opener: Any) -> str:
    """`opener` opens a session on `gw`: its id."""
    cwd = gw.config.agents[0].cwd
    await _send(opener, 2, "session/new", {"cwd": cwd, "mcpServers": []})
    return str((await _until(opener, lambda m: m.get("id") == 2))["result"]["sessionId"])


async def _load(gw: LiveGateway, loader: Any, sid: str) -> None:
    """`loader` loads session `sid` on `gw` (where it runs, or another replica)."""
    cwd = gw.config.agents[0].cwd
    await _send(loader, 2, "session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []})
    reply = await _until(loader, lambda m: m.get("id") == 2)
    assert "result" in reply, reply


async def _turn(client: Any, request_id: int, sid: str, text: str) -> None:
    prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
    await _send(client, request_id, "session/prompt", prompt)
    done = await _until(client, lambda m: m.get("id") == request_id)
    assert done["result"]["stopReason"] == "end_turn"


async def _set_mode(client: Any, request_id: int, sid: str) -> None:
    await _send(client, request_id, "session/set_mode", {"sessionId": sid, "modeId": MODE})
    reply = await _until(client, lambda m: m.get("id") == request_id)
    assert "result" in reply, reply


def _the_note_between_the_turns(log: list[TaskEvent]) -> TaskEvent:
    """The log's one `current_mode_update`, checked to be a frame of no task numbered
    after the first turn's end and before the second turn's start."""
    notes = [
        e
        for e in log
        if e.type == SESSION_UPDATE
        and e.payload["update"].get("sessionUpdate") == "current_mode_update"
    ]
    assert len(notes) == 1, [(e.seq, e.type) for e in log]
    note = notes[0]
    assert note.task_id == NO_TASK and note.payload["update"]["currentModeId"] == MODE
    ended = [e.seq for e in log if e.type == "task-ended"]
    started = [e.seq for e in log if e.type == "task-started"]
    assert len(ended) == len(started) == 2
    assert ended[0] < note.seq < started[1]
    assert [e.seq for e in log] == list(range(1, len(log) + 1))  # one numbering, no gap
    # A turn's updates are its own, never noted too (none falls inside a turn).
    turns = list(zip(started, ended, strict=True))
    noted = [e.seq for e in log if e.type == SESSION_UPDATE]
    assert not [seq for seq in noted for start, end in turns if start < seq < end]
    return note


async def test_a_mode_change_between_turns_reaches_a_client_here_from_the_log(
    gateway_factory: Any, tmp_path: Path
) -> None:
    gw = gateway_factory(store=tmp_path / "gw.sqlite3")  # SQLite: its rows are read
    changer, watcher = await _remote_client(gw), await _remote_client(gw)
    try:
        sid = await _open(gw, changer)
        await _load(gw, watcher, sid)
        await _turn(changer, 3, sid, "one")
        await _set_mode(changer, 4, sid)
        got = await _until(watcher, _mode_update)
        await _turn(changer, 5, sid, "two")
        await gw.gateway.remote.connections.hub.flush()
        references = _stored(
            gw, "SELECT connection_id, log_seq FROM gw_acp_messages WHERE log_seq IS NOT NULL"
        )
    finally:
        await changer.close()
        await watcher.close()
    conversation = gw.gateway.conversations.live_session(sid).id
    log = gw.run(gw.gateway.store.events_after(conversation, 0))
    note = _the_note_between_the_turns(log)
    assert _updates([got]) == [note.payload["update"]]
    # Each client got it as the log's frame (a reference by its seq), nothing else.
    assert len({c for c, seq in references if seq == note.seq}) == 2
    # The view that reads the conversation's log folds it: the session's mode.
    assert fold(log).session.mode == MODE


async def test_a_client_loading_later_gets_a_mode_change_between_turns_in_its_place(
    gateway_factory: Any, tmp_path: Path
) -> None:
    """`session/load` replays the log: each turn's prompt and updates, and the notes
    between them (the mode change), in log order, before the reply."""
    gw = gateway_factory(store=tmp_path / "gw.sqlite3")
    changer = await _remote_client(gw)
    later: Any = None
    try:
        sid = await _open(gw, changer)
        await _turn(changer, 3, sid, "one")
        await _set_mode(changer, 4, sid)
        await _turn(changer, 5, sid, "two")
        later = await _remote_client(gw)
        replayed: list[dict[str, Any]] = []
        cwd = gw.config.agents[0].cwd
        await _send(later, 2, "session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []})
        await _until(later, lambda m: m.get("id") == 2, replayed)
    finally:
        await changer.close()
        if later is not None:
            await later.close()
    kinds = [u["sessionUpdate"] for u in _updates(replayed)]
    assert kinds.count("current_mode_update") == 1, kinds
    mode = kinds.index("current_mode_update")
    prompts = [i for i, kind in enumerate(kinds) if kind == "user_message_chunk"]
    assert len(prompts) == 2 and prompts[0] < mode < prompts[1], kinds
    assert "agent_message_chunk" in kinds[prompts[0] : mode]  # after the first turn's answer
    assert _updates(replayed)[mode]["currentModeId"] == MODE


async def test_a_mode_change_between_turns_reaches_a_client_on_another_replica(
    gateway_factory: Any, pg_url: str
) -> None:
    """B serves its client as a far session (A holds the conversation): it reads the
    shared log, woken by A's stores, and so gets the mode change like any frame."""
    a, b = gateway_factory(store=pg_url), gateway_factory(store=pg_url)
    at_a, at_b = await _remote_client(a), await _remote_client(b)
    try:
        sid = await _open(a, at_a)
        await _turn(at_a, 3, sid, "one")  # its conversation's row is stored: B finds it
        await _load(b, at_b, sid)
        await _set_mode(at_a, 4, sid)
        got = await _until(at_b, _mode_update)
        await _turn(at_a, 5, sid, "two")
    finally:
        await at_a.close()
        await at_b.close()
    conversation = a.gateway.conversations.live_session(sid).id
    log = b.run(b.gateway.store.events_after(conversation, 0))
    note = _the_note_between_the_turns(log)
    assert _updates([got]) == [note.payload["update"]]


async def test_a_client_that_comes_back_gets_a_mode_change_again_from_the_log(
    gateway_factory: Any, tmp_path: Path
) -> None:
    """Over HTTP with SSE: the mode change is an event of the session's stream like any
    update; a client that resumes from before it (`Last-Event-ID`) gets it again, rebuilt
    from the log's frame."""
    gw = gateway_factory(store=tmp_path / "gw.sqlite3")
    peer = RawPeer(f"{gw.url}/acp")
    try:
        await peer.initialize()
        cwd = gw.config.agents[0].cwd
        opened, _ = await peer.post("session/new", {"cwd": cwd, "mcpServers": []})
        async with peer.stream() as events:
            sid = (await until(events, reply_to(opened)))[-1].message["result"]["sessionId"]
        async with peer.stream(sid) as events:
            await peer.post("session/set_mode", {"sessionId": sid, "modeId": MODE}, session=sid)
            live = await until(events, lambda e: _mode_update(e.message))
        async with peer.stream(sid, last_event_id=live[-1].id - 1) as events:
            again = await until(events, lambda e: _mode_update(e.message))
        listed, _ = await peer.post("session/list", {})
        async with peer.stream() as events:  # a reply: stored with the rows held before it
            await until(events, reply_to(listed))
        references = _stored(
            gw,
            "SELECT seq, log_seq FROM gw_acp_messages WHERE log_seq IS NOT NULL "
            f"AND connection_id = '{peer.connection_id}'",
        )
    finally:
        await peer.close()
    assert again[0].id == live[-1].id and again[0].message == live[-1].message
    conversation = gw.gateway.conversations.live_session(sid).id
    log = gw.run(gw.gateway.store.events_after(conversation, 0))
    noted = [
        e.seq
        for e in log
        if e.type == SESSION_UPDATE
        and _mode_update({"method": "session/update", "params": e.payload})
    ]
    assert len(noted) == 1 and (live[-1].id, noted[0]) in {tuple(r) for r in references}


# ---- the hub: numbering a note between turns ---------------------------------------------


MODE_UPDATE = {"update": {"sessionUpdate": "current_mode_update", "currentModeId": MODE}}


async def _next(queue: asyncio.Queue[TaskEvent]) -> TaskEvent:
    return await asyncio.wait_for(queue.get(), GUARD_SECONDS)


async def test_a_note_after_a_turn_moves_where_the_next_turn_numbers_from(
    tmp_path: Path,
) -> None:
    """A turn ends (its caller learns its log ends at 1), the agent sends an update, and
    the next turn opens with that end from before the note: the hub numbers the note 2
    and the turn 3 (not 2 again: a frame the store would refuse), and the
    conversation's watcher gets each once stored, in order."""
    store = open_gateway_store(tmp_path / "gw.sqlite3")
    await store.create_conversation(Conversation("c1", "local", "agentao", "acp"))
    hub = TaskHub(store, "boot_a")
    reader: asyncio.Queue[TaskEvent] = asyncio.Queue()
    hub.watch_conversation("c1", reader)
    try:
        first = await hub.open(TaskRecord("t1", "c1", "running"), log_end=0)
        first.emit("task-started", {})
        hub.end(first, "ended")
        await asyncio.wait_for(first.closed.wait(), GUARD_SECONDS)
        known_end = first.last_seq  # what `LiveConversation.log_seq` held
        hub.note("c1", SESSION_UPDATE, MODE_UPDATE)
        await hub.flush()  # stored: the hub keeps no count of the conversation now
        second = await hub.open(TaskRecord("t2", "c1", "running"), log_end=known_end)
        second.emit("task-started", {})
        await hub.flush()
        got = [await _next(reader) for _ in range(3)]
        assert [(e.task_id, e.seq, e.type) for e in got] == [
            ("t1", 1, "task-started"),
            (NO_TASK, 2, SESSION_UPDATE),
            ("t2", 3, "task-started"),
        ]
        assert second.failure is None
        assert await store.events_after("c1", 0) == got
        assert [e.seq for e in await store.task_events("t2", 0)] == [3]  # a task's: no note
    finally:
        hub.close()
        await store.close()


async def test_a_note_numbered_from_the_end_the_caller_knew_reads_no_store(
    tmp_path: Path,
) -> None:
    """A new conversation's first update (our agent's commands, right after session/new)
    numbers from the end its caller knew (0) and says where the log ends now, so neither
    the note nor the first turn asks the store where it ends (a round trip on each new
    conversation's way to its first token). Control: a note with no end known reads it."""
    store = open_gateway_store(tmp_path / "gw.sqlite3")
    for conversation_id in ("c1", "c2"):
        await store.create_conversation(Conversation(conversation_id, "local", "agentao", "acp"))
    reads: list[str] = []
    store.db.trace(lambda sql: reads.append(sql) if "max(last_seq)" in sql.lower() else None)
    hub = TaskHub(store, "boot_a")
    try:
        end = hub.note("c1", SESSION_UPDATE, MODE_UPDATE, log_end=0)
        assert end == 1
        await hub.flush()
        turn = await hub.open(TaskRecord("t1", "c1", "running"), log_end=end)
        turn.emit("task-started", {})
        await hub.flush()
        assert [e.seq for e in await store.events_after("c1", 0)] == [1, 2]
        assert reads == []
        assert hub.note("c2", SESSION_UPDATE, MODE_UPDATE) is None  # control
        await hub.flush()
        assert len(reads) == 1 and [e.seq for e in await store.events_after("c2", 0)] == [1]
    finally:
        store.db.trace(None)
        hub.close()
        await store.close()


async def test_a_note_between_a_turn_s_answer_and_its_end_is_read_in_the_log_s_order(
    tmp_path: Path,
) -> None:
    """The agent's update after the prompt's answer, before the gateway's `task-ended`,
    in one batch with the turn's frames: numbered 2 between them, delivered and stored
    1, 2, 3."""
    store = open_gateway_store(tmp_path / "gw.sqlite3")
    await store.create_conversation(Conversation("c1", "local", "agentao", "acp"))
    hub = TaskHub(store, "boot_a")
    reader: asyncio.Queue[TaskEvent] = asyncio.Queue()
    hub.watch_conversation("c1", reader)
    try:
        task = await hub.open(TaskRecord("t1", "c1", "running"), log_end=0)
        task.emit("task-started", {})
        hub.note("c1", SESSION_UPDATE, MODE_UPDATE)  # the task is open: numbered at once
        task.emit("task-ended", {"stopReason": "end_turn"})
        await hub.flush()
        got = [await _next(reader) for _ in range(3)]
        assert [(e.task_id, e.seq) for e in got] == [("t1", 1), (NO_TASK, 2), ("t1", 3)]
        assert await store.events_after("c1", 0) == got
    finally:
        hub.close()
        await store.close()


async def test_a_note_the_store_refuses_reaches_no_reader_but_its_failure(
    tmp_path: Path,
) -> None:
    """A note of a conversation deleted meanwhile is refused by the store: its watchers
    get a `task-error` (store_failed, no seq) and never the note; a note of another
    conversation (control) is stored and delivered."""
    store = open_gateway_store(tmp_path / "gw.sqlite3")
    await store.create_conversation(Conversation("c2", "local", "agentao", "acp"))
    hub = TaskHub(store, "boot_a", backoff=WriterBackoff(0, 0))
    gone: asyncio.Queue[TaskEvent] = asyncio.Queue()
    kept: asyncio.Queue[TaskEvent] = asyncio.Queue()
    hub.watch_conversation("c1", gone)
    hub.watch_conversation("c2", kept)
    try:
        hub.note("c1", SESSION_UPDATE, MODE_UPDATE)
        await hub.flush()
        failure = await _next(gone)
        assert (failure.type, failure.seq) == ("task-error", UNSTORED)
        assert failure.payload["error"]["code"] == STORE_FAILED
        hub.note("c2", SESSION_UPDATE, MODE_UPDATE)
        await hub.flush()
        stored = await _next(kept)
        assert (stored.task_id, stored.seq, stored.type) == (NO_TASK, 1, SESSION_UPDATE)
        assert gone.empty() and await store.events_after("c1", 0) == []
    finally:
        hub.close()
        await store.close()
