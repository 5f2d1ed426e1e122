"""One turn of the agent: a prompt in, typed events out.

Theory of operation
-------------------
`run_turn` is an async generator run by the caller's task. Each round streams one LLM
reply (`replies.py`: text and thought deltas pass straight through; transient errors are
retried, each retry announced by a Notice), then runs the tool calls it asked for, one at a time:
announce (ToolCallStarted), ask the gate and maybe the human, run the tool as a child task
whose live reports are merged in through a queue, finish (ToolCallFinished). The results
go back to the model and the next round starts; a reply without tool calls ends the turn.

Before each request the turn measures it against the model's window
(`TurnDeps.context`): past the threshold it compacts the history first, and a refusal
for length compacts and retries once (agent/compaction.py). After each reply it reports
how full the context is (ContextUsage).

The session does not change during a turn: `_Turn` stages the messages, events and any
compaction and commits them in one `session.commit_turn` however the turn ends --
normally, cancelled, or on an LLM error (then the failed reply is dropped, never kept as
assistant text).

Cancellation is structured: the caller cancels its task (or closes the generator). The
CancelledError lands on whatever the loop awaits -- the LLM stream (closed, and its HTTP
connection with it), a tool's child task (cancelled), a permission request -- then the
staged history is made consistent (partial reply kept, every open tool call answered
"cancelled") and committed, and the error propagates. `drive_turn` wraps all this for
callers who want `TurnEnded("cancelled")` as a result instead.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from typing import Any

from agentao.agent.compaction import Compacted, CompactionJob, CompactionSettings, compact
from agentao.agent.config import Limits
from agentao.agent.context import (
    ContextBudget,
    estimate_messages,
    estimate_tools,
    is_context_overflow,
)
from agentao.agent.events import (
    CompactionDelta,
    CompactionFinished,
    CompactionStarted,
    CompactionTrigger,
    ContextUsage,
    Notice,
    PlanChanged,
    PlanEntry,
    StopReason,
    TextDelta,
    TextOutput,
    ThoughtDelta,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
    ToolOutput,
    TurnEnded,
    TurnEvent,
    Usage,
)
from agentao.agent.providers.base import (
    LlmEvent,
    LlmFinished,
    LlmProvider,
    LlmRequest,
    ToolCallRequest,
)
from agentao.agent.providers.errors import LlmError
from agentao.agent.providers.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
)
from agentao.agent.replies import Reply, add_usage, llm_events
from agentao.agent.session import AgentSession, Compaction, TurnRecord
from agentao.agent.tools.base import (
    Interaction,
    PermissionGate,
    PermissionReply,
    Tool,
    ToolContext,
    ToolEnv,
    ToolError,
    ToolResult,
)

__all__ = ["TurnDeps", "closing_events", "compact_now", "drive_turn", "run_turn"]

log = logging.getLogger(__name__)

CANCELLED_TEXT = "Cancelled"  # what the user and the model see for a call cut short
_USER_CANCELLED = "cancelled: the turn was cancelled while asking"  # never ran
# A reject whose answerer gave no reason: not "by the user", since no person may have seen it.
REJECTED_NO_REASON = "rejected: the client answered reject and gave no reason"
_FINISH_STOPS: dict[str, StopReason] = {"length": "max_tokens", "content_filter": "refusal"}


@dataclass(frozen=True, slots=True)
class TurnDeps:
    """What a turn runs against; built by the server per session."""

    provider: LlmProvider
    tools: Sequence[Tool]
    gate: PermissionGate
    env: ToolEnv
    interaction: Interaction
    limits: Limits = field(default_factory=Limits)
    system_prompt: str = ""
    context: ContextBudget | None = None  # the window and its meter; None: never compacts
    compaction: CompactionSettings = field(default_factory=CompactionSettings)


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
    turn = _Turn(session, shown or message.text, deps, message)
    async with aclosing(_committed(turn, _rounds(turn, deps))) as events:
        async for event in events:
            yield event


async def compact_now(
    session: AgentSession, deps: TurnDeps, shown: str
) -> AsyncIterator[TurnEvent]:
    """Compact the context now (`/compact`), as a turn of its own that the model never
    sees; the last event is TurnEnded."""
    turn = _Turn(session, shown, deps, None)
    async with aclosing(_committed(turn, _compact_only(turn))) as events:
        async for event in events:
            yield event


async def _rounds(turn: _Turn, deps: TurnDeps) -> AsyncIterator[TurnEvent]:
    for _round in range(max(1, deps.limits.max_tool_rounds)):
        async with aclosing(_reply(turn, deps)) as replying:
            async for event in replying:
                yield turn.emit(event)
        reply = turn.reply
        assert reply is not None
        stop = turn.finish_reply()
        if (usage := turn.usage_after(reply)) is not None:
            yield turn.emit(usage)
        if stop is not None:
            yield turn.end(stop)
            return
        for call in reply.calls:
            async with aclosing(_run_call(call, turn, deps)) as steps:
                async for event in steps:
                    yield turn.emit(event)
            if turn.user_cancelled:
                yield turn.end("cancelled")
                return
    yield turn.end("max_turn_requests")


async def _compact_only(turn: _Turn) -> AsyncIterator[TurnEvent]:
    async for event in turn.fit("command"):
        yield turn.emit(event)
    if turn.compaction is None:
        yield turn.emit(TextDelta("Nothing to compact: the context holds only recent turns."))
    yield turn.end("end_turn")


async def _committed(turn: _Turn, body: AsyncIterator[TurnEvent]) -> AsyncIterator[TurnEvent]:
    """`body`'s events; the turn is committed however it ends (see the module docstring)."""
    try:
        async with aclosing(body) as events:
            async for event in events:
                yield event
    except (asyncio.CancelledError, GeneratorExit):
        turn.commit("cancelled")
        raise
    except LlmError as exc:
        turn.commit(None, error=exc.reason)
        raise
    except BaseException:
        turn.commit(None, error="internal")
        raise


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
    once, e.g. by an enclosing timeout as well, the CancelledError propagates.) LlmError
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
        task = asyncio.current_task()
        if task is not None and task.uncancel() > 0:
            raise
        for event in closing_events(seen):
            await emit(event)
        return TurnEnded("cancelled")
    ended = seen[-1]
    assert isinstance(ended, TurnEnded)
    return ended


