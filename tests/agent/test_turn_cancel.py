"""Structured cancellation of a turn: the LLM stream, a running tool, a pending
permission request; history stays consistent and the turn is committed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentao.agent.cancellation import closing_events
from agentao.agent.config import LlmConfig
from agentao.agent.events import (
    TextDelta,
    TextOutput,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
    TurnEvent,
)
from agentao.agent.providers import AssistantMessage, ToolResultMessage, UserMessage
from agentao.agent.providers.openai_provider import OpenAIProvider
from agentao.agent.turn import drive_turn, run_turn
from tests.agent.test_turn import Blocker, Gate, Human, call, kinds, make_deps, new_session
from tests.fakes.fake_llm import FakeLLM


async def start(session, deps, prompt="go"):
    """drive_turn in its own task, as the server runs it; returns (task, emitted events)."""
    emitted: list[TurnEvent] = []

    async def emit(event: TurnEvent) -> None:
        emitted.append(event)

    return asyncio.create_task(drive_turn(session, prompt, deps, emit)), emitted


async def until(predicate) -> None:
    while not predicate():  # noqa: ASYNC110 -- a test polling its own list
        await asyncio.sleep(0.001)


async def test_cancel_while_a_tool_runs(tmp_path: Path) -> None:
    session, blocker = new_session(tmp_path), Blocker()
    deps = make_deps({"text": "working", "tool_calls": [call("block")]}, tools=(blocker,))
    task, emitted = await start(session, deps)
    await asyncio.wait_for(blocker.started.wait(), 5)
    task.cancel()
    ended = await task
    assert ended == TurnEnded("cancelled") and blocker.cancelled
    assert kinds(emitted) == [
        "TextDelta", "ToolCallStarted", "ToolCallProgress", "ToolCallProgress",
        "ToolCallFinished", "TurnEnded",
    ]  # fmt: skip
    assert emitted[-2] == ToolCallFinished("c_block_0", "failed", (TextOutput("Cancelled"),))
    assert session.messages[-1] == ToolResultMessage("c_block_0", "block", "Cancelled", True)
    record = session.turns[-1]
    assert record.stop_reason == "cancelled"
    assert kinds(list(record.events)) == [
        "TextDelta", "ToolCallStarted", "ToolCallFinished", "TurnEnded",
    ]  # fmt: skip


async def test_cancel_mid_stream_keeps_the_partial_text(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    deps = make_deps({"text": ["one ", "two ", "three"], "delay": 0.05})
    events: list[TurnEvent] = []

    async def consume() -> None:
        async for event in run_turn(session, "go", deps):
            events.append(event)

    task = asyncio.create_task(consume())
    await until(lambda: len(events) == 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):  # run_turn itself re-raises
        await task
    assert session.messages == [UserMessage("go"), AssistantMessage("one two ")]
    assert session.turns[-1].events == (TextDelta("one two "), TurnEnded("cancelled"))


async def test_cancel_while_asking_permission(tmp_path: Path) -> None:
    session, human = new_session(tmp_path), Human(outcome=None)
    deps = make_deps({"tool_calls": [call("echo", text="x")]}, gate=Gate("ask"), human=human)
    task, emitted = await start(session, deps)
    await asyncio.wait_for(human.waiting.wait(), 5)
    task.cancel()
    assert await task == TurnEnded("cancelled")
    assert kinds(emitted) == ["ToolCallStarted", "ToolCallFinished", "TurnEnded"]
    assert session.messages[-1].text == "Cancelled"


async def test_closing_the_generator_cancels_the_tool(tmp_path: Path) -> None:
    session, blocker = new_session(tmp_path), Blocker()
    deps = make_deps({"tool_calls": [call("block")]}, tools=(blocker,))
    events = run_turn(session, "go", deps)
    async for event in events:
        if getattr(event, "content", None) == (TextOutput("waiting"),):
            break  # the tool runs and has reported
    await events.aclose()
    assert blocker.cancelled and session.turns[-1].stop_reason == "cancelled"


async def test_cancel_closes_the_llm_connection(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.hang("partial ")
    config = LlmConfig("OPENAI", fake_llm.model, fake_llm.api_key, fake_llm.base_url)
    session, deps = new_session(tmp_path), make_deps(provider=OpenAIProvider(config))
    task, emitted = await start(session, deps)
    await until(lambda: emitted)
    task.cancel()
    assert await task == TurnEnded("cancelled")
    assert await fake_llm.requests[0].wait_disconnected_async()
    assert session.messages[-1] == AssistantMessage("partial ")
    await deps.provider.aclose()


async def test_outer_cancellation_is_not_swallowed(tmp_path: Path) -> None:
    """Cancelled twice (e.g. session/cancel and an enclosing timeout): it propagates."""
    session, blocker = new_session(tmp_path), Blocker()
    task, _ = await start(session, make_deps({"tool_calls": [call("block")]}, tools=(blocker,)))
    await asyncio.wait_for(blocker.started.wait(), 5)
    task.cancel()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert session.turns[-1].stop_reason == "cancelled"


def test_closing_events_finish_what_was_left_open() -> None:
    events = [
        ToolCallStarted("a", "echo", "t", "read", {}),
        ToolCallStarted("b", "echo", "t", "read", {}),
        ToolCallFinished("a", "completed"),
    ]
    assert closing_events(events) == [
        ToolCallFinished("b", "failed", (TextOutput("Cancelled"),)),
        TurnEnded("cancelled"),
    ]


async def test_a_cancel_after_the_turn_ended_changes_nothing(tmp_path: Path) -> None:
    """A cancel that lands while the caller is still taking TurnEnded (its emit awaits)
    finds the turn over: no second TurnEnded, and the answer is the one recorded."""
    session, deps = new_session(tmp_path), make_deps({"text": "done"})
    emitted: list[TurnEvent] = []
    taking_end, release = asyncio.Event(), asyncio.Event()

    async def emit(event: TurnEvent) -> None:
        emitted.append(event)
        if isinstance(event, TurnEnded) and not taking_end.is_set():
            taking_end.set()
            await release.wait()  # a slow reader: the cancel lands here

    task = asyncio.create_task(drive_turn(session, "go", deps, emit))
    await asyncio.wait_for(taking_end.wait(), 5)
    task.cancel()
    ended = await task
    assert [e for e in emitted if isinstance(e, TurnEnded)] == [ended]
    assert ended.stop_reason == session.turns[-1].stop_reason == "end_turn"


def test_an_ended_turn_needs_no_closing() -> None:
    assert closing_events([TextDelta("hi"), TurnEnded("end_turn")]) == []
