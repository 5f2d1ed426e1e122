"""Writes of one loop iteration leave together, in order (server/coalesce.py)."""

from __future__ import annotations

import asyncio

from agentao.server.coalesce import CoalescingWriter


class Sink:
    def __init__(self):
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    async def drain(self) -> None:
        return None


async def test_one_iteration_one_write_in_order():
    sink = Sink()
    writer = CoalescingWriter(sink)
    for i in range(10):
        writer.write(b"%d\n" % i)
    assert sink.writes == []
    await asyncio.sleep(0)
    assert sink.writes == [b"".join(b"%d\n" % i for i in range(10))]
    writer.write(b"next\n")
    await asyncio.sleep(0)
    assert sink.writes[-1] == b"next\n"


async def test_drain_bounds_what_waits():
    sink = Sink()
    writer = CoalescingWriter(sink)
    for _ in range(100):
        writer.write(b"x")
        await writer.drain()
    assert b"".join(sink.writes) == b"x" * 65  # flushed once the bound was passed
    await asyncio.sleep(0)
    assert b"".join(sink.writes) == b"x" * 100