def closing_events(events: Sequence[TurnEvent]) -> list[TurnEvent]:
    """What ends a turn cut short after `events`: a failed finish for each open tool call
    (and a cancelled one for an open compaction), then TurnEnded("cancelled")."""
    open_calls: dict[str, None] = {}
    compacting: CompactionStarted | None = None
    for event in events:
        if isinstance(event, ToolCallStarted):
            open_calls[event.call_id] = None
        elif isinstance(event, ToolCallFinished):
            open_calls.pop(event.call_id, None)
        elif isinstance(event, CompactionStarted):
            compacting = event
        elif isinstance(event, CompactionFinished):
            compacting = None
    cancelled = (TextOutput(CANCELLED_TEXT),)
    closing: list[TurnEvent] = [ToolCallFinished(c, "failed", cancelled) for c in open_calls]
    if compacting is not None:
        closing.insert(
            0, CompactionFinished(compacting.compaction_id, "cancelled", compacting.tokens_before)
        )
    return [*closing, TurnEnded("cancelled")]


# --- the LLM side ---------------------------------------------------------------------


async def _reply(turn: _Turn, deps: TurnDeps) -> AsyncIterator[TurnEvent]:
    """Stream one reply into `turn.reply`: compacting first when the request would pass
    the threshold, and once more, then retrying, when the provider refuses its length."""
    async for event in turn.fit("threshold"):
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
            turn.refused(exc, request)
            async for event in turn.fit("refusal"):
                yield event
            continue
        turn.sent = request
        return


# --- the tool side --------------------------------------------------------------------


