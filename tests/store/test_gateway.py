"""The gateway's tables on a real SQLite file."""

from __future__ import annotations

import pytest

from agentao.store.gateway import (
    Conversation,
    ResponseRecord,
    TaskEvent,
    TaskRecord,
    open_gateway_store,
)


@pytest.fixture
def store(tmp_path):
    s = open_gateway_store(tmp_path / "gw.sqlite3")
    yield s
    s.close()


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


async def test_responses_survive_reopening(tmp_path) -> None:
    path = tmp_path / "gw.sqlite3"
    first = open_gateway_store(path)
    await first.create_conversation(Conversation("c1", "local", "agentao", "responses"))
    await first.put_response(
        ResponseRecord("r1", "c1", 0, "in_progress", {"status": "in_progress"})
    )
    await first.put_response(ResponseRecord("r1", "c1", 0, "completed", {"status": "completed"}))
    first.close()
    second = open_gateway_store(path)
    record = await second.get_response("r1")
    assert record.status == "completed" and record.body == {"status": "completed"}
    assert await second.delete_response("r1") is True
    assert await second.get_response("r1") is None
    second.close()


async def test_task_events_in_order_after_a_seq(store) -> None:
    await store.create_conversation(Conversation("c1", "local", "agentao", "task"))
    events = [
        TaskEvent("t1", n, "task-running", float(n), {"update": {"n": n}}) for n in range(1, 6)
    ]
    await store.append_events(events[:3], tasks=[TaskRecord("t1", "c1", "running", prompt="hi")])
    await store.append_events(events[3:])
    after = await store.events_after("t1", 2)
    assert [e.seq for e in after] == [3, 4, 5]
    assert after[0].frame() == {"seq": 3, "type": "task-running", "at": 3.0, "update": {"n": 3}}
    with pytest.raises(Exception, match="UNIQUE"):
        await store.append_events(events[:1])  # a seq is written once
    conv = await store.get_conversation("c1")
    conv.turn_count = 1
    await store.finish_task("t1", "ended", conv)  # the task and its conversation, together
    task = await store.get_task("t1")
    assert task.status == "ended" and task.ended_at is not None
    assert (await store.get_conversation("c1")).turn_count == 1
    assert [t.id for t in await store.list_tasks("c1")] == ["t1"]


async def test_conversations_rows_and_frames_in_one_write(store) -> None:
    conv = Conversation("c9", "local", "agentao", "chat")
    task = TaskRecord("t9", "c9", "running")
    frame = TaskEvent("t9", 1, "task-started", 1.0, {})
    await store.append_events([frame], tasks=[task], conversations=[conv])  # FK order kept
    conv.title, conv.session_id = "hello", "s9"
    await store.append_events([], conversations=[conv])  # an upsert
    again = await store.get_conversation("c9")
    assert (again.title, again.session_id) == ("hello", "s9")
    assert [e.seq for e in await store.events_after("t9", 0)] == [1]
