"""One tool call of a turn: announced, checked, permitted, run, finished.

`run_call` yields the call's events: ToolCallStarted, then (when permitted) a bare
ToolCallProgress ("running now"), the tool's live reports, and ToolCallFinished; a
plan-only tool (`todo_write`) is silent, its plan shown as PlanChanged instead. The tool
runs as a child task whose reports come in through a queue, so cancelling the turn
cancels the tool (with a grace period). A stoppable tool's task is registered with the
session's `StoppableCalls` while it runs (its "running now" progress says so): stopping
it alone finishes the call "cancelled", tells the model, and the turn goes on
(`stoppable.py`). The result is staged for the model, whatever happened: a refusal
(unknown tool, bad arguments, denied, rejected) is its result too.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from agentao.agent.cancellation import ASK_CANCELLED, CANCELLED_TEXT
from agentao.agent.checkpoints import Watch, tool_paths
from agentao.agent.events import (
    ChildUpdate,
    TerminalEvent,
    TextOutput,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
    ToolOutput,
    TurnEvent,
)
from agentao.agent.paths import paths_of
from agentao.agent.providers.base import ToolCallRequest
from agentao.agent.session import AgentSession
from agentao.agent.staging import StagedTurn
from agentao.agent.stoppable import StoppableCalls
from agentao.agent.tools.base import PermissionReply, Tool, ToolContext, ToolError, ToolResult
from agentao.agent.turn_deps import TurnDeps

__all__ = ["REJECTED_NO_REASON", "STOPPED", "Refusal", "run_call"]

log = logging.getLogger(__name__)

# A reject whose answerer gave no reason: not "by the user", since no person may have seen it.
REJECTED_NO_REASON = "rejected: the client answered reject and gave no reason"
# What the model is told of a call the user stopped while it ran (the turn goes on).
STOPPED = "cancelled: the user stopped this tool call before it finished"


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a call may not run: the text the user and the model see."""

    text: str
    cancels_turn: bool = False  # the client cancelled the question: the turn ends "cancelled"


async def run_call(
    call: ToolCallRequest, tool: Tool | None, turn: StagedTurn, deps: TurnDeps
) -> AsyncIterator[TurnEvent]:
    """One tool call, announced, permitted, run and finished; its result is staged."""
    ctx = tool_context(turn.session, deps, call.id)
    started = _announce(call, tool, ctx)
    silent = tool is not None and tool.plan_only
    deps.stoppable.announced(call.id)
    if not silent:
        yield started
    refusal = _check(call, tool)
    if refusal is None and tool is not None:
        refusal = await _permission(tool, call, started, ctx, deps)
    if refusal is not None:
        deps.stoppable.finished(call.id)
        if not silent:
            yield ToolCallFinished(call.id, "failed", (TextOutput(refusal.text),))
        turn.answer(call, refusal.text, is_error=True, cancels_turn=refusal.cancels_turn)
        return
    assert tool is not None
    if tool.cancellable:
        deps.stoppable.offered(call.id)  # before the client hears it: a stop is taken
    if not silent:  # running now: the editor shows in_progress (and a stop button)
        yield ToolCallProgress(call.id, cancellable=tool.cancellable)
    result: ToolResult | None = None
    watch = await _watch(tool, call, turn, ctx, deps)
    try:
        async with aclosing(_execute(tool, call.arguments, ctx, deps)) as running:
            async for item in running:
                if isinstance(item, ToolResult):
                    result = item
                elif not silent:
                    yield item
    finally:
        if watch is not None:  # what the call left, even when the turn was cancelled
            await watch.after()
    assert result is not None
    if result.plan is not None:
        yield turn.set_plan(result.plan)
    if not silent:
        yield _finished(call, result)
    turn.answer(call, result.model_text, is_error=result.is_error)


def tool_context(session: AgentSession, deps: TurnDeps, call_id: str) -> ToolContext:
    """What a tool sees: the session's roots, pinned for this call, and its environment."""
    roots = session.pin_roots()
    return ToolContext(
        roots.cwd,
        deps.env,
        deps.interaction,
        roots.paths,
        call_id,
        state=session.tool_state,
        roots=roots,
        stoppable=deps.stoppable,
        session=session,
        deps=deps,
    )


async def _watch(
    tool: Tool, call: ToolCallRequest, turn: StagedTurn, ctx: ToolContext, deps: TurnDeps
) -> Watch | None:
    """The call's file changes, recorded in its turn's checkpoint (checkpoints.py)."""
    if deps.checkpoints is None:
        return None
    paths = tool_paths(paths_of(tool, call.arguments, ctx.cwd), ctx.cwd)
    index = len(turn.session.turns)  # the turn running now (committed when it ends)
    return await deps.checkpoints.watch(index, ctx.cwd, tool.kind, paths)


