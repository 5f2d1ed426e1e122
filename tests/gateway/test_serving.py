"""`serving.settle_heap`: the garbage collector of a long-lived gateway.

A streamed answer's updates wait in the task log until the store's next batch holds
them: hundreds of frames, each a few dicts decoded from the agent's line. At CPython's
default young threshold (700) the collector scanned them every ~70 updates, found them
alive and promoted them to be scanned again (~10% of the gateway's CPU per relayed
chunk, `bench/gateway.py`'s relay row). Real frames, a real TaskHub on a real SQLite
store; the collector's own callbacks count its young scans.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from agentao.gateway.batches import WriterBackoff
from agentao.gateway.config import Limits
from agentao.gateway.serving import settle_heap
from agentao.gateway.tasklog import TaskHub
from agentao.store.gateway import open_gateway_store
from agentao.store.gateway_records import Conversation, TaskRecord

# One agent update as the client decodes it off the wire (dicts in dicts, as in the relay).
UPDATE_LINE = b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}'
IN_FLIGHT = 2_000  # updates emitted before the writer stores any: one batch in flight


@pytest.fixture
def collector() -> Iterator[None]:
    """Leave the collector as the test found it (thresholds, nothing frozen)."""
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def test_settle_heap_freezes_what_is_loaded_and_sets_the_young_threshold(
    collector: None,
) -> None:
    settle_heap(Limits(gc_young_objects=12_345))
    assert gc.get_threshold()[0] == 12_345
    assert gc.get_freeze_count() > 0


async def _young_scans_while_streaming(tmp_path: Path) -> int:
    """How many young collections run while one batch of updates waits for the store."""
    store = open_gateway_store(tmp_path / "gateway.sqlite3")
    await store.create_conversation(Conversation("conv_1", "local", "agentao", "task"))
    hub = TaskHub(store, "boot_1", backoff=WriterBackoff(0, 0))
    task = await hub.open(TaskRecord("task_1", "conv_1", "running"))
    await hub.flush()
    scans = 0

    def count(phase: str, info: dict[str, Any]) -> None:
        nonlocal scans
        scans += phase == "start" and info["generation"] == 0

    gc.collect()  # counts from zero
    gc.callbacks.append(count)
    try:
        for _ in range(IN_FLIGHT):
            task.emit("task-running", {"update": msgspec.json.decode(UPDATE_LINE)})
    finally:
        gc.callbacks.remove(count)
    await hub.flush()
    hub.close()
    await store.close()
    return scans


async def test_a_batch_of_streamed_updates_in_flight_is_not_scanned_young(
    tmp_path: Path, collector: None
) -> None:
    settle_heap(Limits())
    assert await _young_scans_while_streaming(tmp_path) == 0


async def test_control_at_the_default_threshold_the_same_batch_is_scanned(
    tmp_path: Path, collector: None
) -> None:
    """The measurement can see a young scan: at CPython's 700 the same run has several."""
    gc.set_threshold(700, *gc.get_threshold()[1:])
    assert await _young_scans_while_streaming(tmp_path) > 0
