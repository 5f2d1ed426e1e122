"""Task frames: numbered when emitted, persisted, and only then sent to watchers.

Theory of operation. `TaskLog.emit()` is synchronous: it numbers the frame
(seq 1, 2, ...) and hands it to the hub, so a turn never waits for the disk.
The hub has one writer (`batches.BatchWriter`) for every task at once: it takes
whatever conversation rows, task rows, new response rows, frames and ended tasks are
waiting (a `_Batch`), stores them in one transaction, and only then gives each
frame to the watchers of its task, in order. Under load that is one commit for
many frames and many turns' ends, instead of one per frame or per turn. Every task and response row it writes names this
gateway process as its owner (`boot_id`, see `boots.py`).

A watcher that subscribes and then reads the store for `seq > after_seq` sees
every frame exactly once: a frame delivered before it subscribed is already in
the store, and one found in both places is skipped by its seq (see `tasks.py`).
`ping` frames are not part of the log (no seq, never stored): the WebSocket
sends them itself while it waits.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agentao.gateway.batches import BatchWriter
from agentao.store.gateway import GatewayStore
from agentao.store.gateway_records import Conversation, ResponseRecord, TaskEvent, TaskRecord

log = logging.getLogger("agentao.gateway")

TERMINAL = frozenset({"task-ended", "task-error"})


class TaskLog:
    """The frames of one running task, and who is watching them."""

    def __init__(self, task_id: str, hub: TaskHub) -> None:
        self.task_id = task_id
        self._hub = hub
        self._seq = 0
        self._watchers: set[asyncio.Queue[TaskEvent]] = set()
        self.stored = asyncio.Event()  # the task's row is in the store
        self.finished = asyncio.Event()  # the terminal frame is stored and delivered
        self.closed = asyncio.Event()  # the task's row says how it ended (see `TaskHub.end`)

    def emit(self, type_: str, payload: dict[str, Any]) -> TaskEvent:
        """Number a frame and queue it for the store, then the watchers."""
        if self.finished.is_set():
            raise RuntimeError(f"task {self.task_id} has ended; {type_} not emitted")
        self._seq += 1
        event = TaskEvent(self.task_id, self._seq, type_, time.time(), payload)
        self._hub.queue(event)
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

    def deliver(self, event: TaskEvent) -> None:
        if self._watchers:
            for queue in tuple(self._watchers):
                queue.put_nowait(event)
        if event.type in TERMINAL:
            self.finished.set()

    def close(self) -> None:
        self.stored.set()
        self.finished.set()
        self.closed.set()


@dataclass(slots=True)
class _Batch:
    """Everything queued for the next transaction, in the order it is written."""

    conversations: dict[str, Conversation] = field(default_factory=dict)  # saved as they are then
    rows: list[TaskRecord] = field(default_factory=list)
    responses: list[ResponseRecord] = field(default_factory=list)
    frames: list[TaskEvent] = field(default_factory=list)
    ended: list[tuple[TaskLog, TaskRecord]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.conversations or self.rows or self.responses or self.frames or self.ended)


class TaskHub:
    """Every running task's log, and the one writer that stores their rows and frames."""

    def __init__(
        self,
        store: GatewayStore,
        boot_id: str,
        stored: Callable[[list[tuple[str, str]]], Awaitable[None]] | None = None,
    ) -> None:
        self.store = store
        self.boot_id = boot_id
        # Told which (task, conversation) got frames: other replicas' watchers.
        self._stored = stored
        self._conversation_of: dict[str, str] = {}  # task id -> its conversation
        self._logs: dict[str, TaskLog] = {}
        self._writer = BatchWriter(_Batch, self._write)

    def open(self, record: TaskRecord) -> TaskLog:
        """A log for a new task; its row is written before its first frame."""
        task_log = self._logs[record.id] = TaskLog(record.id, self)
        self._conversation_of[record.id] = record.conversation_id
        record.boot_id = self.boot_id
        self._writer.batch.rows.append(record)
        self._writer.kick()
        return task_log

    def end(self, task_log: TaskLog, status: str, error: str | None = None) -> None:
        """Queue the task's end (its status, and why if it failed); `task_log.closed` is
        set once it is stored. Queue its conversation's row with it (`save_conversation`)."""
        record = TaskRecord(task_log.task_id, "", status, ended_at=time.time(), error=error)
        self._writer.batch.ended.append((task_log, record))
        self._writer.kick()

    def start_response(self, record: ResponseRecord) -> None:
        """Queue a new response's row (in progress), written unless one is there by then:
        its final row, written directly when it ends, must never be overwritten."""
        record.boot_id = self.boot_id
        self._writer.batch.responses.append(record)
        self._writer.kick()

    async def flush(self) -> None:
        """Wait until everything queued so far is stored (shutdown)."""
        await self._writer.flush()

    def save_conversation(self, conversation: Conversation) -> None:
        """Queue a conversation's row (insert or update) ahead of the next task rows."""
        self._writer.batch.conversations[conversation.id] = conversation
        self._writer.kick()

    def get(self, task_id: str) -> TaskLog | None:
        return self._logs.get(task_id)

    def queue(self, event: TaskEvent) -> None:
        self._writer.batch.frames.append(event)
        self._writer.kick()

    async def _write(self, batch: _Batch) -> None:
        try:
            await self.store.append_events(
                batch.frames,
                tasks=batch.rows,
                conversations=list(batch.conversations.values()),
                responses=batch.responses,
                ended=[record for _log, record in batch.ended],
            )
        except Exception:  # frames still go out: a watcher must not hang on a disk error
            log.exception(
                "could not store %d task rows and %d frames", len(batch.rows), len(batch.frames)
            )
        for row in batch.rows:
            if row.id in self._logs:
                self._logs[row.id].stored.set()
        for frame in batch.frames:
            task_log = self._logs.get(frame.task_id)
            if task_log is None:
                continue
            task_log.deliver(frame)
            if task_log.finished.is_set():
                del self._logs[frame.task_id]
        for task_log, _record in batch.ended:
            task_log.closed.set()
        ids = {f.task_id for f in batch.frames} | {r.id for _log, r in batch.ended}
        woken = sorted((i, self._conversation_of.get(i, "")) for i in ids)
        for _log, record in batch.ended:
            self._conversation_of.pop(record.id, None)
        if self._stored is not None and woken:
            await self._stored(woken)

    def close(self) -> None:
        """Stop the writer (shutdown); frames not yet stored are lost."""
        self._writer.close()
        for task_log in self._logs.values():
            task_log.close()
        self._logs.clear()


__all__ = ["TERMINAL", "TaskHub", "TaskLog"]
