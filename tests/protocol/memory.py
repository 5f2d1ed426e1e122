"""In-memory byte pipes, so two endpoints can talk without the OS (cf. h11's tests/helpers.py)."""

from __future__ import annotations

import asyncio


class MemoryWriter:
    """Writes into an asyncio.StreamReader that the other side reads from."""

    def __init__(self, sink: asyncio.StreamReader) -> None:
        self.sink = sink
        self.log: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.log.append(data)
        self.sink.feed_data(data)

    async def drain(self) -> None:
        await asyncio.sleep(0)

    def close(self) -> None:
        self.sink.feed_eof()


def pipe() -> tuple[asyncio.StreamReader, MemoryWriter]:
    reader = asyncio.StreamReader()
    return reader, MemoryWriter(reader)
