"""EventStream: numbering, turn boundaries, backlog bound."""

from __future__ import annotations

import asyncio

from agentao.client.stream import EventStream


async def test_pop_respects_the_turn_end():
    stream = EventStream(max_backlog=10)
    for item in ("a", "b", "c"):
        stream.push_update(item)
    assert stream.pop(2) == "a"
    assert stream.pop(2) == "b"
    assert stream.pop(2) is None  # "c" came after the answer: it waits for the next reader
    assert stream.pop(None) == "c"


async def test_events_take_the_position_of_the_updates_before_them():
    stream = EventStream(max_backlog=10)
    stream.push_update("u1")
    stream.push_event("permission")
    stream.push_update("u2")
    assert [stream.pop(1), stream.pop(1), stream.pop(1)] == ["u1", "permission", None]


async def test_backlog_is_bounded_only_while_nobody_reads():
    stream = EventStream(max_backlog=3)
    for i in range(5):
        stream.push_update(i)
    assert stream.drain() == [2, 3, 4]
    assert stream.dropped == 2
    stream.reading = True
    for i in range(5):
        stream.push_update(i)
    assert len(stream) == 5


async def test_changed_wakes_a_waiting_reader():
    stream = EventStream(max_backlog=3)
    waiter = asyncio.ensure_future(stream.changed())
    await asyncio.sleep(0)
    assert not waiter.done()
    stream.push_update("x")
    await asyncio.wait_for(waiter, 1)


async def test_a_burst_of_updates_sets_the_readers_event_once_and_every_read_rearms_it():
    # Event.set is a Python call: once per burst, not once per update (a relay's chunks).
    stream = EventStream(max_backlog=3)
    stream.reading = True
    sets = []
    real_set = stream._changed.set
    stream._changed.set = lambda: (sets.append(1), real_set())  # type: ignore[method-assign]
    for i in range(5):
        stream.push_update(i)
    assert len(sets) == 1
    await asyncio.wait_for(stream.changed(), 1)
    assert stream.take(None) == [0, 1, 2, 3, 4]
    waiter = asyncio.ensure_future(stream.changed())
    await asyncio.sleep(0)
    assert not waiter.done()  # read: the next update wakes the reader again
    stream.push_event("decision")
    stream.push_update(5)
    await asyncio.wait_for(waiter, 1)
    assert len(sets) == 2
    stream.wake()  # a turn's end wakes a reader whatever was pushed
    await asyncio.wait_for(stream.changed(), 1)