async def _run_call(call: ToolCallRequest, turn: _Turn, deps: TurnDeps) -> AsyncIterator[TurnEvent]:
    """One tool call, announced, permitted, run and finished; its result is staged."""
    tool = turn.tools.get(call.name)
    ctx = turn.context(call.id)
    started = _announce(call, tool, ctx)
    silent = tool is not None and tool.plan_only
    if not silent:
        yield started
    refusal = _check(call, tool)
    if refusal is None and tool is not None:
        refusal = await _permission(tool, call, started, ctx, deps)
    if refusal is not None:
        if not silent:
            yield ToolCallFinished(call.id, "failed", (TextOutput(refusal),))
        turn.answer(call, refusal, is_error=True, cancelled=refusal == _USER_CANCELLED)
        return
    assert tool is not None
    if not silent:
        yield ToolCallProgress(call.id)  # running now: the editor shows in_progress
    result: ToolResult | None = None
    async with aclosing(_execute(tool, call.arguments, ctx, deps.limits)) as running:
        async for item in running:
            if isinstance(item, ToolResult):
                result = item
            elif not silent:
                yield item
    assert result is not None
    if result.plan is not None:
        yield turn.set_plan(result.plan)
    if not silent:
        content = result.content
        if result.is_error and not content:  # a failure always says why
            content = (TextOutput(result.model_text),)
        status = "failed" if result.is_error else "completed"
        yield ToolCallFinished(call.id, status, content, result.raw_output)
    turn.answer(call, result.model_text, is_error=result.is_error)


def _announce(call: ToolCallRequest, tool: Tool | None, ctx: ToolContext) -> ToolCallStarted:
    if tool is None:
        return ToolCallStarted(call.id, call.name, call.name, "other", call.arguments)
    try:
        title, locations = tool.title(call.arguments), tool.locations(call.arguments, ctx.cwd)
    except Exception:  # bad arguments: the tool itself will say what is wrong
        title, locations = tool.name, ()
    return ToolCallStarted(call.id, tool.name, title, tool.kind, call.arguments, locations)


def _check(call: ToolCallRequest, tool: Tool | None) -> str | None:
    if tool is None:
        return f"unknown tool {call.name!r}"
    if call.raw_arguments is not None:
        return f"the arguments are not a JSON object: {call.raw_arguments[:200]!r}"
    return None


async def _permission(
    tool: Tool, call: ToolCallRequest, started: ToolCallStarted, ctx: ToolContext, deps: TurnDeps
) -> str | None:
    """None when the call may run, else the reason it may not."""
    decision = deps.gate.decide(tool, call.arguments, ctx)
    ctx.confinement = decision.confinement
    if decision.verdict == "allow":
        return None
    if decision.verdict == "deny":
        return f"denied: {decision.reason}" if decision.reason else "denied by permission policy"
    reply = PermissionReply.of(await deps.interaction.request_permission(started))
    if reply.outcome == "allow_always":
        deps.gate.remember(tool, call.arguments, ctx)
    if reply.outcome in ("allow", "allow_always"):
        return None
    if reply.outcome == "cancelled":
        return _USER_CANCELLED
    return f"rejected: {reply.reason}" if reply.reason else REJECTED_NO_REASON


async def _execute(
    tool: Tool, args: dict[str, Any], ctx: ToolContext, limits: Limits
) -> AsyncIterator[ToolCallProgress | ToolResult]:
    """Run the tool as a child task; yield its live reports, then its result. Closing
    this generator (cancellation) cancels the task and gives it a grace period."""
    queue: asyncio.Queue[ToolCallProgress | ToolResult] = asyncio.Queue()

    async def report(content: tuple[ToolOutput, ...]) -> None:
        queue.put_nowait(ToolCallProgress(ctx.call_id, tuple(content)))

    ctx.report = report
    task = asyncio.create_task(_run_tool(tool, args, ctx, queue), name=f"tool {tool.name}")
    try:
        while not isinstance(item := await queue.get(), ToolResult):
            yield item
        yield item
    finally:
        if not task.done():
            task.cancel()
            await asyncio.wait([task], timeout=limits.tool_cancel_grace)
            if not task.done():
                log.warning(
                    "tool %s still running %.1fs after cancel", tool.name, limits.tool_cancel_grace
                )


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


# --- the staged turn ------------------------------------------------------------------


