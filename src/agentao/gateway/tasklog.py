"""Task frames: numbered when emitted, persisted, and only then sent to watchers.

Theory of operation. `TaskLog.emit()` is synchronous: it numbers the frame
(seq 1, 2, ...) and hands it to the hub, so a turn never waits for the disk.
The hub has one writer task for every task at once: it takes whatever
conversation rows, task rows, new response rows and frames are waiting, stores
them in one transaction, and only then gives each frame to the watchers of its
task, in order. Under load that is one commit for many frames of many turns,
instead of one per frame. Every task and response row it writes names this
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
from typing import Any

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
        for queue in tuple(self._watchers):
            queue.put_nowait(event)
        if event.type in TERMINAL:
            self.finished.set()

    def close(self) -> None:
        self.stored.set()
        self.finished.set()


class TaskHub:
    """Every running task's log, and the one writer that stores their rows and frames."""

    def __init__(self, store: GatewayStore, boot_id: str) -> None:
        self.store = store
        self.boot_id = boot_id
        self._logs: dict[str, TaskLog] = {}
        self._conversations: dict[str, Conversation] = {}  # saved as they are when written
        self._rows: list[TaskRecord] = []
        self._responses: list[ResponseRecord] = []
        self._frames: list[TaskEvent] = []
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()  # nothing queued and no write under way
        self._idle.set()
        self._writer: asyncio.Task[None] | None = None

    def open(self, record: TaskRecord) -> TaskLog:
        """A log for a new task; its row is written before its first frame."""
        task_log = self._logs[record.id] = TaskLog(record.id, self)
        record.boot_id = self.boot_id
        self._rows.append(record)
        self._kick()
        return task_log

    def start_response(self, record: ResponseRecord) -> None:
        """Queue a new response's row (in progress), written unless one is there by then:
        its final row, written directly when it ends, must never be overwritten."""
        record.boot_id = self.boot_id
        self._responses.append(record)
        self._kick()

    async def flush(self) -> None:
        """Wait until everything queued so far is stored (shutdown)."""
        if self._writer is not None and not self._writer.done():
            await self._idle.wait()

    def save_conversation(self, conversation: Conversation) -> None:
        """Queue a conversation's row (insert or update) ahead of the next task rows."""
        self._conversations[conversation.id] = conversation
        self._kick()

    def get(self, task_id: str) -> TaskLog | None:
        return self._logs.get(task_id)

    def queue(self, event: TaskEvent) -> None:
        self._frames.append(event)
        self._kick()

    def _kick(self) -> None:
        self._wake.set()
        self._idle.clear()
        if self._writer is None:
            self._writer = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            convs, rows, frames = list(self._conversations.values()), self._rows, self._frames
            responses = self._responses
            self._conversations, self._rows, self._frames, self._responses = {}, [], [], []
            if convs or rows or frames or responses:
                await self._write(convs, rows, frames, responses)
            if not self._wake.is_set():
                self._idle.set()

    async def _write(
        self,
        convs: list[Conversation],
        rows: list[TaskRecord],
        frames: list[TaskEvent],
        responses: list[ResponseRecord],
    ) -> None:
        try:
            await self.store.append_events(
                frames, tasks=rows, conversations=convs, responses=responses
            )
        except Exception:  # frames still go out: a watcher must not hang on a disk error
            log.exception("could not store %d task rows and %d frames", len(rows), len(frames))
        for row in rows:
            if row.id in self._logs:
                self._logs[row.id].stored.set()
        for frame in frames:
            task_log = self._logs.get(frame.task_id)
            if task_log is None:
                continue
            task_log.deliver(frame)
            if task_log.finished.is_set():
                del self._logs[frame.task_id]

    def close(self) -> None:
        """Stop the writer (shutdown); frames not yet stored are lost."""
        if self._writer is not None:
            self._writer.cancel()
        for task_log in self._logs.values():
            task_log.close()
        self._logs.clear()


__all__ = ["TERMINAL", "TaskHub", "TaskLog"]