def _announce(call: ToolCallRequest, tool: Tool | None, ctx: ToolContext) -> ToolCallStarted:
    if tool is None:
        return ToolCallStarted(call.id, call.name, call.name, "other", call.arguments)
    try:
        title, locations = tool.title(call.arguments), tool.locations(call.arguments, ctx.cwd)
    except Exception:  # bad arguments: the tool itself will say what is wrong
        title, locations = tool.name, ()
    return ToolCallStarted(call.id, tool.name, title, tool.kind, call.arguments, locations)


def _check(call: ToolCallRequest, tool: Tool | None) -> Refusal | None:
    if tool is None:
        return Refusal(f"unknown tool {call.name!r}")
    if call.raw_arguments is not None:
        return Refusal(f"the arguments are not a JSON object: {call.raw_arguments[:200]!r}")
    return None


async def _permission(
    tool: Tool, call: ToolCallRequest, started: ToolCallStarted, ctx: ToolContext, deps: TurnDeps
) -> Refusal | None:
    """None when the call may run, else why it may not."""
    decision = deps.gate.decide(tool, call.arguments, ctx)
    ctx.confinement = decision.confinement
    if decision.verdict == "allow":
        return None
    if decision.verdict == "deny":
        reason = decision.reason
        return Refusal(f"denied: {reason}" if reason else "denied by permission policy")
    reply = PermissionReply.of(await deps.interaction.request_permission(started))
    if reply.outcome == "allow_always":
        deps.gate.remember(tool, call.arguments, ctx)
    if reply.outcome in ("allow", "allow_always"):
        return None
    if reply.outcome == "cancelled":
        return Refusal(ASK_CANCELLED, cancels_turn=True)
    return Refusal(f"rejected: {reply.reason}" if reply.reason else REJECTED_NO_REASON)


def _finished(call: ToolCallRequest, result: ToolResult) -> ToolCallFinished:
    content = result.content
    if result.is_error and not content:  # a failure always says why
        content = (TextOutput(result.model_text),)
    status = "cancelled" if result.stopped else "failed" if result.is_error else "completed"
    return ToolCallFinished(call.id, status, content, result.raw_output)


async def _execute(
    tool: Tool, args: dict[str, Any], ctx: ToolContext, deps: TurnDeps
) -> AsyncIterator[ToolCallProgress | TerminalEvent | ChildUpdate | ToolResult]:
    """Run the tool as a child task; yield its live reports, then its result. Closing
    this generator (cancellation) cancels the task and gives it a grace period; a
    stoppable tool's task is the session's to stop meanwhile (then its result says so)."""
    queue: asyncio.Queue[ToolCallProgress | TerminalEvent | ChildUpdate | ToolResult] = (
        asyncio.Queue()
    )
    limits = deps.limits

    async def report(content: tuple[ToolOutput, ...]) -> None:
        queue.put_nowait(ToolCallProgress(ctx.call_id, tuple(content)))

    async def flush() -> None:  # every item queued before this one is yielded (written)
        barrier = _Barrier()
        queue.put_nowait(barrier)  # type: ignore[arg-type]
        await barrier.wait()

    ctx.report = report
    ctx.show = queue.put_nowait  # a terminal's events, in order with the reports
    ctx.flush = flush
    task = asyncio.create_task(_run_tool(tool, args, ctx, queue), name=f"tool {tool.name}")
    if tool.cancellable:
        _stoppable(task, ctx.call_id, deps.stoppable, queue)
    try:
        while not isinstance(item := await queue.get(), ToolResult):
            if isinstance(item, _Barrier):
                item.set()  # the consumer came back for more: what came before is out
                continue
            yield item
        yield item
    finally:
        deps.stoppable.finished(ctx.call_id)
        if not task.done():
            task.cancel()
            await asyncio.wait([task], timeout=limits.tool_cancel_grace)
            if not task.done():
                log.warning(
                    "tool %s still running %.1fs after cancel", tool.name, limits.tool_cancel_grace
                )


class _Barrier(asyncio.Event):
    """A marker in a tool's report queue: set once every item before it is yielded."""


def _stoppable(
    task: asyncio.Task[None], call_id: str, calls: StoppableCalls, queue: asyncio.Queue
) -> None:
    """Let the session stop `task`; a stop (not the turn's cancel) queues its result.
    A done callback, not an `except` in the task: a task stopped before its first step
    never runs a line of its coroutine."""
    calls.running(call_id, task)

    def done(t: asyncio.Task[None]) -> None:
        if t.cancelled() and calls.was_stopped(call_id):
            stopped = (TextOutput(CANCELLED_TEXT),)
            queue.put_nowait(ToolResult(STOPPED, stopped, is_error=True, stopped=True))

    task.add_done_callback(done)


async def _run_tool(
    tool: Tool, args: dict[str, Any], ctx: ToolContext, queue: asyncio.Queue
) -> None:
    try:
        result = await tool.run(args, ctx)
    except ToolError as exc:
        result = ToolResult(str(exc), is_error=True)
    except Exception as exc:  # a bug in the tool: the model and the user are told
        log.exception("tool %s failed", tool.name)
        result = ToolResult(f"{tool.name} failed: {type(exc).__name__}: {exc}", is_error=True)
    queue.put_nowait(result)
