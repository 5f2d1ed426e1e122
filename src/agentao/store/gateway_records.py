"""The gateway's records: what one row of each table holds, and rows -> records.

`store/gateway.py` owns the tables and the SQL; the gateway passes these records.
A record's defaults are what a new row gets; `created_at` / `updated_at` left at 0
are filled in by the store when it writes the row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any

import msgspec

encode_json = msgspec.json.Encoder().encode
decode_json = msgspec.json.Decoder().decode
# A row, by column name: a `sqlite3.Row`, or a dict from PostgreSQL's driver.
Row = Mapping[str, Any]
IN_FLIGHT_RESPONSE = "in_progress"
IN_FLIGHT_TASK = "running"

# The conversation log's statements, the same on both stores (SQLite's `?` for `%s`).
# A row's conversation is its task's: a frame of a task with no row is refused
# (conversation_id NOT NULL), never stored where no reader finds it.
INSERT_LOG_FRAMES = (
    "INSERT INTO gw_log_frames (conversation_id, first_seq, last_seq, task_id, frames) "
    "VALUES ((SELECT conversation_id FROM gw_tasks WHERE id = %s), %s, %s, %s, %s)"
)
LAST_SEQ = "SELECT COALESCE(MAX(last_seq), 0) AS last FROM gw_log_frames WHERE conversation_id = %s"
LAST_SEQ_OF_TASK = (  # the last seq of the log of this task's conversation
    "SELECT COALESCE(MAX(last_seq), 0) AS last FROM gw_log_frames WHERE conversation_id = "
    "(SELECT conversation_id FROM gw_tasks WHERE id = %s)"
)
# A frame of no task (a `LogNote`): its conversation is named, its task is NULL.
INSERT_NOTE_FRAMES = (
    "INSERT INTO gw_log_frames (conversation_id, first_seq, last_seq, task_id, frames) "
    "VALUES (%s, %s, %s, NULL, %s)"
)
# The frames of one owner's running tasks, each log in order: where the open permission
# questions of every replica are read from (gateway/questions.py).
RUNNING_FRAMES = (
    "SELECT f.conversation_id, f.frames FROM gw_log_frames f "
    "JOIN gw_tasks t ON t.id = f.task_id JOIN gw_conversations c ON c.id = f.conversation_id "
    "WHERE t.status = %s AND c.owner = %s ORDER BY f.conversation_id, f.first_seq"
)
PRUNE_LOG = (
    "DELETE FROM gw_log_frames WHERE conversation_id IN (SELECT c.id FROM gw_conversations c "
    "WHERE c.updated_at < %s AND NOT EXISTS (SELECT 1 FROM gw_tasks t "
    "WHERE t.conversation_id = c.id AND t.status = %s))"
)


@dataclass(slots=True)
class Conversation:
    """One ACP session seen from HTTP."""

    id: str
    owner: str
    agent: str
    source: str  # "chat" | "responses" | "task"
    session_id: str | None = None
    title: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    turn_count: int = 0
    transcript_hash: str | None = None
    title_by: str | None = None  # "prompt" | "agent" | "person" (None: by the prompt, long ago)
    # Where its agent session was opened for a remote ACP client: {cwd,
    # additionalDirectories, mcpServers}; None: the agent's configured cwd, no MCP.
    session_params: dict[str, Any] | None = None


@dataclass(slots=True)
class ResponseRecord:
    """A Responses API object as last returned, and where it sits in its conversation."""

    id: str
    conversation_id: str
    turn: int
    status: str
    body: dict[str, Any]
    created_at: float = 0.0
    boot_id: str | None = None  # the gateway process that produces it (see `Boot`)


@dataclass(slots=True)
class TaskRecord:
    id: str
    conversation_id: str
    status: str  # "running" | "ended" | "error"
    prompt: str = ""
    created_at: float = 0.0
    ended_at: float | None = None
    boot_id: str | None = None  # the gateway process that runs it (see `Boot`)
    error: str | None = None  # why it ended in "error"


@dataclass(frozen=True, slots=True)
class Boot:
    """One gateway process, as recorded for the rows it has in flight.

    `pid_start` (the process's start time, in clock ticks since the machine booted)
    tells a live process from a later one that got the same pid; `machine_boot`
    (the kernel's boot id) tells that the machine restarted since; `pid_ns` that the
    pid means the same thing here. Empty strings where the OS does not say.
    """

    id: str
    host: str
    machine_boot: str
    pid_ns: str
    pid: int
    pid_start: str
    started_at: float


@dataclass(slots=True)
class Settlement:
    """What dead gateway processes left in flight, as it is to be stored now.

    Each row is written only if it is still in flight (another gateway may have settled
    it first); each task so settled gets `frames[task id]` = (type, payload) as its
    last frame, numbered after its stored ones, unless another replica holds its
    conversation now (that one numbers the log: the row alone says how the task ended).
    `boots` are forgotten.
    """

    responses: list[ResponseRecord] = field(default_factory=list)
    tasks: list[TaskRecord] = field(default_factory=list)
    frames: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    boots: list[str] = field(default_factory=list)


class TaskEvent(msgspec.Struct, frozen=True, gc=False, array_like=True):
    """One task-stream frame: `payload` holds everything but `seq`, `type` and `at`.
    (A Struct: one is made per streamed update, and a frozen dataclass costs ten times as
    much. Stored as the array [task_id, seq, type, at, payload], encoded in C a batch at a
    time.)"""

    task_id: str
    seq: int
    type: str
    at: float
    payload: dict[str, Any] = {}

    def frame(self) -> dict[str, Any]:
        return {"seq": self.seq, "type": self.type, "at": self.at, **self.payload}


def _finite_or_literal(literal: str) -> Any:
    value = float(literal)
    return value if value - value == 0 else literal  # inf and nan fail the test


# A frame holds an agent's update as the bytes it sent (events.Update.wire), where a member
# the agent's types do not declare may hold a number no float can (`1e999`): read back, it
# stays its literal rather than failing the read of the whole log.
decode_frames = msgspec.json.Decoder(list[TaskEvent], float_hook=_finite_or_literal).decode
# The `task_id` of a frame that belongs to no task (a `LogNote`; its row's task is NULL).
# A str, not None: every reader keys frames by their task id, and no task id is empty.
NO_TASK = ""


@dataclass(frozen=True, slots=True)
class LogNote:
    """A frame of a conversation's log that belongs to no task: what the agent sent while
    no turn of it ran (`event.task_id` is `NO_TASK`). `boot_id` is the gateway process
    that writes it: on a shared store only the conversation's lease holder may
    (store/postgres.py)."""

    conversation_id: str
    boot_id: str
    event: TaskEvent


def json_value(value: Any) -> Any:
    """A JSON column's value: SQLite gives its text (or bytes), PostgreSQL's driver
    gives it decoded already; NULL stays None."""
    return decode_json(value) if isinstance(value, str | bytes) else value


def frame_rows(events: Sequence[TaskEvent]) -> list[tuple[str, int, int, str, bytes]]:
    """One row per run of a task's frames in the batch, in order, as one JSON array, for
    `INSERT_LOG_FRAMES`: (task, first seq, last seq, task, frames). A run ends where the
    task's seqs skip (a note of its conversation came between): rows of one log never
    overlap, so reading them by first seq reads the log in order."""
    if _one_run(events):  # a streamed answer's batch: no Python per frame
        task = events[0].task_id
        return [(task, events[0].seq, events[-1].seq, task, encode_json(events))]
    runs = _runs([(e.task_id, e.seq) for e in events])
    rows = []
    for run in runs:
        frames = [events[i] for i in run]
        task = frames[0].task_id
        rows.append((task, frames[0].seq, frames[-1].seq, task, encode_json(frames)))
    return rows


def note_rows(notes: Sequence[LogNote]) -> list[tuple[str, int, int, bytes, str]]:
    """One row per run of a conversation's notes in the batch, as `frame_rows` cuts them:
    (conversation, first seq, last seq, frames, the boot that writes them)."""
    rows = []
    for run in _runs([(n.conversation_id, n.event.seq) for n in notes]):
        first, last = notes[run[0]], notes[run[-1]]
        frames = encode_json([notes[i].event for i in run])
        rows.append((first.conversation_id, first.event.seq, last.event.seq, frames, first.boot_id))
    return rows


def _one_run(events: Sequence[TaskEvent]) -> bool:
    """Whether `events` are one task's frames with contiguous seqs (what `_runs` would
    keep as one run), checked by C loops (`map`) rather than a Python step per frame."""
    if not events:
        return False
    first = events[0].seq
    if events[-1].seq != first + len(events) - 1:
        return False
    return len(set(map(_task_id, events))) == 1 and list(map(_seq, events)) == list(
        range(first, first + len(events))
    )


_task_id = attrgetter("task_id")
_seq = attrgetter("seq")


def _runs(keyed: Sequence[tuple[str, int]]) -> list[list[int]]:
    """The indexes of `keyed` (key, seq) cut into runs of one key with contiguous seqs."""
    runs: list[list[int]] = []
    current: dict[str, tuple[list[int], int]] = {}  # key -> its open run, its last seq
    for index, (key, seq) in enumerate(keyed):
        run, last = current.get(key, (None, 0))
        if run is None or last + 1 != seq:
            run = []
            runs.append(run)
        run.append(index)
        current[key] = (run, seq)
    return runs


def escape_like(text: str) -> str:
    """`text` matched literally by LIKE ... ESCAPE '\\' (its % and _ are not wildcards)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def best_by_transcript(rows: Sequence[Row], hashes: Sequence[str]) -> Row | None:
    """Of conversations whose transcript hash is among `hashes`, the one whose hash comes
    earliest there (the longest prefix), the newest of those."""
    if not rows:
        return None
    rank = {digest: i for i, digest in reversed(list(enumerate(hashes)))}
    return min(rows, key=lambda r: (rank[r["transcript_hash"]], -r["updated_at"]))


def stamp_batch(
    tasks: Sequence[TaskRecord],
    responses: Sequence[ResponseRecord],
    conversations: Sequence[Conversation],
    now: float,
) -> None:
    """Give a batch's new rows their creation time, and its conversations `now` as their
    last update (both stores write a batch so)."""
    for task in tasks:
        task.created_at = task.created_at or now
    for record in responses:
        record.created_at = record.created_at or now
    for conv in conversations:
        conv.created_at = conv.created_at or now
        conv.updated_at = now


def new_task_row(t: TaskRecord) -> tuple[Any, ...]:
    """(id, conversation_id, status, created_at, prompt, boot_id): a task's first row."""
    return (t.id, t.conversation_id, t.status, t.created_at, t.prompt, t.boot_id)


def task_end_row(t: TaskRecord) -> tuple[Any, ...]:
    """(status, ended_at, error, id): how a task ended, for the UPDATE that records it."""
    return (t.status, t.ended_at, t.error, t.id)


def response_row(r: ResponseRecord) -> tuple[Any, ...]:
    body = encode_json(r.body).decode()
    return (r.id, r.conversation_id, r.turn, r.status, r.created_at, body, r.boot_id)


def response_from_row(row: Row) -> ResponseRecord:
    return ResponseRecord(
        row["id"],
        row["conversation_id"],
        row["turn"],
        row["status"],
        json_value(row["body"]),
        row["created_at"],
        row["boot_id"],
    )


def boot_row(b: Boot) -> tuple[Any, ...]:
    return (b.id, b.host, b.machine_boot, b.pid_ns, b.pid, b.pid_start, b.started_at)


def boot_from_row(row: Row) -> Boot:
    return Boot(**{f.name: row[f.name] for f in fields(Boot)})


def conversation_from_row(row: Row) -> Conversation:
    return Conversation(
        id=row["id"],
        owner=row["owner"],
        agent=row["agent"],
        source=row["source"],
        session_id=row["session_id"],
        title=row["title"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        turn_count=row["turn_count"],
        transcript_hash=row["transcript_hash"],
        title_by=row["title_by"],
        session_params=json_value(row["session_params"]),
    )


def task_from_row(row: Row) -> TaskRecord:
    return TaskRecord(
        id=row["id"],
        conversation_id=row["conversation_id"],
        status=row["status"],
        prompt=row["prompt"],
        created_at=row["created_at"],
        ended_at=row["ended_at"],
        boot_id=row["boot_id"],
        error=row["error"],
    )


__all__ = [
    "INSERT_LOG_FRAMES",
    "INSERT_NOTE_FRAMES",
    "IN_FLIGHT_RESPONSE",
    "IN_FLIGHT_TASK",
    "LAST_SEQ",
    "LAST_SEQ_OF_TASK",
    "NO_TASK",
    "PRUNE_LOG",
    "RUNNING_FRAMES",
    "Boot",
    "Conversation",
    "LogNote",
    "ResponseRecord",
    "Row",
    "Settlement",
    "TaskEvent",
    "TaskRecord",
    "best_by_transcript",
    "boot_from_row",
    "boot_row",
    "conversation_from_row",
    "decode_frames",
    "decode_json",
    "encode_json",
    "escape_like",
    "frame_rows",
    "json_value",
    "new_task_row",
    "note_rows",
    "response_from_row",
    "response_row",
    "stamp_batch",
    "task_end_row",
    "task_from_row",
]
