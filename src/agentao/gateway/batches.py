"""One writer task per kind of log: whatever is queued is stored in one transaction.

Theory of operation. Producers (a turn emitting frames, a remote connection sending
messages) never wait for the disk: they add to the batch being filled and `kick()`.
The writer task wakes once per batch, swaps in a fresh one, and hands the full one to
`write` -- which stores it and only then delivers it to readers. Under load that is one
commit for many messages instead of one each, and a message a reader sees is always
already stored (so a reader that reconnects and reads the store misses nothing).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

B = TypeVar("B")


class BatchWriter(Generic[B]):
    """Batches of `B` (made by `new_batch`), written one after another by `write`."""

    def __init__(self, new_batch: Callable[[], B], write: Callable[[B], Awaitable[None]]) -> None:
        self._new_batch = new_batch
        self._write = write
        self.batch: B = new_batch()  # the one being filled: add to it, then kick()
        self._woken = False  # the writer was woken for the batch being filled
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()  # nothing queued and no write under way
        self._idle.set()
        self._task: asyncio.Task[None] | None = None

    def kick(self) -> None:
        """Something was added to `batch`: make sure the writer will take it."""
        if self._woken:  # once per batch: this runs for every message
            return
        self._woken = True
        self._wake.set()
        self._idle.clear()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            batch, self.batch, self._woken = self.batch, self._new_batch(), False
            await self._write(batch)
            if not self._wake.is_set():
                self._idle.set()

    async def flush(self) -> None:
        """Wait until everything queued so far is written (shutdown, tests)."""
        if self._task is not None and not self._task.done():
            await self._idle.wait()

    def close(self) -> None:
        """Stop the writer; what is not yet written is lost."""
        if self._task is not None:
            self._task.cancel()


__all__ = ["BatchWriter"]
