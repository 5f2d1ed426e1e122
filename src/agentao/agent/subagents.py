"""Subagents: the `task` tool hands a task to a child agent with a context of its own.

Theory of operation
-------------------
The model calls `task {description, prompt, mode?}`. The child is a turn of its own
(`run_turn`) on a fresh `AgentSession` whose only message is `prompt`, against the
parent's provider, environment and tools, with three things narrowed:

- its tools are the parent's minus this one, unless the child is still above the depth
  setting (`Limits.subagent_depth`: 1, the default, means a child cannot delegate), so a
  child cannot hand work on without end;
- its permission gate is a fresh `PermissionEngine` in the narrower of the parent's mode
  and the `mode` asked for (`child_gate`): a read-only parent's child cannot write, whatever
  the model asks. The parent's rules and remembered grants hold for it; what the child is
  allowed "always" stays the child's;
- its questions go to the parent's person (`_ChildInteraction`): the child's state becomes
  `requires_action`, that state and every update before it are written (`ctx.flush`), then
  the parent's `Interaction` asks -- under the child's own session where the client shows
  children (`for_child`, server/), else under the parent's, naming the child.

Everything the child shows travels as `ChildUpdate` events in the parent's tool call (the
server sends them as the child session's updates, or not at all), and the call's progress
(`ToolCallProgress` content) lists the child's steps for clients that show no children.
The child's last reply is the tool's result. The child is never stored on its own: its
events are part of the parent's turn record, so a load replays it with the parent.
Cancelling the parent's turn cancels the tool's task and so the child's turn. The
child's turn runs in a task of its own, registered in the session's `RunningChildren`
(child_runs.py) while it runs, so one child can be cancelled alone: it ends "cancelled"
(its open calls closed as a cancelled turn's are), the tool answers the parent so, and the
parent's turn goes on. Each of the child's events is taken by the tool (shown) before its
turn resumes, as if it ran in the tool's own task. Calls to this tool in one model step
run side by side (`Tool.parallel`, agent/parallel_calls.py).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from agentao.agent.cancellation import closing_events
from agentao.agent.checkpoints import Checkpoints, Watch
from agentao.agent.events import (
    ChildUpdate,
    ContextUsage,
    StopReason,
    SubagentState,
    TextDelta,
    TextOutput,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
    TurnEvent,
)
from agentao.agent.permissions import PermissionEngine
from agentao.agent.providers.errors import LlmError
from agentao.agent.session import AgentSession
from agentao.agent.steering import SteeringInbox
from agentao.agent.stoppable import StoppableCalls
from agentao.agent.tools.base import (
    Interaction,
    PermissionGate,
    PermissionOutcome,
    PermissionReply,
    Tool,
    ToolContext,
    ToolError,
    ToolResult,
)
from agentao.modes import MODE_RANK

__all__ = ["MAX_PROGRESS_LINES", "MAX_TASK_CHARS", "TOOL_NAME", "SubagentTool", "child_gate"]

TOOL_NAME = "task"
MAX_TASK_CHARS = 50_000  # a task's prompt: the child's whole context, bounded
MAX_TITLE_CHARS = 80  # a child's title, as clients show it
MAX_PROGRESS_LINES = 20  # the child's last steps shown in the parent's tool call
NO_ANSWER = "(the subagent gave no answer)"
CANCELLED_ANSWER = "the subagent was cancelled before it finished"
CHILD_NOTE = (
    "You are a subagent: another agent handed you the task below. Do it with your tools, "
    "then answer with what you found or did; your last reply is all it will see."
)

T = TypeVar("T")
_Taken = tuple[TurnEvent, asyncio.Event | None] | BaseException | None  # a pump's message


class SubagentTool(Tool):
    """`task`: run a child agent on a task and answer with its last reply."""

    name = TOOL_NAME
    kind = "other"
    parallel = True
    description = (
        "Hand a self-contained task to a subagent: a child agent with a fresh context, your "
        "tools and at most your permissions. It sees only `prompt`, so say everything it "
        "needs. Several task calls in one reply run in parallel. Its final answer is the "
        "result."
    )
    parameters = {
        "type": "object",
        "properties": {
            "description": {"type": "string", "description": "A short name for the task."},
            "prompt": {"type": "string", "description": "The whole task, self-contained."},
            "mode": {
                "type": "string",
                "enum": sorted(MODE_RANK),
                "description": "A narrower permission mode for the child (never wider than yours).",
            },
        },
        "required": ["description", "prompt"],
    }

    def __init__(self, depth: int = 1) -> None:
        self.depth = depth  # the depth of the children this tool makes (1: the session's)

    def title(self, args: dict[str, Any]) -> str:
        return f"Subagent: {_title(args)}"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        prompt = args.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise ToolError("prompt: the task for the subagent, a non-empty string")
        if len(prompt) > MAX_TASK_CHARS:
            raise ToolError(f"prompt: at most {MAX_TASK_CHARS} characters")
        mode = args.get("mode")
        if mode is not None and mode not in MODE_RANK:
            raise ToolError(f"mode: one of {', '.join(sorted(MODE_RANK))}")
        if ctx.deps is None or ctx.session is None:
            raise ToolError("subagents need a session to run in")
        child = _child_session(ctx.session)
        progress = _ChildRun(ctx, child.id, _title(args))
        deps = self._child_deps(ctx, progress, mode)
        return await progress.run(_turn(child, prompt, deps))

    def _child_deps(self, ctx: ToolContext, progress: _ChildRun, mode: str | None) -> Any:
        deps = ctx.deps
        tools = [t for t in deps.tools if not isinstance(t, SubagentTool)]
        if self.depth < deps.limits.subagent_depth:
            tools.append(SubagentTool(self.depth + 1))
        system = f"{deps.system_prompt}\n\n{CHILD_NOTE}" if deps.system_prompt else CHILD_NOTE
        return replace(
            deps,
            tools=tools,
            gate=child_gate(deps.gate, mode),
            interaction=_ChildInteraction(deps.interaction, progress),
            system_prompt=system,
            context=None,  # the parent's meter measures the parent's window only
            stoppable=StoppableCalls(),
            # Words steered in are the parent's turn's: its inbox is not the child's to
            # drain, nor to close when the child ends.
            steering=SteeringInbox(),
            # The child's file changes are its parent's turn's: a rewind before that turn
            # restores them with the rest (the child's own session has no turns to rewind).
            checkpoints=_ParentTurnCheckpoints(deps.checkpoints, len(ctx.session.turns))
            if deps.checkpoints is not None
            else None,
        )


class _ParentTurnCheckpoints:
    """A parent's checkpoints, every watch recorded in the parent's running turn."""

    def __init__(self, parent: Checkpoints, turn: int) -> None:
        self._parent, self._turn = parent, turn

    async def watch(self, _turn: int, cwd: Path, kind: str, paths: Sequence[Path]) -> Watch | None:
        return await self._parent.watch(self._turn, cwd, kind, paths)


def child_gate(parent: PermissionGate, mode: str | None) -> PermissionGate:
    """The child's gate: the parent's rules and grants, in the narrower of the parent's
    mode and `mode` (None: the parent's). Never wider than the parent's."""
    if not isinstance(parent, PermissionEngine):
        return parent  # a gate we cannot narrow is shared as it is: no wider either
    posture = parent.posture
    if mode is not None and MODE_RANK[mode] <= MODE_RANK[posture]:
        posture = mode
    return PermissionEngine(posture, parent.rules, parent.grants, parent.sandbox, parent.options)


def _title(args: dict[str, Any]) -> str:
    text = args.get("description")
    text = text.strip() if isinstance(text, str) else ""
    return (text or "task").splitlines()[0][:MAX_TITLE_CHARS]


def _child_session(parent: AgentSession) -> AgentSession:
    child = AgentSession(
        str(uuid.uuid4()),
        parent.cwd,
        parent.provider_id,
        parent.model,
        parent.additional_dirs,
        mode_id=parent.mode_id,
    )
    child.roots = parent.pin_roots()  # the workspace the parent pinned, never re-resolved
    return child


async def _turn(child: AgentSession, prompt: str, deps: Any) -> AsyncIterator[TurnEvent]:
    from agentao.agent.turn import run_turn  # turn.py runs this tool: imported when run

    async with aclosing(run_turn(child, prompt, deps)) as events:
        async for event in events:
            yield event


class _ChildRun:
    """One child at work: its events passed on, its steps as the call's progress, its
    last reply kept as the answer."""

    def __init__(self, ctx: ToolContext, child_id: str, title: str) -> None:
        self.ctx = ctx
        self.child_id = child_id
        self.title = title
        self.steps: list[str] = []
        self.calls: dict[str, int] = {}  # the child's call id -> its line in `steps`
        self.reply: list[str] = []  # the child's text since its last tool call

    def show(
        self,
        event: TurnEvent | None = None,
        state: SubagentState | None = None,
        stop: StopReason | None = None,
    ) -> None:
        if self.ctx.show is not None:
            update = ChildUpdate(self.ctx.call_id, self.child_id, self.title, event, state, stop)
            self.ctx.show(update)

    async def run(self, events: AsyncIterator[TurnEvent]) -> ToolResult:
        self.show(state="running")
        await self._report(f"{self.title}: started")
        try:
            ended = await self._follow(events)
        except LlmError as exc:
            self.show(state="idle")
            return ToolResult(f"the subagent failed: {exc}", is_error=True)
        self.show(state="idle", stop=ended.stop_reason)
        failed = ended.stop_reason == "cancelled"
        answer = "".join(self.reply).strip() or (CANCELLED_ANSWER if failed else NO_ANSWER)
        raw = {"sessionId": self.child_id, "stopReason": ended.stop_reason}
        return ToolResult(answer, (TextOutput(answer),), is_error=failed, raw_output=raw)

    async def _follow(self, events: AsyncIterator[TurnEvent]) -> TurnEnded:
        async with aclosing(self._pumped(events)) as stream:
            async for event in stream:
                if isinstance(event, TurnEnded):
                    return event
                if not isinstance(event, ContextUsage):
                    self.show(event)
                await self._step(event)
        raise RuntimeError("the child's turn ended without TurnEnded")

    async def _pumped(self, events: AsyncIterator[TurnEvent]) -> AsyncIterator[TurnEvent]:
        """The child's events, its turn run by a task of its own (registered: cancellable
        alone), each taken before the turn resumes."""
        out: asyncio.Queue[_Taken] = asyncio.Queue()
        task = asyncio.create_task(_pump(events, out), name=f"subagent {self.child_id}")
        children = self.ctx.deps.children if self.ctx.deps is not None else None
        if children is not None:
            children.started(self.child_id, task)
        try:
            while (item := await out.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                event, taken = item
                yield event
                if taken is not None:
                    taken.set()
        finally:
            if children is not None:
                children.ended(self.child_id)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _step(self, event: TurnEvent) -> None:
        if isinstance(event, TextDelta):
            self.reply.append(event.text)
        elif isinstance(event, ToolCallStarted):
            self.reply.clear()
            self.calls[event.call_id] = len(self.steps)
            self.steps.append(event.title)
            await self._report()
        elif isinstance(event, ToolCallFinished) and event.call_id in self.calls:
            line = self.calls[event.call_id]
            self.steps[line] = f"{self.steps[line]} ({event.status})"
            await self._report()

    async def _report(self, head: str | None = None) -> None:
        if self.ctx.report is None:
            return
        lines = [head] if head else self.steps[-MAX_PROGRESS_LINES:]
        await self.ctx.report((TextOutput("\n".join(lines)),))


async def _pump(events: AsyncIterator[TurnEvent], out: asyncio.Queue[_Taken]) -> None:
    """Run the child's turn, handing each event over and waiting until it is taken; a
    cancel of this task (the child's alone) ends the turn as a cancelled one ends."""
    seen: list[TurnEvent] = []
    try:
        async with aclosing(events) as stream:
            async for event in stream:
                seen.append(event)
                taken = asyncio.Event()
                out.put_nowait((event, taken))
                await taken.wait()
    except asyncio.CancelledError:
        for event in closing_events(seen):
            out.put_nowait((event, None))
    except Exception as exc:  # the child's LLM failed, or a bug: the tool's to report
        out.put_nowait(exc)
    finally:
        out.put_nowait(None)


class _ChildInteraction:
    """The child's questions, put to the parent's person (see the module docstring)."""

    def __init__(self, parent: Interaction, child: _ChildRun) -> None:
        self.child = child
        for_child = getattr(parent, "for_child", None)
        if for_child is not None:
            self.inner: Any = for_child(child.child_id, child.title, child.ctx.call_id)
        else:
            self.inner = _Named(parent, child.title)

    def for_child(self, child_id: str, title: str, parent_call: str) -> Any:
        """A grandchild asks the way its parent, this child, asks (depth above 1)."""
        for_child = getattr(self.inner, "for_child", None)
        if for_child is None:
            return _Named(self.inner, title)
        return for_child(child_id, title, parent_call)

    async def request_permission(
        self, call: ToolCallStarted
    ) -> PermissionReply | PermissionOutcome:
        return await self._asking(lambda: self.inner.request_permission(call))

    async def ask_user(self, question: str) -> str:
        return await self._asking(lambda: self.inner.ask_user(question))

    async def _asking(self, ask: Callable[[], Awaitable[T]]) -> T:
        self.child.show(state="requires_action")
        if self.child.ctx.flush is not None:
            await self.child.ctx.flush()  # the state, and the call it asks about, are out
        try:
            return await ask()
        finally:
            self.child.show(state="running")


class _Named:
    """An `Interaction` without `for_child`: the child's questions name it in the title."""

    def __init__(self, parent: Interaction, title: str) -> None:
        self.parent = parent
        self.title = title

    async def request_permission(
        self, call: ToolCallStarted
    ) -> PermissionReply | PermissionOutcome:
        named = replace(call, title=f"Subagent {self.title}: {call.title}")
        return await self.parent.request_permission(named)

    async def ask_user(self, question: str) -> str:
        return await self.parent.ask_user(f"(subagent {self.title}) {question}")
