"""A conversation's log: frames numbered when emitted, persisted, only then sent to watchers.

Theory of operation. A conversation has one log: the frames of all its tasks (turns),
numbered per *conversation* (seq 1, 2, ... across its tasks). `TaskHub.open()` opens a
task's `TaskLog`, numbering on from the conversation's last stored seq: when no task of
the conversation is open here, the caller says where its log ends if it knows (it created
the conversation, or held it since its last task here ended, all of it stored: see
`sessions.py`, `LiveConversation.log_seq`), else it is read from the store (one indexed
read, which also finds what another replica, or a settled dead gateway, appended
meanwhile); one turn at a time per conversation: nobody else numbers it while open here.
`TaskLog.emit()` is synchronous: it numbers the frame and hands it to the hub, so a
turn never waits for the disk. `TaskLog.emit_run()` does the same for a burst of
streamed updates received at once, in one call (no Python step per update: the relay's
cost per chunk, `bench/gateway.py`).
The hub has one writer (`batches.BatchWriter`) for every task at once: it takes
whatever conversation rows, task rows, new response rows, frames and ended tasks are
waiting (a `_Batch`), stores them in one transaction, and only then gives each
frame to the watchers of its task, in order. Under load that is one commit for
many frames and many turns' ends, instead of one per frame or per turn. Every task and response row it writes names this
gateway process as its owner (`boot_id`, see `boots.py`).

Two kinds of watcher: a task's (`TaskLog.watch`: its frames only) and a
conversation's (`TaskHub.watch_conversation`: every frame of its log, whichever task).
The writer hands a task's watchers each run of its frames in a batch at once: a watcher
with `put_frames` (a turn's inbox, which only needs to know how far the log is stored)
takes the run in one call, any other one frame at a time (`put_nowait`). That is one
call per batch instead of one per streamed update on the hot path.
A watcher that subscribes and then reads the store for `seq > after_seq`
(`store.task_events` / `store.events_after`) sees every frame exactly once: a frame
delivered before it subscribed is already in the store, and one found in both places
is skipped by its seq (see `tasks.py`; `remote/relay.py` watches a conversation).
`ping` frames are not part of the log (no seq, never stored): the WebSocket
sends them itself while it waits.

Notes. What an agent session sends while no turn of it runs is part of the log too:
`TaskHub.note()` appends a frame of no task (`task_id` `NO_TASK`, a `session-update`),
numbered like any frame: on from the hub's count while a task or note of the
conversation is open or unstored here, else from where the store says the log ends
(read first, later notes waiting in order; a task opening meanwhile waits for it). A
note counts as a user of the conversation's numbering until stored, and a caller's
`log_end` known from before a note is not trusted (`open` reads the store). It is
stored by the same writer, then given to the conversation's watchers (in seq order
with the batch's task frames), never a task's; a note the store refuses gives them a
`task-error` (`store_failed`, no seq) and drops the conversation's notes queued next.

Stored before sent, under failure too. When a batch cannot be stored (or the writer
fails it for any other reason, see `batches.py`), none of its frames is delivered. Each
task with something in that batch *fails*: its watchers (and its conversation's) get one last `task-error` frame
with code `store_failed` and no seq (it is not part of the log: nothing stored it), its
later frames are dropped, and `failed` is set so the turn is cancelled (`turns.py`).
A task's end that was in such a batch is queued once more without the frames: when the
frames were what the store refused -- a seq another replica already wrote, because this
one stalled past its lease and the conversation moved on without it -- the task's row
still says why it stopped, and the other replica's log keeps its own frames.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from itertools import groupby, repeat
from operator import attrgetter
from typing import Any, Protocol

from agentao.gateway.batches import BatchWriter, WriterBackoff, describe
from agentao.store.gateway import GatewayStore
from agentao.store.gateway_records import (
    NO_TASK,
    Conversation,
    LogNote,
    ResponseRecord,
    TaskEvent,
    TaskRecord,
)

log = logging.getLogger("agentao.gateway")
TERMINAL = frozenset({"task-ended", "task-error"})
STORE_FAILED = "store_failed"  # the error code of a task whose frames could not be stored
UNSTORED = 0  # the seq of a frame no store holds: a store failure's `task-error`
_task_of = attrgetter("task_id")
# The type of a frame of no task: an update the agent sent while no turn ran (`note`).
SESSION_UPDATE = "session-update"


class Watcher(Protocol):
    """Whoever is given a task's frames as they are stored (a WebSocket's queue, a turn's
    inbox). One that also has `put_frames(frames)` is given each stored run of a task's
    frames (in order, never empty) in that one call instead."""

    def put_nowait(self, item: TaskEvent, /) -> None: ...


def wire_frame(event: TaskEvent) -> dict[str, Any]:
    """A frame as a watcher is sent it: one that was never stored carries no seq."""
    frame = event.frame()
    if event.seq == UNSTORED:
        del frame["seq"]
    return frame


class TaskLog:
    """The frames of one running task, and who is watching them."""

    def __init__(self, task_id: str, conversation_id: str, hub: TaskHub) -> None:
        self.task_id = task_id
        self.conversation_id = conversation_id
        self._hub = hub
        self._watchers: set[Watcher] = set()
        self.stored = asyncio.Event()  # the task's row is in the store (or failed: `failure`)
        self.finished = asyncio.Event()  # the terminal frame is stored and delivered
        self.closed = asyncio.Event()  # the task's row says how it ended (see `TaskHub.end`)
        self.failed = asyncio.Event()  # a batch of this task could not be stored
        self.failure: TaskEvent | None = None  # then: the `task-error` its watchers got
        self.last_seq = 0  # the seq of its last frame numbered (its log ends there once stored)
        self._end_seq = 0  # the seq of its terminal frame, once emitted (later ones: dropped)
        # What is still open when the terminal frame comes says how it ended, ahead of it.
        self._closers: dict[str, Callable[[], None]] = {}

    def emit(self, type_: str, payload: dict[str, Any]) -> TaskEvent:
        """Number a frame and queue it for the store, then the watchers. Once the store
        failed the task, nothing more is queued: what follows could only leave a gap."""
        if self.failure is not None:
            return TaskEvent(self.task_id, UNSTORED, type_, time.time(), payload)
        if self.finished.is_set():
            raise RuntimeError(f"task {self.task_id} has ended; {type_} not emitted")
        if type_ in TERMINAL and not self._end_seq:
            self._close_open()
        seq = self.last_seq = self._hub.number(self.conversation_id)
        if type_ in TERMINAL and not self._end_seq:
            self._end_seq = seq
        event = TaskEvent(self.task_id, seq, type_, time.time(), payload)
        self._hub.queue(event)
        return event

    def until_end(self, key: str, close: Callable[[], None]) -> None:
        """`close` runs right before the task's terminal frame, if `key` is still open then
        (`ended_open`): a question the turn ends with says so in the log, ahead of the end,
        whichever of the two the event loop gets to first."""
        self._closers[key] = close

    def ended_open(self, key: str) -> None:
        """`key` closed on its own: nothing to run at the end for it."""
        self._closers.pop(key, None)

    def _close_open(self) -> None:
        closers, self._closers = list(self._closers.values()), {}
        for close in closers:
            close()

    def emit_run(self, type_: str, payloads: Sequence[dict[str, Any]]) -> int:
        """`emit` a frame of type `type_` (not a terminal one) for each of `payloads`, in
        order -- a burst of streamed updates, numbered and queued in one call -- and
        return the seq of the first (`UNSTORED` once the store failed the task: nothing
        is queued then)."""
        if self.failure is not None:
            return UNSTORED
        if self.finished.is_set():
            raise RuntimeError(f"task {self.task_id} has ended; {type_} not emitted")
        if type_ in TERMINAL:
            raise ValueError(f"a run of frames has no terminal frame: {type_}")
        first = self._hub.append_run(self.task_id, self.conversation_id, type_, payloads)
        self.last_seq = first + len(payloads) - 1
        return first

    def subscribe(self) -> asyncio.Queue[TaskEvent]:
        queue: asyncio.Queue[TaskEvent] = asyncio.Queue()
        self.watch(queue)
        return queue

    def watch(self, watcher: Watcher) -> None:
        """Give `watcher` every frame from now on, as it is stored; one that comes after a
        store failure is given that failure at once."""
        self._watchers.add(watcher)
        if self.failure is not None:
            watcher.put_nowait(self.failure)

    def unsubscribe(self, watcher: Watcher) -> None:
        self._watchers.discard(watcher)

    @property
    def watchers(self) -> int:
        return len(self._watchers)

    def deliver(self, frames: Sequence[TaskEvent]) -> Sequence[TaskEvent]:
        """Give the watchers a stored run of this task's frames, in order, up to its
        terminal frame (one emitted after it is dropped, as it always was); what was
        given."""
        end = self._end_seq
        if end and frames[-1].seq >= end:
            frames = [frame for frame in frames if frame.seq <= end]
            if not frames:
                return frames
        for watcher in tuple(self._watchers):
            put_frames = getattr(watcher, "put_frames", None)
            if put_frames is not None:
                put_frames(frames)
            else:
                for frame in frames:
                    watcher.put_nowait(frame)
        if end and frames[-1].seq == end:
            self.finished.set()
        return frames

    def fail(self, error: dict[str, Any]) -> TaskEvent | None:
        """A batch of this task was not stored: its watchers get `error` as a `task-error`
        with no seq, and the task takes no more frames; that frame (None: failed or
        finished already)."""
        if self.failure is not None or self.finished.is_set():
            return None
        self.failure = TaskEvent(
            self.task_id, UNSTORED, "task-error", time.time(), {"error": error}
        )
        for watcher in tuple(self._watchers):
            watcher.put_nowait(self.failure)
        self.stored.set()  # nobody waits on a row that will not come
        self.failed.set()
        self.finished.set()
        return self.failure

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
    notes: list[LogNote] = field(default_factory=list)  # frames of no task

    def __bool__(self) -> bool:
        return bool(
            self.conversations
            or self.rows
            or self.responses
            or self.frames
            or self.ended
            or self.notes
        )


class TaskHub:
    """Every running task's log, and the one writer that stores their rows and frames."""

    def __init__(
        self,
        store: GatewayStore,
        boot_id: str,
        stored: Callable[[list[tuple[str, str]]], Awaitable[None]] | None = None,
        backoff: WriterBackoff | None = None,
    ) -> None:
        self.store = store
        self.boot_id = boot_id
        # Told which (task, conversation) got frames: other replicas' watchers.
        self._stored = stored
        self._conversation_of: dict[str, str] = {}  # task id -> its conversation
        self._logs: dict[str, TaskLog] = {}
        # Conversation -> its last seq numbered, while it has a task open or a note
        # unstored here (its users).
        self._last_seq: dict[str, int] = {}
        self._users: dict[str, int] = {}  # conversation -> its tasks not closed, notes unstored
        # Notes of a conversation whose log end is being read (`note`), waiting in order.
        self._unnumbered: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        self._learning: dict[str, asyncio.Task[None]] = {}  # conversation -> that read
        # Noted since their last task opened here: the caller's `log_end` may predate it.
        self._noted: set[str] = set()
        self._readers: dict[str, set[Watcher]] = {}  # conversation -> who watches its log
        self._retried: set[str] = set()  # tasks whose end is written again, once (`_fail`)
        self._writer = BatchWriter(_Batch, self._write, self._fail, backoff)

    async def open(self, record: TaskRecord, log_end: int | None = None) -> TaskLog:
        """A log for a new task of `record.conversation_id`, numbering on from that
        conversation's last stored seq: `log_end` when the caller knows it (it held the
        conversation since its last task here ended, or created it, and nothing was noted
        since), else read from the store. Its row is written before its first frame."""
        conversation_id = record.conversation_id
        self._users[conversation_id] = self._users.get(conversation_id, 0) + 1  # before waiting
        try:
            learning = self._learning.get(conversation_id)
            if learning is not None:  # a note is learning where the log ends: number after it
                await asyncio.shield(learning)
            if conversation_id not in self._last_seq:
                if conversation_id in self._noted:  # a note moved the end the caller knew
                    log_end = None
                last = await self.store.last_seq(conversation_id) if log_end is None else log_end
                self._last_seq.setdefault(conversation_id, last)
        except BaseException:
            self._release(conversation_id)
            raise
        self._noted.discard(conversation_id)
        task_log = self._logs[record.id] = TaskLog(record.id, conversation_id, self)
        self._conversation_of[record.id] = conversation_id
        record.boot_id = self.boot_id
        self._writer.batch.rows.append(record)
        self._writer.kick()
        return task_log

    def number(self, conversation_id: str) -> int:
        """The next seq of an open conversation's log."""
        seq = self._last_seq[conversation_id] = self._last_seq[conversation_id] + 1
        return seq

    def _closed(self, task_id: str) -> None:
        """A task is over (its end stored, or failed): see `_release`."""
        conversation_id = self._conversation_of.pop(task_id, None)
        if conversation_id is not None:
            self._release(conversation_id)

    def _release(self, conversation_id: str) -> None:
        """One user of the conversation's numbering is done (a task closed, a note stored
        or failed): the numbering is forgotten once none is left (the store knows where
        the log ends)."""
        left = self._users.get(conversation_id, 1) - 1
        if left > 0:
            self._users[conversation_id] = left
            return
        self._users.pop(conversation_id, None)
        self._last_seq.pop(conversation_id, None)

    # ---- what the agent sends while no turn runs -------------------------------------

    def note(
        self,
        conversation_id: str,
        type_: str,
        payload: dict[str, Any],
        log_end: int | None = None,
    ) -> int | None:
        """Append a frame of no task to the conversation's log (what its agent session
        sent while no turn ran): numbered on from the log's end -- this hub's own count
        while something of the conversation is open or unstored here, else `log_end`
        when the caller knows it (as for `open`), else read from the store first, later
        notes waiting in order meanwhile -- stored by the writer, and only then given to
        the conversation's watchers (a store failure: a `task-error` with code
        `store_failed` and no seq, the note dropped). Its seq when it was numbered from
        `log_end` (where the log ends now, for the caller to keep); else None, and the
        next `open` reads where the log ends rather than trust the caller."""
        waiting = self._unnumbered.get(conversation_id)
        if waiting is None and conversation_id not in self._last_seq and log_end is not None:
            self._last_seq[conversation_id] = log_end  # no store read on a new conversation
            return self._queue_note(conversation_id, type_, payload)
        self._noted.add(conversation_id)
        if waiting is not None:
            waiting.append((type_, payload))
        elif conversation_id in self._last_seq:
            self._queue_note(conversation_id, type_, payload)
        else:
            self._unnumbered[conversation_id] = [(type_, payload)]
            learning = asyncio.get_running_loop().create_task(self._learn_end(conversation_id))
            self._learning[conversation_id] = learning
        return None

    async def _learn_end(self, conversation_id: str) -> None:
        """Read where the conversation's log ends (nothing of it is unstored here), then
        number the notes that waited for it."""
        try:
            last = await self.store.last_seq(conversation_id)
        except Exception as exc:  # the store is away: the notes cannot be numbered
            waiting = self._unnumbered.pop(conversation_id, [])
            log.error("conversation %s: %d note(s) not stored", conversation_id, len(waiting))
            self._tell_readers(conversation_id, _note_failure(exc))
            return
        finally:
            self._learning.pop(conversation_id, None)
        self._last_seq.setdefault(conversation_id, last)
        for type_, payload in self._unnumbered.pop(conversation_id, []):
            self._queue_note(conversation_id, type_, payload)

    def _queue_note(self, conversation_id: str, type_: str, payload: dict[str, Any]) -> int:
        seq = self.number(conversation_id)
        self._users[conversation_id] = self._users.get(conversation_id, 0) + 1
        event = TaskEvent(NO_TASK, seq, type_, time.time(), payload)
        self._writer.batch.notes.append(LogNote(conversation_id, self.boot_id, event))
        self._writer.kick()
        return seq

    def watch_conversation(self, conversation_id: str, watcher: Watcher) -> None:
        """Give `watcher` every frame of the conversation's log from now on, once stored,
        in order (a store failure's `task-error` too, with no seq)."""
        self._readers.setdefault(conversation_id, set()).add(watcher)

    def unwatch_conversation(self, conversation_id: str, watcher: Watcher) -> None:
        readers = self._readers.get(conversation_id)
        if readers is not None:
            readers.discard(watcher)
            if not readers:
                del self._readers[conversation_id]

    def _tell_readers(self, conversation_id: str, event: TaskEvent) -> None:
        for watcher in tuple(self._readers.get(conversation_id, ())):
            watcher.put_nowait(event)

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
        """Wait until everything queued so far is stored (shutdown); notes waiting on
        where their log ends are numbered and queued first."""
        for learning in list(self._learning.values()):
            await asyncio.shield(learning)
        await self._writer.flush()

    def save_conversation(self, conversation: Conversation) -> None:
        """Queue a conversation's row (insert or update) ahead of the next task rows."""
        self._writer.batch.conversations[conversation.id] = conversation
        self._writer.kick()

    async def saved(self, conversation_id: str) -> None:
        """Once the conversation's row, as last queued, is stored (raises what failed it)."""
        await self._writer.written(lambda batch: conversation_id in batch.conversations)

    def get(self, task_id: str) -> TaskLog | None:
        return self._logs.get(task_id)

    def queue(self, event: TaskEvent) -> None:
        self._writer.batch.frames.append(event)
        self._writer.kick()

    def append_run(
        self, task_id: str, conversation_id: str, type_: str, payloads: Sequence[dict[str, Any]]
    ) -> int:
        """Number a frame of the task for each of `payloads` (an open conversation's) and
        queue them, in order; the seq of the first. The frames are made by C loops
        (`map`): this runs for every streamed update, and they arrived at once."""
        first = self._last_seq[conversation_id] + 1
        self._last_seq[conversation_id] = first + len(payloads) - 1
        seqs = range(first, first + len(payloads))
        made = map(TaskEvent, repeat(task_id), seqs, repeat(type_), repeat(time.time()), payloads)
        self._writer.batch.frames += made
        self._writer.kick()
        return first

    async def _write(self, batch: _Batch) -> None:
        # A store error goes up to the writer, which logs it and hands the batch to
        # `_fail`: nothing of a batch that was not stored is delivered.
        await self.store.append_events(
            batch.frames,
            tasks=batch.rows,
            conversations=list(batch.conversations.values()),
            responses=batch.responses,
            ended=[record for _log, record in batch.ended],
            notes=batch.notes,
        )
        for row in batch.rows:
            if row.id in self._logs:
                self._logs[row.id].stored.set()
        if batch.notes:  # in the log's order: a note may fall between a task's frames
            ids = self._deliver_in_order([*batch.frames, *batch.notes])
        else:
            ids = self._deliver(batch.frames)
        for task_log, record in batch.ended:
            task_log.closed.set()
            self._retried.discard(record.id)
        ids.update(r.id for _log, r in batch.ended)
        woken = sorted((i, self._conversation_of.get(i, "")) for i in ids)
        woken += sorted({(NO_TASK, n.conversation_id) for n in batch.notes})
        for _log, record in batch.ended:
            self._closed(record.id)
        for note in batch.notes:
            self._release(note.conversation_id)
        if self._stored is not None and woken:
            await self._stored(woken)

    def _deliver(self, frames: list[TaskEvent]) -> set[str]:
        """Give stored frames to their watchers, in order, a run of one task's frames at a
        time; the ids of the tasks they belong to."""
        ids: set[str] = set()
        for task_id, run in groupby(frames, _task_of):
            ids.add(task_id)
            task_log = self._logs.get(task_id)
            if task_log is None:  # ended in an earlier run, or failed
                continue
            given = task_log.deliver(list(run))
            if self._readers:
                for frame in given:
                    self._tell_readers(task_log.conversation_id, frame)
            if task_log.finished.is_set():
                del self._logs[task_id]
        return ids

    def _deliver_in_order(self, items: list[TaskEvent | LogNote]) -> set[str]:
        """A batch's frames and notes by seq: each note to its conversation's readers,
        each run of frames between them as `_deliver` gives it; the ids of the tasks."""
        ids: set[str] = set()
        ordered = sorted(items, key=_seq_of)
        for is_note, run in groupby(ordered, lambda item: isinstance(item, LogNote)):
            if not is_note:
                ids |= self._deliver(list(run))  # type: ignore[arg-type]
                continue
            for note in run:
                self._tell_readers(note.conversation_id, note.event)  # type: ignore[union-attr]
        return ids

    def _fail(self, batch: _Batch, exc: Exception) -> None:
        """The writer could not store `batch`: every task in it fails (see the module
        docstring), and so does every note; the waiters on its rows and ends are released."""
        self._fail_notes(batch.notes, exc)
        error = {
            "message": f"the gateway could not store this task's frames ({describe(exc)}); "
            "the turn was stopped",
            "code": STORE_FAILED,
        }
        ids = {r.id for r in batch.rows} | {f.task_id for f in batch.frames}
        for task_id in ids:
            task_log = self._logs.pop(task_id, None)
            if task_log is not None:
                self._failed(task_log, error)
        # Their frames already queued for the next batch go too: stored after the refused
        # ones, they would leave a gap and number on past what was refused.
        pending = self._writer.batch
        pending.frames = [f for f in pending.frames if f.task_id not in ids]
        retry = [(t, r) for t, r in batch.ended if batch.frames and r.id not in self._retried]
        for task_log, record in batch.ended:
            self._failed(task_log, error)
            if (task_log, record) in retry:
                continue
            self._retried.discard(record.id)
            task_log.closed.set()
            self._closed(record.id)
        if retry:  # its end (why the task stopped) is written without the frames
            self._retried.update(r.id for _t, r in retry)
            self._writer.batch.ended.extend(retry)
            self._writer.kick()

    def _fail_notes(self, notes: list[LogNote], exc: Exception) -> None:
        """Notes not stored: their conversations' watchers are told once, and the notes
        of those conversations queued next go too (they would number on past a gap)."""
        failed = {n.conversation_id for n in notes}
        if not failed:
            return
        pending = self._writer.batch
        dropped = [n for n in pending.notes if n.conversation_id in failed]
        pending.notes = [n for n in pending.notes if n.conversation_id not in failed]
        for note in [*notes, *dropped]:
            self._release(note.conversation_id)
        self._noted |= failed  # an end a caller was told (`note`'s seq) was never stored
        for conversation_id in sorted(failed):
            self._tell_readers(conversation_id, _note_failure(exc))

    def _failed(self, task_log: TaskLog, error: dict[str, Any]) -> None:
        failure = task_log.fail(error)
        if failure is not None:
            self._tell_readers(task_log.conversation_id, failure)

    def close(self) -> None:
        """Stop the writer (shutdown); frames not yet stored are lost."""
        self._writer.close()
        for learning in self._learning.values():
            learning.cancel()
        for task_log in self._logs.values():
            task_log.close()
        self._logs.clear()


def _seq_of(item: TaskEvent | LogNote) -> int:
    return item.seq if isinstance(item, TaskEvent) else item.event.seq


def _note_failure(exc: BaseException) -> TaskEvent:
    """What a conversation's watchers get when a note of it could not be stored (no seq:
    it is not part of the log)."""
    error = {
        "message": "the gateway could not store an update the agent sent outside a turn "
        f"({describe(exc)})",
        "code": STORE_FAILED,
    }
    return TaskEvent(NO_TASK, UNSTORED, "task-error", time.time(), {"error": error})


__all__ = [
    "SESSION_UPDATE",
    "STORE_FAILED",
    "TERMINAL",
    "UNSTORED",
    "TaskHub",
    "TaskLog",
    "Watcher",
    "wire_frame",
]
