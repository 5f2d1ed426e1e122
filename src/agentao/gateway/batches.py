"""One writer task per kind of log: whatever is queued is stored in one transaction.

Theory of operation. Producers (a turn emitting frames, a remote connection sending
messages) never wait for the disk: they add to the batch being filled and `kick()`.
The writer task wakes once per batch, lets the event loop turn once (what was made
ready with the batch's first message, a turn's prompt to its agent, goes ahead of a
commit that may run on the loop: store/sqlite.py), swaps in a fresh batch, and hands the
full one to `write` -- which stores it and only then delivers it to readers. Under load that is one
commit for many messages instead of one each, and a message a reader sees is always
already stored (so a reader that reconnects and reads the store misses nothing).

The writer is supervised: when `write` raises (the store failed, or a bug), the error is
logged with its traceback and the batch is handed to `fail`, which tells its waiters
(nothing of it is delivered as if stored). The writer then waits a back-off that doubles
with each failure in a row (`WriterBackoff`) and goes on with the next batch, so one bad
batch never stalls every later message.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from agentao.credentials import redact_secrets
from agentao.gateway.config import Limits

B = TypeVar("B")
log = logging.getLogger("agentao.gateway")


@dataclass(frozen=True, slots=True)
class WriterBackoff:
    """How long the writer waits after a failed batch before it writes the next one:
    `first_seconds`, doubled for each failure in a row, at most `max_seconds`."""

    first_seconds: float = 0.05
    max_seconds: float = 2.0

    @classmethod
    def of(cls, limits: Limits) -> WriterBackoff:
        return cls(limits.writer_backoff_seconds, limits.max_writer_backoff_seconds)

    def after(self, failures: int) -> float:
        return min(self.first_seconds * 2 ** max(failures - 1, 0), self.max_seconds)


def describe(exc: BaseException) -> str:
    """A store error in words a reader may see: its type and message, secrets redacted."""
    text = redact_secrets(str(exc)).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class BatchWriter(Generic[B]):
    """Batches of `B` (made by `new_batch`), written one after another by `write`; a batch
    whose write raised goes to `fail` (see the module docstring)."""

    def __init__(
        self,
        new_batch: Callable[[], B],
        write: Callable[[B], Awaitable[None]],
        fail: Callable[[B, Exception], None],
        backoff: WriterBackoff | None = None,
    ) -> None:
        self._new_batch = new_batch
        self._write = write
        self._fail = fail
        self._backoff = backoff or WriterBackoff()
        self.failures = 0  # failed batches in a row
        self.batch: B = new_batch()  # the one being filled: add to it, then kick()
        self._writing: B | None = None  # the one being written
        # Who waits for the batch being filled, and for the one being written (`written`).
        self._waiters: list[asyncio.Future[None]] = []
        self._writing_waiters: list[asyncio.Future[None]] = []
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
        if self._task is None or self._task.done():  # never started, or died: (re)start
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            # One turn of the loop before taking the batch: what was made ready with its
            # first message (a turn's prompt to its agent) goes first, ahead of a commit
            # that may run on the loop itself (store/sqlite.py, inline); what it adds
            # meanwhile joins this batch.
            await asyncio.sleep(0)
            self._wake.clear()
            batch, self.batch, self._woken = self.batch, self._new_batch(), False
            self._writing, self._writing_waiters, self._waiters = batch, self._waiters, []
            if await self._write_one(batch):
                self.failures = 0
            else:
                self.failures += 1
                await asyncio.sleep(self._backoff.after(self.failures))
            if not self._wake.is_set():
                self._idle.set()

    async def _write_one(self, batch: B) -> bool:
        """Write one batch; whether it was written. A failure is logged and failed to the
        batch's waiters here, so the loop lives on."""
        try:
            await self._write(batch)
        except asyncio.CancelledError:  # closed: who waits on the batch hears it
            _settle(self._written(), RuntimeError("the store writer was stopped"))
            raise
        except Exception as exc:
            log.exception("the store writer failed a batch: %s", describe(exc))
            _settle(self._written(), exc)
            try:
                self._fail(batch, exc)
            except Exception:  # telling the waiters must not take the writer down
                log.exception("the store writer could not fail a batch to its waiters")
            return False
        _settle(self._written(), None)
        return True

    def _written(self) -> list[asyncio.Future[None]]:
        """The batch being written is done: who waited on it (some came meanwhile)."""
        waiters, self._writing_waiters, self._writing = self._writing_waiters, [], None
        return waiters

    async def written(self, holds: Callable[[B], bool]) -> None:
        """Wait until the last batch that `holds` something (the one being filled, else
        the one being written) is stored; at once when neither does. Raises the error
        its write raised."""
        if holds(self.batch):
            waiters = self._waiters
        elif self._writing is not None and holds(self._writing):
            waiters = self._writing_waiters
        else:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters.append(waiter)
        await waiter

    async def flush(self) -> None:
        """Wait until everything queued so far is written (shutdown, tests)."""
        if self._task is not None and not self._task.done():
            await self._idle.wait()

    def close(self) -> None:
        """Stop the writer; what is not yet written is lost."""
        if self._task is not None:
            self._task.cancel()


def _settle(waiters: list[asyncio.Future[None]], error: Exception | None) -> None:
    for waiter in waiters:
        if waiter.done():
            continue
        if error is None:
            waiter.set_result(None)
        else:
            waiter.set_exception(error)


__all__ = ["BatchWriter", "WriterBackoff", "describe"]
