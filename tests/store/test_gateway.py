"""The gateway's tables on a real SQLite file and a real PostgreSQL database (see conftest)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from agentao.store.gateway import GATEWAY_SCHEMA, open_gateway_store, open_store
from agentao.store.gateway_records import (
    Boot,
    Conversation,
    ResponseRecord,
    Settlement,
    TaskEvent,
    TaskRecord,
)
from agentao.store.sqlite import Database, Schema


async def test_conversations_by_id_by_transcript_and_by_owner(store) -> None:
    await store.create_conversation(
        Conversation("c1", "alice", "agentao", "chat", transcript_hash="h1")
    )
    await store.create_conversation(
        Conversation("c2", "bob", "agentao", "chat", transcript_hash="h1")
    )
    conv = await store.get_conversation("c1")
    conv.session_id, conv.turn_count, conv.transcript_hash = "s1", 1, "h2"
    await store.update_conversation(conv)
    again = await store.get_conversation("c1")
    assert (again.session_id, again.turn_count, again.transcript_hash) == ("s1", 1, "h2")
    found = await store.find_by_transcript("bob", "agentao", ["h9", "h1"])
    assert found is not None and found[0].id == "c2" and found[1] == "h1"
    assert await store.find_by_transcript("alice", "agentao", ["h1"]) is None
    assert [c.id for c in await store.list_conversations("alice", 10)] == ["c1"]
    assert {c.id for c in await store.list_conversations(None, 10)} == {"c1", "c2"}


async def test_responses_survive_reopening(store_target) -> None:
    first = open_store(store_target)
    await first.create_conversation(Conversation("c1", "local", "agentao", "responses"))
    await first.put_response(
        ResponseRecord("r1", "c1", 0, "in_progress", {"status": "in_progress"})
    )
    await first.put_response(ResponseRecord("r1", "c1", 0, "completed", {"status": "completed"}))
    await first.close()
    second = open_store(store_target)
    record = await second.get_response("r1")
    assert record.status == "completed" and record.body == {"status": "completed"}
    assert await second.delete_response("r1") is True
    assert await second.get_response("r1") is None
    await second.close()


async def test_task_events_in_order_after_a_seq(store) -> None:
    await store.create_conversation(Conversation("c1", "local", "agentao", "task"))
    events = [
        TaskEvent("t1", n, "task-running", float(n), {"update": {"n": n}}) for n in range(1, 6)
    ]
    await store.append_events(events[:3], tasks=[TaskRecord("t1", "c1", "running", prompt="hi")])
    await store.append_events(events[3:])
    after = await store.task_events("t1", 2)
    assert [e.seq for e in after] == [3, 4, 5]
    assert after[0].frame() == {"seq": 3, "type": "task-running", "at": 3.0, "update": {"n": 3}}
    with pytest.raises(Exception, match=r"(?i)unique"):
        await store.append_events(events[:1])  # a seq is written once
    conv = await store.get_conversation("c1")
    conv.turn_count = 1
    ended = TaskRecord("t1", "c1", "ended", ended_at=9.0)
    await store.append_events([], conversations=[conv], ended=[ended])  # together
    task = await store.get_task("t1")
    assert task.status == "ended" and task.ended_at is not None
    assert (await store.get_conversation("c1")).turn_count == 1
    assert [t.id for t in await store.list_tasks("c1")] == ["t1"]


async def test_a_frame_holding_an_agents_bytes_is_stored_as_sent_and_read_back(store) -> None:
    """A live frame carries the update as the agent sent it (msgspec.Raw, read with the
    members its types skip unparsed): stored as those bytes, and a number no float holds
    in such a member reads back as its literal instead of failing the read of the log."""
    import msgspec

    await store.create_conversation(Conversation("c1", "local", "agentao", "task"))
    text = {"type": "text", "text": "caf\u00e9"}
    wire = msgspec.json.encode({"sessionUpdate": "agent_message_chunk", "content": text})
    wire = wire[:-1] + b',"x":1e999}'
    event = TaskEvent("t1", 1, "task-running", 1.0, {"update": msgspec.Raw(wire)})
    await store.append_events([event], tasks=[TaskRecord("t1", "c1", "running", prompt="hi")])
    for back in (await store.task_events("t1", 0), await store.events_after("c1", 0)):
        assert back[0].payload["update"] == {
            "sessionUpdate": "agent_message_chunk",
            "content": text,
            "x": "1e999",
        }


async def test_one_log_per_conversation_numbered_across_its_tasks(store) -> None:
    await store.create_conversation(Conversation("c1", "local", "agentao", "task"))
    await store.create_conversation(Conversation("c2", "local", "agentao", "task"))
    first = [TaskEvent("t1", n, "task-running", float(n), {"n": n}) for n in (1, 2, 3)]
    second = [TaskEvent("t2", n, "task-running", float(n), {"n": n}) for n in (4, 5)]
    other = [TaskEvent("t3", 1, "task-started", 1.0, {})]
    tasks = [TaskRecord("t1", "c1", "running"), TaskRecord("t3", "c2", "running")]
    await store.append_events(first + other, tasks=tasks)
    await store.append_events(second, tasks=[TaskRecord("t2", "c1", "running")])
    log = await store.events_after("c1", 2)  # across its tasks, nothing of another's
    assert [(e.task_id, e.seq) for e in log] == [("t1", 3), ("t2", 4), ("t2", 5)]
    assert [e.seq for e in await store.task_events("t2", 0)] == [4, 5]
    assert [e.seq for e in await store.task_events("t1", 1)] == [2, 3]
    assert (await store.last_seq("c1"), await store.last_seq("c2")) == (5, 1)
    assert await store.last_seq("c9") == 0
    with pytest.raises(Exception, match=r"(?i)null|unknown"):  # no task row: no conversation
        await store.append_events([TaskEvent("t_unknown", 6, "task-running", 6.0, {})])
    assert [e.seq for e in await store.events_after("c1", 0)] == [1, 2, 3, 4, 5]


async def test_the_log_of_conversations_idle_since_a_time_is_pruned(store) -> None:
    for conv_id, updated in (("old", 10.0), ("running", 10.0), ("new", 100.0)):
        conv = Conversation(conv_id, "local", "agentao", "task", created_at=1.0)
        conv.updated_at = updated
        await store.create_conversation(conv)
    tasks = [
        TaskRecord("t_old", "old", "ended"),
        TaskRecord("t_running", "running", "running"),
        TaskRecord("t_new", "new", "ended"),
    ]
    frames = [TaskEvent(t.id, 1, "task-started", 1.0, {}) for t in tasks]
    await store.append_events(frames, tasks=tasks)  # (their conversations not saved again)
    assert await store.prune_log(50.0) == 1  # the running one's log stays, the new one's too
    assert await store.events_after("old", 0) == []
    assert [e.seq for e in await store.events_after("running", 0)] == [1]
    assert await store.get_task("t_old") is not None  # rows stay, only frames go
    assert [e.seq for e in await store.events_after("new", 0)] == [1]
    assert await store.prune_log(5.0) == 0  # nothing that old: nothing pruned


async def test_conversations_rows_and_frames_in_one_write(store) -> None:
    conv = Conversation("c9", "local", "agentao", "chat")
    task = TaskRecord("t9", "c9", "running")
    frame = TaskEvent("t9", 1, "task-started", 1.0, {})
    await store.append_events([frame], tasks=[task], conversations=[conv])  # FK order kept
    conv.title, conv.session_id = "hello", "s9"
    await store.append_events([], conversations=[conv])  # an upsert
    again = await store.get_conversation("c9")
    assert (again.title, again.session_id) == ("hello", "s9")
    assert [e.seq for e in await store.events_after("c9", 0)] == [1]


async def test_a_transcript_lookup_is_one_query_whatever_the_number_of_hashes(store) -> None:
    await store.create_conversation(
        Conversation("c1", "alice", "agentao", "chat", transcript_hash="h500")
    )
    await store.create_conversation(
        Conversation("c2", "alice", "agentao", "chat", transcript_hash="h700")
    )
    statements: list[str] = []
    store.db.trace(statements.append)
    found = await store.find_by_transcript("alice", "agentao", [f"h{i}" for i in range(1000)])
    store.db.trace(None)
    assert found is not None and found[0].id == "c1"  # the earliest hash: the longest prefix
    assert len(statements) == 1


async def test_rows_in_flight_are_settled_once(store) -> None:
    boot = Boot("boot_a", "host", "kernel", "pid:[1]", 1234, "99", 1.0)
    await store.register_boot(boot)
    assert await store.boots() == [boot]
    await store.create_conversation(Conversation("c1", "local", "agentao", "responses"))
    running = TaskRecord("t1", "c1", "running", boot_id="boot_a")
    started = TaskEvent("t1", 1, "task-started", 1.0, {})
    response = ResponseRecord(
        "r1", "c1", 0, "in_progress", {"status": "in_progress"}, boot_id="boot_a"
    )
    await store.append_events([started], tasks=[running], responses=[response])
    elsewhere = ResponseRecord("r2", "c1", 1, "in_progress", {}, boot_id="boot_b")
    await store.put_response(elsewhere)

    responses, tasks = await store.in_flight(["boot_a"])
    assert [r.id for r in responses] == ["r1"] and [t.id for t in tasks] == ["t1"]
    assert await store.in_flight([None]) == ([], [])  # rows with no owner: none here
    both = await store.in_flight(["boot_a", "boot_b", None])
    assert sorted(r.id for r in both[0]) == ["r1", "r2"]
    response.status, response.body = "failed", {"status": "failed"}
    running.status, running.error = "error", "gone"
    frame = ("task-error", {"error": {"code": "gateway_stopped"}})
    settlement = Settlement([response], [running], {"t1": frame}, ["boot_a"])
    await store.settle(settlement)
    await store.settle(settlement)  # a second settler (another gateway) changes nothing
    assert (await store.get_response("r1")).status == "failed"
    assert (await store.get_response("r2")).status == "in_progress"  # another owner's
    task = await store.get_task("t1")
    assert (task.status, task.error) == ("error", "gone") and task.ended_at is not None
    assert [(e.seq, e.type) for e in await store.task_events("t1", 0)] == [
        (1, "task-started"),
        (2, "task-error"),
    ]
    assert await store.boots() == []


async def test_a_new_response_row_never_overwrites_its_final_row(store) -> None:
    await store.create_conversation(Conversation("c1", "local", "agentao", "responses"))
    await store.put_response(ResponseRecord("r1", "c1", 0, "completed", {"status": "completed"}))
    late = ResponseRecord("r1", "c1", 0, "in_progress", {"status": "in_progress"})
    await store.append_events([], responses=[late])  # queued at the start, written late
    assert (await store.get_response("r1")).status == "completed"


async def test_rows_from_before_owners_and_batched_frames_migrate(tmp_path) -> None:
    path = tmp_path / "old.sqlite3"
    first_version = Schema("gateway", GATEWAY_SCHEMA.migrations[:7])  # as released before
    db = Database.open(path, [first_version])
    db.call_sync(
        lambda c: c.executescript(
            "INSERT INTO gw_conversations VALUES ('c1','local','agentao',NULL,NULL,'chat',1,1,0,NULL);"
            "INSERT INTO gw_responses VALUES ('r1','c1',0,'in_progress',1,'{}');"
            "INSERT INTO gw_tasks VALUES ('t1','c1','running',1,NULL,'');"
            "INSERT INTO gw_tasks VALUES ('t0','c1','ended',0.5,NULL,'');"
            "INSERT INTO gw_task_events VALUES ('t1',1,'task-started',1795477115.1160305,'{}');"
            """INSERT INTO gw_task_events VALUES ('t1',2,'task-running',2.5,'{"update":{"a":"é"}}');"""
            "INSERT INTO gw_task_events VALUES ('t0',1,'task-ended',0.75,'{}');"
        )
    )
    db.close()
    store = open_gateway_store(path)
    responses, tasks = await store.in_flight([None])
    assert [r.id for r in responses] == ["r1"] and [t.id for t in tasks] == ["t1"]
    assert responses[0].boot_id is None
    # Frames moved to rows of batches, then into the conversation's log, renumbered in
    # the order their tasks were created (t0 first).
    assert await store.events_after("c1", 0) == [
        TaskEvent("t0", 1, "task-ended", 0.75, {}),
        TaskEvent("t1", 2, "task-started", 1795477115.1160305, {}),
        TaskEvent("t1", 3, "task-running", 2.5, {"update": {"a": "é"}}),
    ]
    assert await store.last_seq("c1") == 3
    await store.append_events([TaskEvent("t1", 4, "task-ended", 3.0, {})])
    assert [e.seq for e in await store.task_events("t1", 2)] == [3, 4]
    await store.close()


async def test_a_held_read_holds_up_neither_writes_nor_other_reads(tmp_path) -> None:
    store = open_gateway_store(tmp_path / "gw.sqlite3", readers=2)
    entered, release = threading.Event(), threading.Event()

    def hold(sql: str) -> None:  # on the reading thread, as its statement starts
        if "transcript_hash IN" in sql:
            entered.set()
            release.wait()

    store.db.trace(hold)
    held = asyncio.ensure_future(store.find_by_transcript("local", "agentao", ["h"]))
    await asyncio.to_thread(entered.wait)
    await store.create_conversation(Conversation("c1", "local", "agentao", "chat"))
    assert (await store.get_conversation("c1")).id == "c1"  # the other reader, meanwhile
    assert not held.done()
    release.set()
    assert await held is None
    store.db.trace(None)
    await store.close()


def _question(task_id: str, seq: int, request_id: str) -> TaskEvent:
    payload = {"requestId": request_id, "toolCall": {"toolCallId": "w1", "title": "Write"}}
    return TaskEvent(task_id, seq, "permission-request", 1.0, payload)


async def test_open_questions_are_the_owner_s_running_tasks_unanswered_ones(store) -> None:
    """What `GET /v1/permissions` lists on every replica (gateway/questions.py): the
    questions of the caller's running tasks with no answer frame; never another key's,
    nor one of a turn that ended."""
    from agentao.gateway.questions import asking_conversation, open_questions

    for conv, owner in (("c1", "alice"), ("c2", "alice"), ("c3", "bob")):
        await store.create_conversation(Conversation(conv, owner, "agentao", "task"))
    running = [TaskRecord(t, c, "running") for t, c in (("t1", "c1"), ("t2", "c2"), ("t3", "c3"))]
    answered = TaskEvent("t1", 3, "permission-response", 1.0, {"requestId": "perm_1"})
    await store.append_events(
        [
            _question("t1", 1, "perm_1"),
            _question("t1", 2, "perm_2"),
            answered,
            _question("t2", 1, "perm_3"),
            _question("t3", 1, "perm_4"),
        ],
        tasks=running,
    )
    listed = await open_questions(store, "alice")
    assert [(q["requestId"], q["taskId"], q["conversationId"]) for q in listed] == [
        ("perm_2", "t1", "c1"),
        ("perm_3", "t2", "c2"),
    ]
    assert listed[0]["tool"]["title"] == "Write"
    assert await asking_conversation(store, "alice", "perm_3") == "c2"
    assert await asking_conversation(store, "alice", "perm_4") is None  # bob's
    assert [q["requestId"] for q in await open_questions(store, "bob")] == ["perm_4"]
    # The turn ends: its question is no longer open (nor found to answer).
    ended = TaskRecord("t2", "c2", "ended")
    await store.append_events([TaskEvent("t2", 2, "task-ended", 1.0)], ended=[ended])
    assert [q["requestId"] for q in await open_questions(store, "alice")] == ["perm_2"]
    assert await asking_conversation(store, "alice", "perm_3") is None


class _Statements:
    """A connection that records the SQL it is given (`execute` and `executemany`)."""

    def __init__(self, conn, seen: list[str]) -> None:
        self._conn, self._seen = conn, seen

    def execute(self, sql: str, *args):
        self._seen.append(sql)
        return self._conn.execute(sql, *args)

    def executemany(self, sql: str, rows):
        self._seen.append(sql)
        return self._conn.executemany(sql, rows)


async def test_a_batch_of_frames_alone_runs_only_the_frames_insert(tmp_path) -> None:
    """A streamed answer's batches are frames alone: the statements for task rows,
    responses, notes and ends are not run with nothing to do (each costs the loop its
    lookup and step, once per streamed burst)."""
    store = open_store(str(tmp_path / "g.sqlite3"))
    try:
        await store.create_conversation(Conversation("c1", "local", "agentao", "task"))
        await store.append_events([], tasks=[TaskRecord("t1", "c1", "running", prompt="hi")])
        seen: list[str] = []
        real = store.db.transaction

        async def recording(fn, **options):
            return await real(lambda conn: fn(_Statements(conn, seen)), **options)

        store.db.transaction = recording
        frames = [TaskEvent("t1", n, "task-running", 0.0, {"update": {"n": n}}) for n in (1, 2)]
        await store.append_events(frames)
        assert len(seen) == 1 and seen[0].lstrip().startswith("INSERT INTO gw_log_frames")
        assert [e.seq for e in await store.task_events("t1", 0)] == [1, 2]
    finally:
        await store.close()
