"""One prompt turn, run by the gateway in its own task.

Theory of operation. An HTTP handler or a task-stream request starts a
`GatewayTurn`; the turn drives the client's `session.prompt()` in a task of its
own, so the HTTP side can vanish at any moment without cancelling the iteration
half-way. Every item goes onto the task log (persisted, for its readers); a turn
that an OpenAI route started (`TurnContext.consumed`) also maps it for that one
consumer and puts it into its inbox (`items()`); the task stream's and remote ACP's
turns have neither, their readers read the log. The inbox
watches the log like any other reader: an item is released to the consumer only
once its frame is stored, so an OpenAI client never sees what a reconnecting
watcher could not read back. The updates the client has received at once (a burst)
go onto the log and into the inbox in one call each (`TaskLog.emit_run`,
`_Inbox.hold_run`): nothing in between runs Python once per update but the mapping.

A child session's updates (the client opts in: pool.py, client/children.py) reach the
parent's turn too: each is a frame of the parent's task naming the child
(`childSessionId`), never mapped for the consumer, so an OpenAI answer is the parent's
words only.

A store failure (`TaskLog.failed`) ends the consumer's items with a `TurnFailed`
(code `store_failed`) at once, cancels the agent's turn, and makes the turn's result
that failure, whatever the agent then answers.

Cancel (`cancel()`, synchronous so a disconnect callback can call it) sends
`session/cancel` at once through the client. The turn keeps reading until the
agent's `stopReason` arrives, so the session is left clean: nothing of this turn
can surface in the next one (and the registry drains the session before the next
prompt anyway). A consumer that left calls `detach()` so nothing more is queued.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from bisect import bisect_right
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from agentao.client import (
    AgentDisconnected,
    AgentError,
    ClientError,
    ClientTimeout,
    PermissionRequest,
    Session,
    TurnEnd,
    Update,
)
from agentao.client.permissions import PermissionAnswer
from agentao.gateway.agent_protocol import logged_update, speaks_v2
from agentao.gateway.config import Policy
from agentao.gateway.mapping import Delta, TurnMapper
from agentao.gateway.permissions import PermissionDesk
from agentao.gateway.tasklog import UNSTORED, TaskLog
from agentao.protocol.decode import to_builtins
from agentao.store.gateway_records import TaskEvent

log = logging.getLogger("agentao.gateway")


class Step(msgspec.Struct, frozen=True, gc=False):
    """One update and what it means for an OpenAI client (mapped in the turn, in order)."""

    update: Update
    delta: Delta


@dataclass(frozen=True, slots=True)
class TurnFailed:
    """The turn could not finish: the agent died, answered an error, or timed out."""

    message: str
    # agent_disconnected | agent_error | agent_timeout | gateway_error | store_failed |
    # lease_lost (another replica took the conversation over: the result was not kept)
    code: str


@dataclass(frozen=True, slots=True)
class ToolCalls:
    """The agent called the caller's own tools (tool_bridge.py): the consumer's answer ends
    here with them, and the turn waits for their results. Calls made before the consumer
    took this item join it (`calls` grows), so calls made together come back together."""

    calls: list[Any]  # tool_bridge.PendingCall


TurnItem = Step | ToolCalls | TurnEnd | TurnFailed
_ANNOUNCED_KEPT = 64  # announced inputs of no caller's call kept (the agent's own tools')


class _CallOrder:
    """Calls of the caller's tools reach the gateway over HTTP, the agent's updates over
    its stdout: a call can arrive before the updates the agent sent before making it (the
    text it said first, the `tool_call` announcing it). A call goes to the consumer once
    an announced tool call with the same input (`rawInput`) was received, so everything
    the agent said before it is in the answer that ends with it; or after
    `grace_seconds` (`[limits] announce_grace_seconds`), for an agent that announces it
    otherwise or not at all."""

    def __init__(self, inbox: _Inbox, grace_seconds: float) -> None:
        self.inbox = inbox
        self.grace_seconds = grace_seconds
        self._announced: list[Any] = []  # inputs of announced calls no call matched yet
        self._parked: list[Any] = []  # calls waiting for their announcement

    def call(self, call: Any) -> None:
        if call.args in self._announced:
            self._announced.remove(call.args)
            self.inbox.put_call(call)
            return
        self._parked.append(call)
        asyncio.get_running_loop().call_later(self.grace_seconds, self._release, call)

    def announced(self, tool_calls: list[dict[str, Any]]) -> None:
        """`tool_call` updates just received (and held in the inbox, in order)."""
        for raw in tool_calls:
            given = raw.get("rawInput")
            if given is None:
                continue
            match = next((c for c in self._parked if c.args == given), None)
            if match is None:
                self._announced = [*self._announced[-_ANNOUNCED_KEPT + 1 :], given]
            else:
                self._release(match)

    def _release(self, call: Any) -> None:
        if call in self._parked:
            self._parked.remove(call)
            self.inbox.put_call(call)


@dataclass(frozen=True, slots=True)
class TurnContext:
    """Who runs the turn and under which rules."""

    owner: str
    policy: Policy
    deadline_seconds: float
    desk: PermissionDesk
    inline_reasoning: bool = False  # reasoning written into the text, seed-style prefixes
    # An OpenAI consumer reads the turn's items (Chat Completions, Responses). Without
    # one (the task stream, remote ACP: readers of the log), nothing is mapped for it.
    consumed: bool = True
    always_allow: bool = False  # a person may pick the agent's allow_always (config.py)
    announce_grace_seconds: float = 2.0  # `[limits]`: see `_CallOrder`


class _Inbox:
    """The one consumer's items, in order, taken all at once; a step is held until the
    log has stored its frame (the inbox is a watcher of the log: `put_frames`, once per
    stored run of frames, for only the last seq matters). After the first item that is
    not a step, nothing more is taken in. (An asyncio.Queue does more per item than
    this needs, and it is once per streamed update: the held steps and their seqs are
    two lists, released by a C slice, not a Python step per update.)"""

    def __init__(self) -> None:
        self._held_seqs: list[int] = []  # the seq of each held step's frame, ascending
        self._held: list[Step | ToolCalls] = []
        self._items: list[TurnItem] = []
        self._ready = asyncio.Event()
        self._ended = False
        self._calls = 0  # ToolCalls items held or waiting: a take() stops after the first

    def put_call(self, call: Any) -> None:
        """A call of the caller's tools, after every step received before it (held ones
        too), or joined to calls not taken yet."""
        last = self._held[-1] if self._held else self._items[-1] if self._items else None
        if isinstance(last, ToolCalls):
            last.calls.append(call)
            return
        self._calls += 1
        if self._held_seqs:  # released with the step before it
            self._held_seqs.append(self._held_seqs[-1])
            self._held.append(ToolCalls([call]))
        else:
            self._items.append(ToolCalls([call]))
            self._ready.set()

    def hold_run(self, first_seq: int, steps: list[Step]) -> None:
        """Steps whose frames, `first_seq` on, one each, are on their way to the store."""
        self._held_seqs += range(first_seq, first_seq + len(steps))
        self._held += steps

    def put(self, item: TurnItem) -> None:
        """An item the consumer may have now (the turn's end: its frames are stored)."""
        if self._ended:
            return
        self._ended = isinstance(item, (TurnEnd, TurnFailed))
        self._items.append(item)
        self._ready.set()

    def put_frames(self, frames: Sequence[TaskEvent]) -> None:
        """The log stored `frames` (a run, in order): release the steps up to the last."""
        self._release(frames[-1].seq)

    def put_nowait(self, frame: TaskEvent) -> None:
        """The log stored `frame`: release the steps up to it. A store failure (a frame
        with no seq) drops what is held and ends the items with it."""
        if frame.seq == UNSTORED:
            self._held_seqs.clear()
            self._held.clear()
            error = frame.payload["error"]
            self.put(TurnFailed(error["message"], error["code"]))
            return
        self._release(frame.seq)

    def _release(self, seq: int) -> None:
        seqs = self._held_seqs
        if not seqs or seqs[0] > seq:
            return
        stored = len(seqs) if seqs[-1] <= seq else bisect_right(seqs, seq)
        self._items += self._held[:stored]
        del self._held[:stored], seqs[:stored]
        self._ready.set()

    async def take(self) -> list[TurnItem]:
        """What is waiting, all of it; or up to the first ToolCalls (the answer's end)."""
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        items, self._items = self._items, []
        if self._calls:
            for i, item in enumerate(items):
                if isinstance(item, ToolCalls):
                    self._calls -= 1
                    items, self._items = items[: i + 1], items[i + 1 :]
                    break
        return items


class GatewayTurn:
    def __init__(
        self,
        session: Session,
        prompt: list[dict[str, Any]],
        task_log: TaskLog,
        context: TurnContext,
        on_finish: Callable[[GatewayTurn], Awaitable[None]],
    ) -> None:
        self.id = task_log.task_id
        self.session = session
        self.prompt = prompt
        self.log = task_log
        self.context = context
        self.mapper = TurnMapper(inline=context.inline_reasoning)
        self._on_finish = on_finish
        self._inbox: _Inbox | None = _Inbox() if context.consumed else None
        if self._inbox is not None:
            task_log.watch(self._inbox)
        self._calls: _CallOrder | None = None  # once its consumer answers the caller's tools
        self._client_turn: Any = None
        self._task: asyncio.Task[None] | None = None
        self.cancelling = False
        self.result: TurnEnd | TurnFailed | None = None
        self._end_emitted = False
        self.done = asyncio.Event()
        # The Chat Completions transcript the turn answers, when resumed by a request
        # carrying tool results (openai_chat.py): the conversation is found by it after.
        self.transcript: Any = None

    def start(self, started: dict[str, Any]) -> None:
        """Emit `task-started` (with `started` as its payload) and run the turn."""
        self.log.emit("task-started", started)
        try:  # the prompt is queued for the agent now, not when the task first runs
            self._client_turn = self.session.prompt(self.prompt)
        except ClientError as exc:
            self._start_error: ClientError | None = exc
        else:
            self._start_error = None
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def items(self) -> AsyncIterator[TurnItem]:
        """The consumer's view: steps, then one TurnEnd or TurnFailed."""
        async for batch in self.batches():
            for item in batch:
                yield item

    async def batches(self) -> AsyncIterator[list[TurnItem]]:
        """Like `items()`, but whatever is already waiting comes at once: one write to the
        HTTP client for many updates when the agent is faster than the network. Ends at a
        ToolCalls too: the turn goes on, and the next consumer (the request carrying the
        results) reads on from there."""
        inbox = self._inbox
        if inbox is None:
            return
        while True:
            batch = await inbox.take()
            yield batch
            if not isinstance(batch[-1], Step):
                return

    def take_calls(self) -> None:
        """Its consumer answers calls of the caller's tools (`put_call`)."""
        if self._inbox is not None:
            self._calls = _CallOrder(self._inbox, self.context.announce_grace_seconds)

    def put_call(self, call: Any) -> bool:
        """Hand the consumer a call of the caller's tools, in its place among the updates
        (False: no consumer to answer it)."""
        if self._inbox is None or self._calls is None:
            return False
        self._calls.call(call)
        return True

    def detach(self) -> None:
        """The consumer is gone: stop queueing for it (the log still gets everything)."""
        if self._inbox is not None:
            self.log.unsubscribe(self._inbox)
        self._inbox = None

    def cancel(self) -> None:
        """Ask the agent to stop (`session/cancel` goes out now); idempotent."""
        if self.done.is_set() or self.cancelling:
            return
        self.cancelling = True
        if self._client_turn is not None:
            self._spawn_cancel()

    async def wait(self) -> TurnEnd | TurnFailed:
        await self.done.wait()
        assert self.result is not None
        return self.result

    async def decide(self, request: PermissionRequest) -> PermissionAnswer:
        """Answer a permission request of this turn under its policy, saying why."""
        ctx = self.context
        return await ctx.desk.decide(
            ctx.policy,
            request,
            self.log,
            owner=ctx.owner,
            deadline_seconds=ctx.deadline_seconds,
            always_allow=ctx.always_allow,
        )

    # ---- the run ----------------------------------------------------------------------

    async def _run(self) -> None:
        guard = asyncio.get_running_loop().create_task(self._cancel_on_store_failure())
        try:
            if self._start_error is not None:
                raise self._start_error
            if self.cancelling:
                self._spawn_cancel()
            result: TurnEnd | TurnFailed = await self._consume()
        except AgentDisconnected as exc:
            result = TurnFailed(f"the agent exited during the turn: {exc}", "agent_disconnected")
        except ClientTimeout as exc:
            result = TurnFailed(str(exc), "agent_timeout")
        except AgentError as exc:
            result = TurnFailed(f"the agent answered an error: {exc.message}", "agent_error")
        except ClientError as exc:
            result = TurnFailed(str(exc), "agent_error")
        except Exception as exc:  # never leave a consumer hanging
            log.exception("turn %s failed", self.id)
            result = TurnFailed(f"gateway error: {type(exc).__name__}", "gateway_error")
        finally:
            guard.cancel()
        # The conversation is saved and released before the consumer hears of the end, so
        # a client that asks again the moment it has its answer is not told "busy".
        self.result = self._unless_unstored(result)
        try:
            await self._on_finish(self)
        finally:
            self.result = self._unless_unstored(self.result or result)
            self.emit_end()  # on_finish emits it with the task's row; this, if it failed first
            self._put(self.result)
            self.done.set()

    async def _cancel_on_store_failure(self) -> None:
        await self.log.failed.wait()
        log.error("turn %s: its frames could not be stored; cancelling it", self.id)
        self.cancel()

    def _unless_unstored(self, result: TurnEnd | TurnFailed) -> TurnEnd | TurnFailed:
        """The store failure, if the log had one: a turn whose frames were not all stored
        did not succeed, whatever the agent answered."""
        failure = self.log.failure
        if failure is None:
            return result
        error = failure.payload["error"]
        return TurnFailed(error["message"], error["code"])

    async def _consume(self) -> TurnEnd:
        end = None
        feed = self.mapper.feed  # once per update: bound once
        consumed = self.context.consumed
        v2 = speaks_v2(self.session)  # its updates are logged as v1's (agent_protocol.py)
        turn = self._client_turn
        parent = self.session.id
        # Waits for the first event of a burst, then takes the rest already received at
        # once (`Turn.ready`): one `__anext__` per burst, not one per streamed update,
        # and the burst's frames are numbered and queued at once (`TaskLog.emit_run`).
        async for first in turn:
            frames: list[dict[str, Any]] = []
            steps: list[Step] = []  # one per frame, when consumed
            announced: list[dict[str, Any]] = []  # tool calls, for the caller's (_CallOrder)
            for event in (first, *turn.ready()):
                if isinstance(event, Update):
                    if v2 and (event := logged_update(self.session, event)) is None:
                        continue  # a v2 state_update or prompt echo: the task's frames say it
                    frame = {"update": event.wire}  # the bytes received, passed on
                    if event.tool_call is not None:  # merged by id: readers need not fold
                        frame["toolCall"] = event.tool_call.raw
                    frames.append(frame)
                    if event.session_id != parent:  # a child's (client/children.py)
                        frame["childSessionId"] = event.session_id
                        continue  # never the parent's words, nor a call of the caller's
                    if event.tool_call is not None and self._calls is not None:
                        announced.append(event.tool_call.raw)
                    if consumed:  # mapped even once its consumer left (the transcript)
                        steps.append(Step(event, feed(event)))
                elif isinstance(event, TurnEnd):
                    end = event
            if frames:
                first_seq = self.log.emit_run("task-running", frames)
                inbox = self._inbox  # None once the consumer left (`detach`)
                if steps and inbox is not None:
                    inbox.hold_run(first_seq, steps)
                if announced and self._calls is not None:
                    self._calls.announced(announced)
        if end is None:
            raise ClientError("the turn ended without a stop reason")
        return end

    def emit_end(self) -> None:
        """The turn's terminal frame, from its result as kept (a lost lease makes it an
        error), once. Whoever keeps the turn's end emits it with the task's row, in one
        batch (sessions.py): a reader told the turn ended never reads it still running."""
        if self._end_emitted or self.result is None:
            return
        self._end_emitted = True
        result = self.result
        if isinstance(result, TurnEnd):
            usage = to_builtins(result.usage) if result.usage is not None else None
            payload = {"stopReason": result.stop_reason, "usage": usage}
            if result.forced:
                payload["forced"] = True
            self.log.emit("task-ended", payload)
        else:
            self.log.emit("task-error", {"error": {"message": result.message, "code": result.code}})

    def _put(self, item: TurnItem) -> None:
        if self._inbox is not None:
            self._inbox.put(item)

    def _spawn_cancel(self) -> None:
        task = asyncio.get_running_loop().create_task(self._cancel_client_turn())
        task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)

    async def _cancel_client_turn(self) -> None:
        with contextlib.suppress(ClientError):
            await self._client_turn.cancel()


__all__ = ["GatewayTurn", "Step", "ToolCalls", "TurnContext", "TurnFailed", "TurnItem"]
