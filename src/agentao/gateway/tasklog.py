"""A task's frames: numbered when emitted, persisted, and only then sent to watchers.

Theory of operation. `TaskLog.emit()` is synchronous: it numbers the frame
(seq 1, 2, ...) and queues it, so the turn that emits never waits for the disk.
One pump task per log writes whatever is queued in one transaction, then hands
each frame to every watcher's queue, in order. A watcher that subscribes and
then reads the store for `seq > after_seq` sees every frame exactly once: a
frame delivered before it subscribed is already in the store, and one in both
places is skipped by its seq (see `tasks.py`).

`ping` frames are not part of the log (no seq, never stored): the WebSocket
sends them itself while it waits.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from agentao.store.gateway import GatewayStore, TaskEvent

log = logging.getLogger("agentao.gateway")

TERMINAL = frozenset({"task-ended", "task-error"})


class TaskLog:
    """The frames of one running task."""

    def __init__(self, task_id: str, store: GatewayStore) -> None:
        self.task_id = task_id
        self._store = store
        self._seq = 0
        self._queued: list[TaskEvent] = []
        self._watchers: set[asyncio.Queue[TaskEvent]] = set()
        self._wake = asyncio.Event()
        self._pump: asyncio.Task[None] | None = None
        self._persisted = 0
        self._persisted_changed = asyncio.Event()
        self.finished = asyncio.Event()  # the terminal frame is stored and delivered

    def emit(self, type_: str, payload: dict[str, Any]) -> TaskEvent:
        """Number a frame and queue it for the store, then the watchers."""
        if self._seq and self.finished.is_set():
            raise RuntimeError(f"task {self.task_id} has ended; {type_} not emitted")
        self._seq += 1
        event = TaskEvent(self.task_id, self._seq, type_, time.time(), payload)
        self._queued.append(event)
        self._wake.set()
        if self._pump is None:
            self._pump = asyncio.get_running_loop().create_task(self._run())
        return event

    def subscribe(self) -> asyncio.Queue[TaskEvent]:
        queue: asyncio.Queue[TaskEvent] = asyncio.Queue()
        self._watchers.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[TaskEvent]) -> None:
        self._watchers.discard(queue)

    @property
    def watchers(self) -> int:
        return len(self._watchers)

    async def flushed(self) -> None:
        """Wait until every frame emitted so far is in the store."""
        target = self._seq
        while self._persisted < target:
            self._persisted_changed.clear()
            await self._persisted_changed.wait()

    def close(self) -> None:
        """Stop the pump (shutdown); frames not yet stored are lost."""
        if self._pump is not None:
            self._pump.cancel()
        self.finished.set()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            batch, self._queued = self._queued, []
            if not batch:
                continue
            try:
                await self._store.append_events(batch)
            except Exception:  # the frames still go out: a watcher must not hang on a disk error
                log.exception("task %s: could not persist %d frames", self.task_id, len(batch))
            self._persisted = batch[-1].seq
            self._persisted_changed.set()
            for event in batch:
                for queue in tuple(self._watchers):
                    queue.put_nowait(event)
            if batch[-1].type in TERMINAL:
                self.finished.set()
                return


class TaskHub:
    """The logs of tasks still running, by task id."""

    def __init__(self, store: GatewayStore) -> None:
        self.store = store
        self._logs: dict[str, TaskLog] = {}
        self._reapers: set[asyncio.Task[None]] = set()

    def open(self, task_id: str) -> TaskLog:
        task_log = self._logs[task_id] = TaskLog(task_id, self.store)
        reaper = asyncio.get_running_loop().create_task(self._forget_when_finished(task_log))
        self._reapers.add(reaper)
        reaper.add_done_callback(self._reapers.discard)
        return task_log

    def discard(self, task_id: str) -> None:
        task_log = self._logs.pop(task_id, None)
        if task_log is not None:
            task_log.close()

    def get(self, task_id: str) -> TaskLog | None:
        return self._logs.get(task_id)

    async def _forget_when_finished(self, task_log: TaskLog) -> None:
        await task_log.finished.wait()
        self._logs.pop(task_log.task_id, None)

    def close(self) -> None:
        for task_log in list(self._logs.values()):
            task_log.close()
        for reaper in list(self._reapers):
            reaper.cancel()
        self._logs.clear()


__all__ = ["TERMINAL", "TaskHub", "TaskLog"]
