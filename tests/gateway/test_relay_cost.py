"""The relay's store path takes a burst of streamed updates with no Python step per
update: the frames are numbered and queued (`TaskLog.emit_run`), cut into rows
(`frame_rows`) and the consumer's steps held and released (`turns._Inbox`) by C loops,
so the number of Python lines run is the same for 10 updates as for 1,000; a batch of
text chunks is encoded as SSE (`openai_chat._Reply._encode_texts`) in the same number
of Python calls. (Each line cost the gateway CPU per relayed chunk: `bench/gateway.py`'s
relay row.) Counted with a trace function, not timed. The controls show the fast ways
give what the per-frame ways give: the same rows, numbers and bytes, and a note
between a task's frames still cuts its run.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType, SimpleNamespace
from typing import Any

import pytest

from agentao.gateway.batches import WriterBackoff
from agentao.gateway.mapping import Delta
from agentao.gateway.openai_chat import ChatBody, _Reply
from agentao.gateway.tasklog import TaskHub, TaskLog
from agentao.gateway.turns import Step, TurnFailed, TurnItem, _Inbox
from agentao.store.gateway import open_gateway_store
from agentao.store.gateway_records import Conversation, TaskEvent, TaskRecord, frame_rows

UPDATE = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}


def agentao_lines(action: Callable[[], object], counted: str = "line") -> int:
    """How many lines of agentao's own code `action` runs (`counted="call"`: how many
    Python functions of it it calls; a comprehension is one)."""
    lines = 0

    def tracer(frame: FrameType, event: str, _arg: Any) -> Any:
        nonlocal lines
        if "/agentao/" not in frame.f_code.co_filename:
            return None
        if event == counted:
            lines += 1
        return tracer

    sys.settrace(tracer)
    try:
        action()
    finally:
        sys.settrace(None)
    return lines


def run_of(n: int, task_id: str = "task_1", first: int = 1) -> list[TaskEvent]:
    return [
        TaskEvent(task_id, first + i, "task-running", 1.0, {"update": UPDATE}) for i in range(n)
    ]


# ---- rows --------------------------------------------------------------------------------


def test_one_tasks_run_is_cut_into_rows_in_the_same_lines_whatever_its_length() -> None:
    assert agentao_lines(lambda: frame_rows(run_of(10))) == agentao_lines(
        lambda: frame_rows(run_of(1_000))
    )


def test_control_a_run_is_one_row_holding_every_frame() -> None:
    (row,) = frame_rows(run_of(1_000, first=7))
    assert row[:4] == ("task_1", 7, 1_006, "task_1")
    assert row[4].count(b'"task-running"') == 1_000


def test_control_another_tasks_frame_inside_a_run_still_cuts_it() -> None:
    """Looks like one run from its ends (same task first and last, seqs spanning its
    length: a note took seq 3) but another task's frame is inside."""
    frames = [*run_of(2), TaskEvent("task_2", 1, "task-running", 1.0, {}), *run_of(2, first=4)]
    assert [row[:3] for row in frame_rows(frames)] == [
        ("task_1", 1, 2),
        ("task_2", 1, 1),
        ("task_1", 4, 5),
    ]


def test_control_a_gap_in_a_tasks_seqs_cuts_its_run() -> None:
    frames = [*run_of(2), *run_of(2, first=4)]  # seq 3 is a note of the conversation
    assert [row[:3] for row in frame_rows(frames)] == [("task_1", 1, 2), ("task_1", 4, 5)]


# ---- numbering and queueing --------------------------------------------------------------


@pytest.fixture
async def task_log(tmp_path: Path) -> TaskLog:
    store = open_gateway_store(tmp_path / "gateway.sqlite3")
    await store.create_conversation(Conversation("conv_1", "local", "agentao", "task"))
    hub = TaskHub(store, "boot_1", backoff=WriterBackoff(0, 0))
    task_log = await hub.open(TaskRecord("task_1", "conv_1", "running"), log_end=0)
    await hub.flush()
    yield task_log
    hub.close()
    store.db.close()


async def test_a_burst_is_numbered_and_queued_in_the_same_lines_whatever_its_length(
    task_log: TaskLog,
) -> None:
    def burst(n: int) -> Callable[[], int]:
        payloads = [{"update": UPDATE} for _ in range(n)]
        return lambda: task_log.emit_run("task-running", payloads)

    burst(1)()  # the writer is woken for this batch: the next bursts only add to it
    assert agentao_lines(burst(10)) == agentao_lines(burst(1_000))


async def test_control_a_burst_is_stored_numbered_on_as_frames_emitted_one_by_one(
    task_log: TaskLog,
) -> None:
    task_log.emit("task-running", {"update": UPDATE, "n": 0})
    first = task_log.emit_run("task-running", [{"update": UPDATE, "n": n} for n in (1, 2, 3)])
    task_log.emit("task-running", {"update": UPDATE, "n": 4})
    await task_log._hub.flush()
    stored = await task_log._hub.store.task_events("task_1", 0)
    assert first == 2 and task_log.last_seq == 5
    assert [(e.seq, e.payload["n"]) for e in stored] == [(n + 1, n) for n in range(5)]


async def test_control_a_burst_is_not_queued_once_the_store_failed_the_task(
    task_log: TaskLog,
) -> None:
    task_log.fail({"message": "refused", "code": "store_failed"})
    assert task_log.emit_run("task-running", [{"update": UPDATE}]) == 0
    assert task_log._hub._writer.batch.frames == []


