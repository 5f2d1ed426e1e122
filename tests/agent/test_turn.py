"""The turn loop with tiny tools, gates and a scripted LLM: tool rounds, permissions,
stop reasons, retries. Helpers here are reused by test_turn_cancel / test_todo_ask."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agentao.agent.config import Limits
from agentao.agent.events import (
    TextDelta,
    TextOutput,
    ThoughtDelta,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
    TurnEnded,
    TurnEvent,
)
from agentao.agent.providers import (
    AssistantMessage,
    LlmError,
    LlmEvent,
    LlmRequest,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agentao.agent.providers.scripted import ScriptedProvider
from agentao.agent.session import AgentSession
from agentao.agent.tool_call import REJECTED_NO_REASON
from agentao.agent.tools.base import (
    Decision,
    PermissionOutcome,
    PermissionReply,
    Tool,
    ToolContext,
    ToolError,
    ToolResult,
)
from agentao.agent.turn import run_turn
from agentao.agent.turn_deps import TurnDeps

# --- helpers ---------------------------------------------------------------------------


class Echo(Tool):
    name, kind, description = "echo", "read", "Echo `text` back."
    parameters = {"type": "object", "properties": {"text": {"type": "string"}}}

    def title(self, args: dict[str, Any]) -> str:
        return f"Echo {args['text']}"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if args.get("text") == "boom":
            raise ToolError("cannot echo boom")
        if args.get("text") == "bug":
            raise RuntimeError("oops")
        assert ctx.report is not None
        await ctx.report((TextOutput("half"),))
        await ctx.report((TextOutput("all"),))
        return ToolResult(f"echo: {args['text']}", (TextOutput(args["text"]),))


class Blocker(Tool):
    """Runs until cancelled; `started` / `cancelled` tell the test where it is."""

    name, kind, description, parameters = "block", "execute", "Wait forever.", {}

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = False

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self.started.set()
        assert ctx.report is not None
        await ctx.report((TextOutput("waiting"),))
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return ToolResult("never")


@dataclass
class Gate:
    verdict: str = "allow"
    reason: str = ""
    remembered: list[str] = field(default_factory=list)

    def decide(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> Decision:
        return Decision(self.verdict, self.reason)  # type: ignore[arg-type]

    def remember(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> None:
        self.remembered.append(tool.name)


@dataclass
class Human:
    """The Interaction: scripted permission outcomes and answers; None waits forever."""

    outcome: PermissionOutcome | PermissionReply | None = "allow"
    answer: str = "yes"
    asked: list[ToolCallStarted] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    waiting: asyncio.Event = field(default_factory=asyncio.Event)

    async def request_permission(self, call: ToolCallStarted) -> PermissionOutcome:
        self.asked.append(call)
        if self.outcome is None:
            self.waiting.set()
            await asyncio.Event().wait()
        return self.outcome  # type: ignore[return-value]

    async def ask_user(self, question: str) -> str:
        self.questions.append(question)
        return self.answer


class NoEnv:
    """The tests' tools do no file or process I/O."""

    async def read_text(self, *a: Any, **k: Any) -> str:
        raise AssertionError("no I/O here")

    async def write_text(self, *a: Any, **k: Any) -> None:
        raise AssertionError("no I/O here")

    async def run_command(self, *a: Any, **k: Any) -> Any:
        raise AssertionError("no I/O here")