class _Turn:
    """A turn's messages and events, staged until `commit`."""

    def __init__(
        self, session: AgentSession, prompt: str, deps: TurnDeps, message: UserMessage | None
    ) -> None:
        self.session = session
        self.prompt = prompt
        self.deps = deps
        self.tools = {t.name: t for t in deps.tools}
        self.specs = tuple(t.schema() for t in deps.tools)
        self.system = (SystemMessage(deps.system_prompt),) if deps.system_prompt else ()
        self.messages: list[Message] = [message] if message is not None else []
        self.history: tuple[Message, ...] | None = None  # the context after a compaction
        self.compaction: Compaction | None = None
        self.sent: LlmRequest | None = None  # the last request the model answered
        self.cost = 0.0
        self.events: list[TurnEvent] = []
        self.reply: Reply | None = None  # streaming, not yet in messages
        self.reply_start = 0  # len(events) when it began
        self.answered: set[str] = set()
        self.plan: tuple[PlanEntry, ...] | None = None
        self.usage: Usage | None = None
        self.user_cancelled = False
        self.committed = False

    def request(self) -> LlmRequest:
        history = self.history if self.history is not None else self.session.messages
        return LlmRequest(self.session.model, (*self.system, *history, *self.messages), self.specs)

    # --- the context window ---

    async def fit(self, trigger: CompactionTrigger) -> AsyncIterator[TurnEvent]:
        """Compact if the next request would pass the threshold (always, for a refusal or
        `/compact`); yields the compaction's events, then the context's new usage."""
        budget = self.deps.context
        if budget is None:
            return
        measure = budget.meter.measure(self.request())
        limit = self.deps.compaction.threshold * budget.window.tokens
        if trigger == "threshold" and measure.tokens <= limit:
            return
        job = self._job(budget, measure.tokens, trigger)
        stream = self._summary_stream
        async with aclosing(compact(job, stream, self.deps.compaction)) as steps:
            async for item in steps:
                if isinstance(item, Compacted):
                    self._compacted(item)
                    yield self._usage(budget, self.request())
                else:
                    yield item

    def _job(self, budget: ContextBudget, tokens: int, trigger: CompactionTrigger) -> CompactionJob:
        bpt = budget.bytes_per_token
        prefix, keep_from = (
            (self.compaction.prefix, self.compaction.keep_from)
            if self.compaction is not None
            else self.session.context_base()
        )
        return CompactionJob(
            model=self.session.model,
            turns=self.session.turns,
            prefix=prefix,
            keep_from=keep_from,
            current=tuple(self.messages),
            plan=self.plan if self.plan is not None else self.session.plan,
            overhead=estimate_messages(self.system, bpt) + estimate_tools(self.specs, bpt),
            window=budget.window.tokens,
            tokens_before=tokens,
            trigger=trigger,
            bytes_per_token=bpt,
        )

    async def _summary_stream(self, request: LlmRequest) -> AsyncIterator[LlmEvent | Notice]:
        """The summary request goes out like a reply (retries announced); its cost counts."""
        async with aclosing(llm_events(self.deps.provider, self.deps.limits, request)) as events:
            async for item in events:
                if isinstance(item, LlmFinished):
                    self._charge(item.usage)
                yield item

    def _compacted(self, outcome: Compacted) -> None:
        record = outcome.record
        self.compaction = record
        turns = self.session.turns[record.keep_from :]
        self.history = (*record.prefix, *(m for t in turns for m in t.messages))
        self.messages = list(outcome.current)
        assert self.deps.context is not None
        self.deps.context.meter.forget()

    def refused(self, exc: LlmError, request: LlmRequest) -> None:
        """The provider refused `request` for its length: drop the reply, learn the window."""
        self.reply = None
        del self.events[self.reply_start :]
        budget = self.deps.context
        assert budget is not None
        budget.learn(exc, budget.meter.measure(request).tokens)
        budget.meter.forget()

    def usage_after(self, reply: Reply) -> ContextUsage | None:
        """The context's usage after `reply` (from the provider's count when it gave one)."""
        budget = self.deps.context
        usage = reply.finish.usage if reply.finish is not None else None
        self._charge(usage)
        if budget is None or self.sent is None:
            return None
        budget.meter.observe(self.sent, usage)
        return self._usage(budget, None)

    def _usage(self, budget: ContextBudget, request: LlmRequest | None) -> ContextUsage:
        measure = budget.meter.measure(request) if request is not None else budget.meter.last
        assert measure is not None
        priced = budget.model is not None and budget.model.cost(0, 0) is not None
        cost = self.session.cost + self.cost if priced else None
        currency = budget.model.currency if budget.model is not None else "USD"
        return ContextUsage(measure.tokens, budget.window.tokens, measure.estimated, cost, currency)

    def _charge(self, usage: Usage | None) -> None:
        model = self.deps.context.model if self.deps.context is not None else None
        if usage is not None and model is not None:
            self.cost += model.cost(usage.input_tokens, usage.output_tokens) or 0.0

    def context(self, call_id: str) -> ToolContext:
        s = self.session
        roots = s.pin_roots()
        return ToolContext(
            roots.cwd,
            self.deps.env,
            self.deps.interaction,
            roots.paths,
            call_id,
            state=s.tool_state,
            roots=roots,
        )

    def emit(self, event: TurnEvent) -> TurnEvent:
        self.events.append(event)
        return event

    def start_reply(self) -> Reply:
        # A later reply's text is a new paragraph for the reader: without it, two replies
        # joined by a tool call run together ("for you.Writing") in every client that
        # concatenates chunks. History keeps each reply's own text.
        shown = any(isinstance(e, TextDelta) for e in self.events)
        self.reply, self.reply_start = Reply(lead="\n\n" if shown else ""), len(self.events)
        return self.reply

    def finish_reply(self) -> StopReason | None:
        """Stage the reply; the turn's stop reason if it ends here."""
        reply, self.reply = self.reply, None
        assert reply is not None and reply.finish is not None
        self.usage = add_usage(self.usage, reply.finish.usage)
        stop = _FINISH_STOPS.get(reply.finish.finish_reason)  # cut short: its calls are not run
        self._stage(reply.message(with_calls=stop is None))
        return stop or (None if reply.calls else "end_turn")

    def _stage(self, message: AssistantMessage) -> None:
        if message.text or message.tool_calls:  # an empty reply is no message at all
            self.messages.append(message)

    def answer(
        self, call: ToolCallRequest, text: str, is_error: bool, cancelled: bool = False
    ) -> None:
        self.messages.append(ToolResultMessage(call.id, call.name, text, is_error))
        self.answered.add(call.id)
        self.user_cancelled = self.user_cancelled or cancelled

    def set_plan(self, plan: tuple[PlanEntry, ...]) -> PlanChanged:
        self.plan = plan
        return PlanChanged(plan)

    def end(self, stop: StopReason) -> TurnEnded:
        ended = TurnEnded(stop, self.usage)
        self.emit(ended)
        self.commit(stop)
        return ended

    def commit(self, stop: StopReason | None, error: str | None = None) -> None:
        if self.committed:
            return
        self.committed = True
        if stop == "cancelled" and not (self.events and isinstance(self.events[-1], TurnEnded)):
            self.events += closing_events(self.events)
        if self.reply is not None:  # cut off mid-reply
            if error is None:  # cancelled: keep what was said, calls never arrived
                self._stage(self.reply.message(with_calls=False))
            else:  # failed: drop the reply, from history and from the record
                del self.events[self.reply_start :]
        self._answer_open_calls()
        record = TurnRecord(
            self.prompt,
            tuple(self.messages),
            _compact(self.events),
            stop,
            error,
            self.compaction,
            self.cost,
        )
        self.session.commit_turn(record, self.plan)

    def _answer_open_calls(self) -> None:
        """Every tool call the model made gets a result, or the next request is invalid.
        Only the last reply can have open calls: each round answers all of its own."""
        last = next((m for m in reversed(self.messages) if isinstance(m, AssistantMessage)), None)
        for call in last.tool_calls if last is not None else ():
            if call.id not in self.answered:
                self.messages.append(ToolResultMessage(call.id, call.name, CANCELLED_TEXT, True))


_LIVE_ONLY = (ToolCallProgress, Notice, ContextUsage, CompactionStarted, CompactionDelta)


def _compact(events: list[TurnEvent]) -> tuple[TurnEvent, ...]:
    """Events as replay needs them: adjacent deltas merged; live progress, notices, usage
    and a compaction's progress gone (its CompactionFinished holds the summary)."""
    out: list[TurnEvent] = []
    for event in events:
        if isinstance(event, _LIVE_ONLY):
            continue
        prev = out[-1] if out else None
        if isinstance(event, TextDelta | ThoughtDelta) and type(prev) is type(event):
            out[-1] = replace(event, text=prev.text + event.text)  # type: ignore[union-attr]
        else:
            out.append(event)
    return tuple(out)