async def frames_committed_on(tmp_path: Path, inline_bytes: int, updates: int) -> list[str]:
    """The threads the statements writing a burst's frames ran on."""
    store = open_gateway_store(tmp_path / "inline.sqlite3", inline_commit_bytes=inline_bytes)
    await store.create_conversation(Conversation("conv_1", "local", "agentao", "task"))
    hub = TaskHub(store, "boot_1", backoff=WriterBackoff(0, 0))
    task_log = await hub.open(TaskRecord("task_1", "conv_1", "running"), log_end=0)
    await hub.flush()
    threads: list[str] = []

    def traced(sql: str) -> None:
        if sql.lstrip().startswith("INSERT INTO gw_log_frames"):
            threads.append(threading.current_thread().name)

    store.db.trace(traced)
    task_log.emit_run("task-running", [{"update": UPDATE} for _ in range(updates)])
    await hub.flush()
    assert [e.seq for e in await store.task_events("task_1", 0)] == list(range(1, updates + 1))
    hub.close()
    store.db.close()
    return threads


async def test_a_small_burst_is_committed_on_the_event_loop_with_no_thread_hand_off(
    tmp_path: Path,
) -> None:
    """A turn's first updates are stored before anyone sees them: committed right on the
    loop when the writer is idle, not a job to its thread and a result back."""
    on = await frames_committed_on(tmp_path, 64 * 1024, 10)
    assert on == [threading.current_thread().name]


async def test_control_a_burst_above_the_bound_is_committed_on_the_writers_thread(
    tmp_path: Path,
) -> None:
    assert await frames_committed_on(tmp_path, 256, 10) == ["agentao-store"]


async def test_control_with_the_bound_0_every_batch_goes_to_the_writers_thread(
    tmp_path: Path,
) -> None:
    assert await frames_committed_on(tmp_path, 0, 1) == ["agentao-store"]


# ---- the consumer's steps ----------------------------------------------------------------


def test_a_burst_of_steps_is_held_and_released_in_the_same_lines_whatever_its_length() -> None:
    def burst(n: int) -> Callable[[], None]:
        inbox, steps = _Inbox(), [Step(None, Delta(text="x")) for _ in range(n)]  # type: ignore[arg-type]
        stored = run_of(1, first=n)

        def hold_and_release() -> None:
            inbox.hold_run(1, steps)
            inbox.put_frames(stored)

        return hold_and_release

    assert agentao_lines(burst(10)) == agentao_lines(burst(1_000))


async def test_control_steps_are_released_only_up_to_the_stored_seq() -> None:
    inbox = _Inbox()
    steps = [Step(None, Delta(text=str(n))) for n in range(5)]  # type: ignore[arg-type]
    inbox.hold_run(11, steps)  # frames 11..15
    inbox.put_frames(run_of(3, first=10))  # stored up to 12
    assert [s.delta.text for s in await inbox.take()] == ["0", "1"]
    inbox.put_frames(run_of(1, first=15))
    assert [s.delta.text for s in await inbox.take()] == ["2", "3", "4"]


# ---- the SSE bytes -----------------------------------------------------------------------


def chat_reply(**body: Any) -> _Reply:
    """A streaming chat answer's encoder, past its first chunk (which carries the role)."""
    choice = SimpleNamespace(name="agentao")
    chat = ChatBody(model="agentao", messages=[], stream=True, **body)
    reply = _Reply("chatcmpl-1", 1, choice, chat, SimpleNamespace(prompt=[]))  # type: ignore[arg-type]
    reply._first = {}
    return reply


def text_steps(n: int) -> list[TurnItem]:
    return [Step(None, Delta(text=f'x"{i}\n')) for i in range(n)]  # type: ignore[arg-type]


def per_item(reply: _Reply, batch: list[TurnItem]) -> bytes:
    return b"".join([reply._encode(item) for item in batch])


def test_a_batch_of_text_chunks_is_encoded_in_the_same_calls_whatever_its_length() -> None:
    """Calls, not lines: two comprehensions pick the texts (cheaper than C passes)."""
    reply = chat_reply()
    ten, thousand = text_steps(10), text_steps(1_000)
    assert agentao_lines(lambda: reply._encode_texts(ten), "call") == agentao_lines(
        lambda: reply._encode_texts(thousand), "call"
    )


def test_control_a_batch_of_text_chunks_is_the_bytes_of_its_chunks_one_by_one() -> None:
    reply, batch = chat_reply(), text_steps(3)
    assert reply._encode_texts(batch) == per_item(reply, batch)
    assert per_item(reply, batch).count(b"data: ") == 3


@pytest.mark.parametrize(
    "batch",
    [
        [*text_steps(2), Step(None, Delta(reasoning="thinking"))],  # type: ignore[arg-type]
        [*text_steps(2), Step(None, Delta(text="a", reasoning="b"))],  # type: ignore[arg-type]
        [*text_steps(2), TurnFailed("the agent exited", "agent_disconnected")],
    ],
    ids=["reasoning", "text-and-reasoning", "end"],
)
def test_control_any_other_batch_is_encoded_item_by_item(batch: list[TurnItem]) -> None:
    assert chat_reply()._encode_texts(batch) is None


def test_control_the_first_chunk_and_x_acp_are_encoded_item_by_item() -> None:
    first = chat_reply()
    first._first = {"role": "assistant"}
    assert first._encode_texts(text_steps(2)) is None
    assert chat_reply(x_acp=True)._encode_texts(text_steps(2)) is None