class Recording:
    """Wraps a provider and keeps every request it was sent."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.requests = inner, []

    async def stream(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
        self.requests.append(request)
        async for event in self.inner.stream(request):
            yield event

    async def aclose(self) -> None:
        await self.inner.aclose()


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "id": f"c_{name}_{len(arguments)}"}


def make_deps(
    *responses: dict[str, Any],
    tools: tuple[Tool, ...] = (),
    gate: Gate | None = None,
    human: Human | None = None,
    provider: Any = None,
    **limits: Any,
) -> TurnDeps:
    provider = provider or ScriptedProvider.from_data(list(responses))
    return TurnDeps(
        Recording(provider), tools or (Echo(),), gate or Gate(), NoEnv(), human or Human(),
        Limits(retry_backoff=0, **limits), system_prompt="You are a test.",
    )  # fmt: skip


def new_session(tmp_path: Path) -> AgentSession:
    return AgentSession("s1", tmp_path, "SCRIPTED", "test")


async def run(session: AgentSession, deps: TurnDeps, prompt: str = "go") -> list[TurnEvent]:
    return [e async for e in run_turn(session, prompt, deps)]


def kinds(events: list[TurnEvent]) -> list[str]:
    return [type(e).__name__ for e in events]


# --- tests -----------------------------------------------------------------------------


async def test_text_only_turn(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    deps = make_deps({"thought": "hm", "text": "hello there", "usage": {"input_tokens": 2}})
    events = await run(session, deps, "hi")
    assert events == [
        ThoughtDelta("hm"),
        TextDelta("hello "),
        TextDelta("there"),
        TurnEnded("end_turn", events[-1].usage),
    ]
    assert events[-1].usage.input_tokens == 2
    assert session.messages == [UserMessage("hi"), AssistantMessage("hello there", (), "hm")]
    sent = deps.provider.requests[0]
    assert sent.model == "test" and [t["function"]["name"] for t in sent.tools] == ["echo"]
    assert sent.messages[0].text == "You are a test." and sent.messages[1] == UserMessage("hi")


async def test_tool_round_trip(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    deps = make_deps({"tool_calls": [call("echo", text="hi")]}, {"text": "done"})
    events = await run(session, deps)
    assert kinds(events) == [
        "ToolCallStarted", "ToolCallProgress", "ToolCallProgress", "ToolCallProgress",
        "ToolCallFinished", "TextDelta", "TurnEnded",
    ]  # fmt: skip
    started, running, half, full, finished = events[:5]
    assert (started.title, started.kind, started.raw_input) == ("Echo hi", "read", {"text": "hi"})
    assert running == ToolCallProgress("c_echo_1")
    assert half.content == (TextOutput("half"),) and full.content == (TextOutput("all"),)
    assert finished == ToolCallFinished("c_echo_1", "completed", (TextOutput("hi"),))
    assert events[-1].stop_reason == "end_turn"
    tool_result = ToolResultMessage("c_echo_1", "echo", "echo: hi")
    assert deps.provider.requests[1].messages[-1] == tool_result
    assert session.messages == [
        UserMessage("go"),
        AssistantMessage("", (ToolCall("c_echo_1", "echo", {"text": "hi"}),)),
        tool_result,
        AssistantMessage("done"),
    ]


async def test_a_later_reply_starts_a_new_paragraph(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    deps = make_deps(
        {"text": ["On it."], "tool_calls": [call("echo", text="hi")]}, {"text": ["Done."]}
    )
    events = await run(session, deps)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["On it.", "\n\nDone."]
    # what the model sees keeps each reply's own text
    assert session.messages[-1] == AssistantMessage("Done.")


@pytest.mark.parametrize(
    ("text", "told"),
    [("boom", "cannot echo boom"), ("bug", "echo failed: RuntimeError: oops")],
)
async def test_failing_tool_is_reported_to_model_and_user(
    tmp_path: Path, text: str, told: str
) -> None:
    session = new_session(tmp_path)
    events = await run(
        session, make_deps({"tool_calls": [call("echo", text=text)]}, {"text": "ok"})
    )
    finished = next(e for e in events if isinstance(e, ToolCallFinished))
    assert finished.status == "failed" and finished.content == (TextOutput(told),)
    assert ToolResultMessage("c_echo_1", "echo", told, True) in session.messages
    assert events[-1].stop_reason == "end_turn"


async def test_unknown_tool_and_bad_arguments_fail_and_the_model_is_told(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    provider = ScriptedProvider.from_data([{"tool_calls": [call("nope")]}, {"text": "sorry"}])
    events = await run(session, make_deps(provider=provider))
    assert kinds(events) == ["ToolCallStarted", "ToolCallFinished", "TextDelta", "TurnEnded"]
    assert events[0].kind == "other" and events[1].status == "failed"
    assert session.messages[2] == ToolResultMessage("c_nope_0", "nope", "unknown tool 'nope'", True)


async def test_permission_deny_tells_the_model_why(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    gate = Gate("deny", "outside the workspace")
    events = await run(session, make_deps({"tool_calls": [call("echo", text="x")]}, {}, gate=gate))
    assert kinds(events) == ["ToolCallStarted", "ToolCallFinished", "TurnEnded"]
    reason = "denied: outside the workspace"
    assert events[1] == ToolCallFinished("c_echo_1", "failed", (TextOutput(reason),))
    assert session.messages[2] == ToolResultMessage("c_echo_1", "echo", reason, True)


@pytest.mark.parametrize(
    ("outcome", "status", "remembered"),
    [("allow", "completed", []), ("allow_always", "completed", ["echo"]), ("reject", "failed", [])],
)
async def test_permission_ask(tmp_path: Path, outcome: str, status: str, remembered: list) -> None:
    session, gate, human = new_session(tmp_path), Gate("ask"), Human(outcome)  # type: ignore[arg-type]
    deps = make_deps(
        {"tool_calls": [call("echo", text="x")]}, {"text": "ok"}, gate=gate, human=human
    )
    events = await run(session, deps)
    assert human.asked == [events[0]]  # the announced call is what the human is shown
    finished = next(e for e in events if isinstance(e, ToolCallFinished))
    assert finished.status == status and gate.remembered == remembered
    if outcome == "reject":  # no reason given: nobody is said to have chosen it
        assert finished.content == (TextOutput(REJECTED_NO_REASON),)
        assert session.messages[2].text == REJECTED_NO_REASON  # the model is told the same
    assert events[-1].stop_reason == "end_turn"


async def test_a_reject_names_its_reason_to_the_user_and_the_model(tmp_path: Path) -> None:
    reason = "the client's policy approves only read and search tools, not other"
    session = new_session(tmp_path)
    human = Human(PermissionReply("reject", reason))  # type: ignore[arg-type]
    deps = make_deps(
        {"tool_calls": [call("echo", text="x")]}, {"text": "ok"}, gate=Gate("ask"), human=human
    )
    events = await run(session, deps)
    finished = next(e for e in events if isinstance(e, ToolCallFinished))
    assert finished.content == (TextOutput(f"rejected: {reason}"),)
    assert session.messages[2].text == f"rejected: {reason}"


async def test_permission_cancelled_ends_the_turn(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    deps = make_deps(
        {"tool_calls": [call("echo", text="x"), call("echo", a=1, b=2)]},
        {"text": "never asked"},
        gate=Gate("ask"),
        human=Human("cancelled"),
    )
    events = await run(session, deps)
    assert kinds(events) == ["ToolCallStarted", "ToolCallFinished", "TurnEnded"]
    assert events[-1].stop_reason == "cancelled" and len(deps.provider.requests) == 1
    # both calls are answered in history, so the next request is valid
    assert [m.call_id for m in session.messages if isinstance(m, ToolResultMessage)] == [
        "c_echo_1",
        "c_echo_2",
    ]
    assert session.turns[-1].stop_reason == "cancelled"


async def test_max_tool_rounds(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    loop = {"tool_calls": [call("echo", text="again")]}
    deps = make_deps(loop, loop, loop, max_tool_rounds=2)
    events = await run(session, deps)
    assert events[-1].stop_reason == "max_turn_requests"
    assert len(deps.provider.requests) == 2
    assert isinstance(session.messages[-1], ToolResultMessage)  # history ends consistent


async def test_length_finish_is_max_tokens_and_calls_are_not_run(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    deps = make_deps({"text": "cut", "tool_calls": [call("echo", text="x")], "finish": "length"})
    events = await run(session, deps)
    assert kinds(events) == ["TextDelta", "TurnEnded"] and events[-1].stop_reason == "max_tokens"
    assert session.messages[-1] == AssistantMessage("cut")


async def test_content_filter_is_refusal(tmp_path: Path) -> None:
    events = await run(new_session(tmp_path), make_deps({"text": "no", "finish": "content_filter"}))
    assert events[-1].stop_reason == "refusal"


async def test_transient_errors_are_retried_with_a_notice(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    deps = make_deps({"error": "transient", "message": "busy"}, {"text": "ok"}, max_retries=2)
    events = await run(session, deps)
    assert kinds(events) == ["Notice", "TextDelta", "TurnEnded"]
    assert "busy" in events[0].text and "retry 1 of 2" in events[0].text
    assert session.turns[-1].events == (TextDelta("ok"), events[-1])  # notices are not replayed


async def test_exhausted_retries_raise_and_keep_no_assistant_text(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    busy = {"error": "transient"}
    deps = make_deps(busy, busy, {"text": "too late"}, max_retries=1)
    with pytest.raises(LlmError):
        await run(session, deps)
    assert session.messages == [UserMessage("go")]
    assert (session.turns[-1].stop_reason, session.turns[-1].error) == (None, "scripted")


async def test_fatal_error_after_a_tool_round_keeps_the_round(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    deps = make_deps({"tool_calls": [call("echo", text="x")]}, {"error": "fatal"})
    with pytest.raises(LlmError):
        await run(session, deps)
    assert len(deps.provider.requests) == 2  # fatal: not retried
    assert isinstance(session.messages[-1], ToolResultMessage)
    assert kinds(list(session.turns[-1].events)) == ["ToolCallStarted", "ToolCallFinished"]
