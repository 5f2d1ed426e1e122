"""One turn of the agent: a prompt in, typed events out.

Theory of operation
-------------------
`run_turn` is an async generator run by the caller's task. Each round streams one LLM
reply (`replies.py`: text and thought deltas pass straight through; transient errors are
retried, each retry announced by a Notice), then runs the tool calls it asked for, one at
a time, or side by side where the tool allows it (`parallel_calls.py`; each call in
`tool_call.py`: announce, ask the gate and maybe the human, run the tool as a child
task whose live reports are merged in, finish). The results go back to the model and the
next round starts; a reply without tool calls ends the turn.

Before each request the turn measures it against the model's window
(`compaction_trigger.py`): past the threshold it compacts the history first, and a
refusal for length compacts and retries once. After each reply it reports how full the
context is and what the session has cost (`usage.py`).

Steering (`steering.py`): before each request the turn drains the session's steering
inbox into the history as user messages (after the tool output the model is about to
see), each shown as a `UserText` event where it landed. A model that is done while the
inbox holds text gets one more step instead; the inbox closes the moment the turn
decides to end, so text is either read by this turn or refused, never lost.

The session does not change during a turn: `StagedTurn` (`staging.py`) stages the
messages, events and any compaction and commits them in one `session.commit_turn`
however the turn ends -- normally, cancelled, or on an LLM error (then the failed reply
is dropped, never kept as assistant text).

Cancellation is structured: the caller cancels its task (or closes the generator). The
CancelledError lands on whatever the loop awaits -- the LLM stream (closed, and its HTTP
connection with it), a tool's child task (cancelled), a permission request -- then the
staged history is made consistent (partial reply kept, every open tool call answered
"cancelled") and committed, and the error propagates. `drive_turn` wraps all this for
callers who want `TurnEnded("cancelled")` as a result instead. What a cancelled turn's
record, events and answer are is decided in one place: `cancellation.py`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing

from agentao.agent.cancellation import cancel_ends_turn, closing_events
from agentao.agent.compaction_trigger import fit
from agentao.agent.context import is_context_overflow
from agentao.agent.events import TextDelta, TurnEnded, TurnEvent
from agentao.agent.parallel_calls import run_calls
from agentao.agent.providers.errors import LlmError
from agentao.agent.providers.messages import UserMessage
from agentao.agent.replies import llm_events
from agentao.agent.session import AgentSession
from agentao.agent.staging import StagedTurn
from agentao.agent.turn_deps import TurnDeps

__all__ = ["compact_now", "drive_turn", "run_turn"]

Prompt = str | UserMessage  # text, or text with images


async def run_turn(
    session: AgentSession, prompt: Prompt, deps: TurnDeps, shown: str | None = None
) -> AsyncIterator[TurnEvent]:
    """Run one turn; the last event is TurnEnded. One turn at a time per session.

    Iterate it under `contextlib.aclosing` (or use `drive_turn`), so that abandoning it
    also closes the LLM stream and the running tool. A `ToolCallProgress` without content
    means "the tool is running now" (after permission). LlmError (non-transient, or
    retries exhausted) propagates; the turn is committed without the failed reply.
    `shown`: the prompt as the user typed it (a command), when the model is sent another."""
    message = prompt if isinstance(prompt, UserMessage) else UserMessage(prompt)
    turn = StagedTurn(session, shown or message.text, deps, message)
    deps.stoppable.new_turn()
    deps.steering.open()
    try:
        async with aclosing(_committed(turn, _rounds(turn, deps))) as events:
            async for event in events:
                yield event
    finally:
        deps.steering.close()


async def compact_now(
    session: AgentSession, deps: TurnDeps, shown: str
) -> AsyncIterator[TurnEvent]:
    """Compact the context now (`/compact`), as a turn of its own that the model never
    sees; the last event is TurnEnded."""
    turn = StagedTurn(session, shown, deps, None)
    async with aclosing(_committed(turn, _compact_only(turn, deps))) as events:
        async for event in events:
            yield event


async def drive_turn(
    session: AgentSession,
    prompt: Prompt,
    deps: TurnDeps,
    emit: Callable[[TurnEvent], Awaitable[None]],
    shown: str | None = None,
    events: AsyncIterator[TurnEvent] | None = None,
) -> TurnEnded:
    """Run one turn, awaiting `emit(event)` for each event, and return its TurnEnded.

    Meant as the body of the server's per-turn task (`events`: another turn-shaped
    stream, such as `compact_now`, instead of `run_turn`). Cancelling that task cancels the
    turn; the task then emits the closing events -- a failed ToolCallFinished for each
    tool call left open, then TurnEnded("cancelled") -- and *returns* that TurnEnded, so
    the prompt is answered `stopReason: "cancelled"`. (If the task was cancelled more than
    once, e.g. by an enclosing timeout as well, the CancelledError propagates; a cancel
    that lands after TurnEnded was taken finds the turn over: that end stands.) LlmError
    and other failures propagate; the turn is committed to the session in every case.
    """
    seen: list[TurnEvent] = []
    source = events if events is not None else run_turn(session, prompt, deps, shown)
    try:
        async with aclosing(source) as stream:
            async for event in stream:
                seen.append(event)
                await emit(event)
    except asyncio.CancelledError:
        if not cancel_ends_turn():
            raise
        closing = closing_events(seen)  # nothing if the turn had ended: its end stands
        for event in closing:
            await emit(event)
        seen += closing
    ended = seen[-1]
    assert isinstance(ended, TurnEnded)
    return ended


async def _rounds(turn: StagedTurn, deps: TurnDeps) -> AsyncIterator[TurnEvent]:
    tools = {t.name: t for t in deps.tools}
    for _round in range(max(1, deps.limits.max_tool_rounds)):
        for text in deps.steering.drain():  # after the tool output, before the request
            yield turn.emit(turn.steer(text))
        async with aclosing(_reply(turn, deps)) as replying:
            async for event in replying:
                yield turn.emit(event)
        reply = turn.reply
        assert reply is not None and reply.finish is not None
        stop = turn.finish_reply()
        if (usage := turn.use.after_reply(turn.sent, reply.finish.usage)) is not None:
            yield turn.emit(usage)
        if stop == "end_turn" and deps.steering.pending:
            continue  # steered as the model finished: one more step reads it
        if stop is not None:
            deps.steering.close()  # ending now: later words are not this turn's
            yield turn.end(stop)
            return
        async with aclosing(run_calls(reply.calls, tools, turn, deps)) as steps:
            async for event in steps:
                yield turn.emit(event)
        if turn.cancelled_by_user:
            deps.steering.close()
            yield turn.end("cancelled")
            return
    deps.steering.close()
    yield turn.end("max_turn_requests")


async def _compact_only(turn: StagedTurn, deps: TurnDeps) -> AsyncIterator[TurnEvent]:
    async for event in fit(turn, deps, "command"):
        yield turn.emit(event)
    if turn.compaction is None:
        yield turn.emit(TextDelta("Nothing to compact: the context holds only recent turns."))
    yield turn.end("end_turn")


async def _committed(turn: StagedTurn, body: AsyncIterator[TurnEvent]) -> AsyncIterator[TurnEvent]:
    """`body`'s events; the turn is committed however it ends (see the module docstring)."""
    try:
        async with aclosing(body) as events:
            async for event in events:
                yield event
    except BaseException as exc:
        turn.cut_short(exc)
        raise


async def _reply(turn: StagedTurn, deps: TurnDeps) -> AsyncIterator[TurnEvent]:
    """Stream one reply into `turn.reply`: compacting first when the request would pass
    the threshold, and once more, then retrying, when the provider refuses its length."""
    async for event in fit(turn, deps, "threshold"):
        yield event
    for attempt in range(2):
        reply = turn.start_reply()
        request = turn.request()
        try:
            async with aclosing(llm_events(deps.provider, deps.limits, request)) as llm:
                async for item in llm:
                    if (out := reply.take(item)) is not None:
                        yield out
        except LlmError as exc:
            if attempt or not is_context_overflow(exc) or deps.context is None:
                raise
            turn.drop_reply()
            deps.context.refused(exc, request)
            async for event in fit(turn, deps, "refusal"):
                yield event
            continue
        turn.sent = request
        return
