"""A model step's tool calls, run in order, except the ones that may run side by side.

Most tools run one at a time, in the order the model asked (a write, then the command
that reads it). A tool marked `Tool.parallel` (the subagent tool: each child has its own
context and touches nothing of its siblings' until it answers) runs together with the
calls next to it that are marked too, at most `Limits.subagent_parallel` at once.

Side by side, each call's events are passed on one at a time, and a call's generator
resumes only once its event was taken by the turn (and so written): the order within a
call is kept, and `ToolContext.flush` still means "what I showed is out". A call whose
answer was "cancelled" (a permission question the client cancelled) ends the run: no
later call starts, and the turn ends cancelled (`turn.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing

from agentao.agent.events import TurnEvent
from agentao.agent.providers.base import ToolCallRequest
from agentao.agent.staging import StagedTurn
from agentao.agent.tool_call import run_call
from agentao.agent.tools.base import Tool
from agentao.agent.turn_deps import TurnDeps

__all__ = ["run_calls"]


async def run_calls(
    calls: Sequence[ToolCallRequest], tools: dict[str, Tool], turn: StagedTurn, deps: TurnDeps
) -> AsyncIterator[TurnEvent]:
    """Every call of one reply, each group of parallel ones together; stops after a call
    that cancels the turn."""
    for group in _groups(calls, tools):
        if len(group) == 1:
            steps = run_call(group[0], tools.get(group[0].name), turn, deps)
        else:
            steps = _together(group, tools, turn, deps)
        async with aclosing(steps) as events:
            async for event in events:
                yield event
        if turn.cancelled_by_user:
            return


def _groups(
    calls: Sequence[ToolCallRequest], tools: dict[str, Tool]
) -> list[list[ToolCallRequest]]:
    """Runs of adjacent parallel calls together; every other call alone."""

    def parallel(call: ToolCallRequest) -> bool:
        tool = tools.get(call.name)
        return tool is not None and tool.parallel

    groups: list[list[ToolCallRequest]] = []
    for call in calls:
        if parallel(call) and groups and parallel(groups[-1][-1]):
            groups[-1].append(call)
        else:
            groups.append([call])
    return groups


async def _together(
    group: list[ToolCallRequest], tools: dict[str, Tool], turn: StagedTurn, deps: TurnDeps
) -> AsyncIterator[TurnEvent]:
    """The calls of `group` at once (bounded), their events interleaved as they come."""
    out: asyncio.Queue[tuple[TurnEvent, asyncio.Event] | None] = asyncio.Queue()
    slots = asyncio.Semaphore(max(1, deps.limits.subagent_parallel))

    async def one(call: ToolCallRequest) -> None:
        steps = run_call(call, tools.get(call.name), turn, deps)
        async with slots, aclosing(steps) as events:
            async for event in events:
                taken = asyncio.Event()
                out.put_nowait((event, taken))
                await taken.wait()

    tasks = [asyncio.create_task(one(call), name=f"call {call.name}") for call in group]
    for task in tasks:
        task.add_done_callback(lambda _: out.put_nowait(None))
    try:
        running = len(tasks)
        while running:
            item = await out.get()
            if item is None:
                running -= 1
                continue
            event, taken = item
            yield event
            taken.set()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    for task in tasks:  # a bug in one call is the turn's failure, as it is for one alone
        if not task.cancelled() and (exc := task.exception()) is not None:
            raise exc
