"""A turn's prompt goes to its agent before the turn's first batch (its task row and
`task-started` frame) is committed: on the SQLite store that commit runs on the event loop
(store/sqlite.py, inline), and the log's writer, woken when the task's log is opened,
was queued ahead of the prompt's write, holding every turn's prompt back by that commit.
The writer now lets the loop turn once before it takes its batch (gateway/batches.py).
Checked by the order of the two, never by time."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from agentao.client.errors import ClientError
from agentao.gateway.batches import WriterBackoff
from agentao.gateway.tasklog import TaskHub
from agentao.gateway.turns import GatewayTurn, TurnContext, TurnFailed
from agentao.store.gateway import open_gateway_store
from agentao.store.gateway_records import Conversation, TaskRecord


class AgentTurn:
    """As `client.turn.Turn`: the `session/prompt` request is written by a task it starts."""

    def __init__(self, order: list[str]) -> None:
        self._order = order
        self._sent = asyncio.ensure_future(self._send())

    async def _send(self) -> None:
        self._order.append("prompt written")

    def __aiter__(self) -> AgentTurn:
        return self

    async def __anext__(self) -> Any:
        await self._sent
        raise ClientError("this agent stops here")

    def ready(self) -> list[Any]:
        return []


async def test_the_prompt_is_written_before_the_turns_first_batch_is_committed(
    tmp_path: Path,
) -> None:
    store = open_gateway_store(tmp_path / "gateway.sqlite3", inline_commit_bytes=64 * 1024)
    await store.create_conversation(Conversation("conv_1", "local", "agentao", "task"))
    hub = TaskHub(store, "boot_1", backoff=WriterBackoff(0, 0))
    order: list[str] = []

    def traced(sql: str) -> None:
        if sql.lstrip().startswith(("INSERT INTO gw_tasks", "INSERT INTO gw_log_frames")):
            order.append("committed")

    store.db.trace(traced)
    session = SimpleNamespace(
        id="sess_1", prompt=lambda _prompt: AgentTurn(order), channel=SimpleNamespace(version=1)
    )
    context = TurnContext("local", "all", 60.0, None, consumed=False)  # type: ignore[arg-type]

    async def finished(_turn: GatewayTurn) -> None:
        return None

    # As sessions.py starts a turn: the log opened (its row queued, the writer woken), then
    # the turn started in the same step.
    task_log = await hub.open(TaskRecord("task_1", "conv_1", "running"), log_end=0)
    turn = GatewayTurn(session, [{"type": "text", "text": "hi"}], task_log, context, finished)  # type: ignore[arg-type]
    turn.start({"taskId": "task_1", "prompt": "hi"})
    await asyncio.wait_for(turn.done.wait(), 10)
    await hub.flush()
    try:
        assert order[:2] == ["prompt written", "committed"]
    finally:
        hub.close()
        store.db.close()


async def test_the_terminal_frame_is_emitted_by_whoever_keeps_the_turn_s_end(
    tmp_path: Path,
) -> None:
    """The turn's `task-ended` is not queued before its keeper has checked the lease (an
    await on the store): it goes with the task's row, in one batch, so a reader told the
    turn ended never reads it still running; and it says what the keeper kept (a turn whose
    lease was lost meanwhile ends in error, as its row does, not `task-ended`)."""
    store = open_gateway_store(tmp_path / "gateway.sqlite3")
    await store.create_conversation(Conversation("conv_1", "local", "agentao", "task"))
    hub = TaskHub(store, "boot_1", backoff=WriterBackoff(0, 0))
    session = SimpleNamespace(
        id="sess_1", prompt=lambda _prompt: AgentTurn([]), channel=SimpleNamespace(version=1)
    )
    context = TurnContext("local", "all", 60.0, None, consumed=False)  # type: ignore[arg-type]
    queued_before_keeping: list[str] = []

    async def keep(turn: GatewayTurn) -> None:
        await asyncio.sleep(0)  # the lease check's query
        queued_before_keeping.extend(f.type for f in hub._writer.batch.frames)
        await hub.flush()
        queued_before_keeping.extend(e.type for e in await store.task_events("task_1", 0))
        turn.result = TurnFailed("the lease was lost", "lease_lost")
        turn.emit_end()
        hub.end(turn.log, "error", "the lease was lost")
        await turn.log.closed.wait()

    task_log = await hub.open(TaskRecord("task_1", "conv_1", "running"), log_end=0)
    turn = GatewayTurn(session, [{"type": "text", "text": "hi"}], task_log, context, keep)  # type: ignore[arg-type]
    turn.start({"taskId": "task_1", "prompt": "hi"})
    await asyncio.wait_for(turn.done.wait(), 10)
    try:
        assert not {"task-ended", "task-error"} & set(queued_before_keeping)
        frames = await store.task_events("task_1", 0)
        assert [f.type for f in frames] == ["task-started", "task-error"]
        assert frames[-1].payload["error"]["code"] == "lease_lost"
        assert (await store.get_task("task_1")).status == "error"
    finally:
        hub.close()
        store.db.close()
