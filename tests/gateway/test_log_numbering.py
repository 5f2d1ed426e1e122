"""A conversation's log is numbered on from where it ends without asking the store each
turn, while this gateway has held the conversation throughout (`sessions.py`
`LiveConversation.log_seq`, `tasklog.py` `TaskHub.open`); the numbers stay 1, 2, 3, ...
"""

from __future__ import annotations

import threading

import pytest

from agentao.store.gateway_records import TaskRecord

LAST_SEQ_READ = "max(last_seq)"


def chat(gw, key: str, text: str) -> str:
    """Its conversation's id, once the turn answered."""
    raw = gw.openai().chat.completions.with_raw_response.create(
        model="agentao",
        messages=[{"role": "user", "content": text}],
        extra_headers={"X-Session-Id": key},
    )
    assert raw.parse().choices[0].message.content
    task = gw.run(gw.gateway.store.get_task(raw.headers["x-task-id"]))
    return task.conversation_id


def log_seqs(gw, conversation_id: str) -> list[int]:
    return [e.seq for e in gw.run(gw.gateway.store.events_after(conversation_id, 0))]


# SQLite's trace hook sees every statement (PostgreSQL's queries have no such hook here).
@pytest.mark.parametrize("gateway_store", ["sqlite"], indirect=True)
def test_turns_of_a_held_conversation_read_no_log_end(gateway_factory) -> None:
    """New conversations and the next turns of one held here number their frames from
    memory: no turn reads where the log ends (one store round-trip on every turn's way
    to its first token)."""
    gw = gateway_factory()
    reads: list[str] = []
    lock = threading.Lock()

    def count(sql: str) -> None:  # runs on the store's threads
        if LAST_SEQ_READ in sql.lower():
            with lock:
                reads.append(sql)

    gw.gateway.store.db.trace(count)
    try:
        for text in ("one", "two", "three"):
            chat(gw, "numbered", text)
    finally:
        gw.gateway.store.db.trace(None)
    assert reads == []


def test_the_log_numbers_stay_contiguous_across_turns(gateway_factory) -> None:
    """Control: numbered from memory, three turns' frames are 1..N with no gap or repeat,
    as the store holds them."""
    gw = gateway_factory()
    ids = {chat(gw, "contiguous", text) for text in ("one", "two", "three")}
    assert len(ids) == 1
    conversation_id = ids.pop()
    seqs = log_seqs(gw, conversation_id)
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) >= 6


def test_a_conversation_forgotten_here_reads_its_log_end_again(gateway_factory) -> None:
    """A conversation dropped from memory (idle, or another replica's meanwhile) asks the
    store where its log ends on its next turn, and numbers on from there."""
    gw = gateway_factory()
    conversation_id = chat(gw, "forgotten", "one")
    before = log_seqs(gw, conversation_id)
    assert gw.run(gw.gateway.conversations.sweep(0)) == 1
    chat(gw, "forgotten", "two")
    seqs = log_seqs(gw, conversation_id)
    assert seqs[: len(before)] == before
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) > len(before)


def settle_a_dead_replicas_task(gw, conversation_id: str) -> None:
    """A task a vanished replica ran in this conversation, settled as dead."""
    store = gw.gateway.store
    dead = TaskRecord("task_dead", conversation_id, "running")
    gw.run(store.append_events([], tasks=[dead]))
    gw.run(store.db.execute("UPDATE gw_tasks SET boot_id = 'boot_gone' WHERE id = 'task_dead'"))
    assert gw.run(gw.gateway.recovery.settle_boot("boot_gone", "it went away")) == 1


@pytest.mark.parametrize("gateway_store", ["postgres"], indirect=True)
def test_on_a_shared_store_a_turn_numbers_after_a_frame_another_writer_appended(
    gateway_factory,
) -> None:
    """On a shared store another replica may append to a log nobody holds (settling a
    dead replica's task writes its last frame): the next turn here numbers on after it."""
    gw = gateway_factory()
    conversation_id = chat(gw, "shared", "one")
    store = gw.gateway.store
    gw.run(store.db.execute("DELETE FROM gw_leases WHERE conversation_id = %s", (conversation_id,)))
    settle_a_dead_replicas_task(gw, conversation_id)
    chat(gw, "shared", "two")
    log = gw.run(store.events_after(conversation_id, 0))
    assert [e.seq for e in log] == list(range(1, len(log) + 1))
    assert [e.task_id for e in log].count("task_dead") == 1  # its last frame, in the middle


@pytest.mark.parametrize("gateway_store", ["postgres"], indirect=True)
def test_a_dead_task_settled_while_the_conversation_is_held_here_leaves_its_log_alone(
    gateway_factory,
) -> None:
    """While this replica holds the conversation, settling another's dead task in it puts
    no frame in the log (it would take a seq this one is about to write); the task is
    still settled, and the turns here number on 1, 2, 3, ..."""
    gw = gateway_factory()
    conversation_id = chat(gw, "held", "one")
    settle_a_dead_replicas_task(gw, conversation_id)
    chat(gw, "held", "two")
    store = gw.gateway.store
    log = gw.run(store.events_after(conversation_id, 0))
    assert [e.seq for e in log] == list(range(1, len(log) + 1))
    assert "task_dead" not in {e.task_id for e in log}
    dead = gw.run(store.get_task("task_dead"))
    assert dead is not None and (dead.status, dead.error) == ("error", "it went away")
