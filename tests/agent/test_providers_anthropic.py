"""AnthropicProvider against the fake LLM's /v1/messages (Anthropic SSE events)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from agentao.agent.config import LlmConfig
from agentao.agent.events import Usage
from agentao.agent.providers import (
    AssistantMessage,
    LlmError,
    LlmFinished,
    LlmRequest,
    SystemMessage,
    TextPiece,
    ThoughtPiece,
    ToolCall,
    ToolCallRequest,
    ToolResultMessage,
    UserMessage,
)
from agentao.agent.providers.anthropic_provider import AnthropicProvider
from tests.fakes.fake_llm import FakeLLM, FakeToolCall

SPEC = {
    "type": "function",
    "function": {"name": "echo", "description": "say it", "parameters": {"type": "object"}},
}


@pytest.fixture
async def llm(fake_llm: FakeLLM) -> AsyncIterator[AnthropicProvider]:
    provider = AnthropicProvider(
        LlmConfig("ANTHROPIC", fake_llm.model, fake_llm.api_key, fake_llm.root_url)
    )
    yield provider
    await provider.aclose()


async def collect(req: LlmRequest, llm: AnthropicProvider) -> list:
    return [event async for event in llm.stream(req)]


async def test_thinking_text_tool_use_and_usage(fake_llm: FakeLLM, llm: AnthropicProvider) -> None:
    fake_llm.reply(
        reasoning=["hmm"],
        text=["Hi", " there"],
        tool_calls=[FakeToolCall("echo", {"text": "a"}, id="tu1")],
    )
    req = LlmRequest("fake-model", (SystemMessage("sys"), UserMessage("hi")), (SPEC,))
    assert await collect(req, llm) == [
        ThoughtPiece("hmm"),
        TextPiece("Hi"),
        TextPiece(" there"),
        ToolCallRequest("tu1", "echo", {"text": "a"}),
        LlmFinished("tool_calls", Usage(10, 5, 15)),
    ]
    body = fake_llm.requests[0].body
    assert body["system"] == "sys" and body["stream"] is True and body["max_tokens"] == 8192
    assert body["tools"] == [
        {"name": "echo", "description": "say it", "input_schema": {"type": "object"}}
    ]


async def test_history_alternates_with_tool_results_in_user_turns(
    fake_llm: FakeLLM, llm: AnthropicProvider
) -> None:
    fake_llm.reply("ok")
    history = (
        UserMessage("go"),
        AssistantMessage("", (ToolCall("a", "echo", {}), ToolCall("b", "echo", {"x": 1}))),
        ToolResultMessage("a", "echo", "A"),
        ToolResultMessage("b", "echo", "B failed", is_error=True),
        UserMessage("and then?"),
    )
    await collect(LlmRequest("fake-model", history), llm)
    messages = fake_llm.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "a", "content": "A"},
        {"type": "tool_result", "tool_use_id": "b", "content": "B failed", "is_error": True},
        {"type": "text", "text": "and then?"},
    ]


@pytest.mark.parametrize(
    ("status", "transient", "reason"),
    [(529, True, "server_error"), (429, True, "rate_limited"), (401, False, "auth")],
)
async def test_errors_are_mapped(
    fake_llm: FakeLLM, llm: AnthropicProvider, status: int, transient: bool, reason: str
) -> None:
    fake_llm.fail(status, "nope")
    with pytest.raises(LlmError) as info:
        await collect(LlmRequest("fake-model", (UserMessage("hi"),)), llm)
    assert (info.value.transient, info.value.reason) == (transient, reason)
    assert len(fake_llm.requests) == 1


async def test_cancel_closes_the_connection(fake_llm: FakeLLM, llm: AnthropicProvider) -> None:
    fake_llm.hang("first")
    seen = asyncio.Event()

    async def consume() -> None:
        async for _ in llm.stream(LlmRequest("m", (UserMessage("hi"),))):
            seen.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(seen.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await fake_llm.requests[0].wait_disconnected_async()
