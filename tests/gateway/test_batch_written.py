"""`BatchWriter.written`: a caller waits for the batch that holds what it queued to be
stored (batches.py), the one being filled or the one being written, and hears its error."""

from __future__ import annotations

import asyncio

import pytest

from agentao.gateway.batches import BatchWriter, WriterBackoff


class Store:
    """Writes lists of names; a write waits until `release` is set, and fails for `bad`."""

    def __init__(self) -> None:
        self.stored: list[str] = []
        self.release = asyncio.Event()
        self.writing = asyncio.Event()
        self.failed: list[list[str]] = []

    async def write(self, batch: list[str]) -> None:
        self.writing.set()
        await self.release.wait()
        if "bad" in batch:
            raise RuntimeError("disk full")
        self.stored.extend(batch)

    def fail(self, batch: list[str], _exc: Exception) -> None:
        self.failed.append(batch)


def writer(store: Store) -> BatchWriter[list[str]]:
    return BatchWriter(list, store.write, store.fail, WriterBackoff(0.001, 0.001))


def holding(name: str):
    return lambda batch: name in batch


async def test_a_wait_on_the_batch_being_filled_ends_once_it_is_stored() -> None:
    store = Store()
    w = writer(store)
    w.batch.append("a")
    w.kick()
    waiting = asyncio.create_task(w.written(holding("a")))
    await store.writing.wait()
    assert not waiting.done()  # written, not yet committed
    store.release.set()
    await waiting
    assert store.stored == ["a"]


async def test_a_wait_on_the_batch_being_written_ends_with_it() -> None:
    store = Store()
    w = writer(store)
    w.batch.append("a")
    w.kick()
    await store.writing.wait()  # "a" left the batch being filled
    w.batch.append("b")
    waiting = asyncio.create_task(w.written(holding("a")))
    await asyncio.sleep(0)
    assert not waiting.done()
    store.release.set()
    await waiting
    assert "a" in store.stored


async def test_nothing_queued_is_nothing_to_wait_for() -> None:
    w = writer(Store())
    await asyncio.wait_for(w.written(holding("a")), 1)  # returns at once: nothing blocks it


async def test_a_failed_batch_raises_its_error_to_who_waits_on_it() -> None:
    store = Store()
    w = writer(store)
    w.batch.append("bad")
    w.kick()
    store.release.set()
    with pytest.raises(RuntimeError, match="disk full"):
        await w.written(holding("bad"))
    assert store.failed == [["bad"]]
