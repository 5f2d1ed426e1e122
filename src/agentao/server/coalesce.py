"""Writes made in one event-loop iteration leave in one system call.

The endpoint writes each message as it is produced. Relaying a fast LLM stream,
that is one `write(2)` per `session/update`, each waking the client. This writer
keeps what was written during the current loop iteration and hands it to the
transport at the end of that iteration (`call_soon`), in order; `drain()` first
flushes, so nothing waits behind back-pressure unseen and order never changes.
"""

from __future__ import annotations

import asyncio
from typing import Any


class CoalescingWriter:
    def __init__(self, writer: Any) -> None:
        self._writer = writer
        self._parts: list[bytes] = []
        self._scheduled = False

    def write(self, data: bytes) -> None:
        self._parts.append(data)
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        self._scheduled = False
        if self._parts:
            data = b"".join(self._parts)
            self._parts.clear()
            self._writer.write(data)

    async def drain(self) -> None:
        if len(self._parts) > 64:  # bound what waits here; the transport has back-pressure
            self.flush()
        await self._writer.drain()

    def close(self) -> None:
        self.flush()
        self._writer.close()


__all__ = ["CoalescingWriter"]
