"""One log per conversation: every frame of every turn numbered once, per conversation.

Real gateways on real stores (SQLite and PostgreSQL), the task stream over a real
WebSocket; the hub's conversation watch on a real SQLite store.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import connect

from agentao.gateway.batches import WriterBackoff
from agentao.gateway.config import ConfigError, Limits, config_from_dict
from agentao.gateway.tasklog import TaskHub
from agentao.store.gateway import open_gateway_store
from agentao.store.gateway_records import Conversation, TaskEvent, TaskRecord
from tests.gateway.conftest import SHARED_ON_EACH_STORE, LiveGateway
from tests.gateway.test_tasks import frames, start_task

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
