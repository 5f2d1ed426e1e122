"""OpenAIProvider against the fake LLM on loopback: streaming, tool calls, errors, cancel."""

from __future__ import annotations

import asyncio
import socket
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
from agentao.agent.providers.openai_provider import OpenAIProvider
from agentao.agent.turn import run_turn
from tests.agent.test_turn import make_deps, new_session
from tests.fakes.fake_llm import FakeLLM, FakeToolCall

SPEC = {"type": "function", "function": {"name": "echo", "description": "", "parameters": {}}}


def request(*messages: object, tools: tuple = ()) -> LlmRequest:
    return LlmRequest("fake-model", messages or (UserMessage("hi"),), tools)  # type: ignore[arg-type]


@pytest.fixture
async def llm(fake_llm: FakeLLM) -> AsyncIterator[OpenAIProvider]:
    provider = OpenAIProvider(
        LlmConfig("OPENAI", fake_llm.model, fake_llm.api_key, fake_llm.base_url)
    )
    yield provider
    await provider.aclose()


async def collect(p: OpenAIProvider, req: LlmRequest) -> list:
    return [event async for event in p.stream(req)]


async def test_text_usage_and_request_body(fake_llm: FakeLLM, llm: OpenAIProvider) -> None:
    fake_llm.reply("Hel", "lo")
    events = await collect(llm, request(SystemMessage("be nice"), UserMessage("hi")))
    assert events == [
        TextPiece("Hel"),
        TextPiece("lo"),
        LlmFinished("stop", Usage(10, 5, 15)),
    ]
    body = fake_llm.requests[0].body
    assert body["model"] == "fake-model"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [
        {"role": "system", "content": "be nice"},
        {"role": "user", "content": "hi"},
    ]
    assert "tools" not in body
    assert fake_llm.requests[0].headers["authorization"] == "Bearer test-key"


async def test_reasoning_becomes_thought(fake_llm: FakeLLM, llm: OpenAIProvider) -> None:
    fake_llm.reply(reasoning=["Let me ", "think"], text=["ok"], usage=None)
    events = await collect(llm, request())
    assert events == [
        ThoughtPiece("Let me "),
        ThoughtPiece("think"),
        TextPiece("ok"),
        LlmFinished("stop"),
    ]


async def test_tool_calls_assembled_from_deltas(fake_llm: FakeLLM, llm: OpenAIProvider) -> None:
    fake_llm.reply(
        tool_calls=[
            FakeToolCall("echo", {"text": "a long argument", "n": 1}, id="c1"),
            FakeToolCall("echo", {}, id="c2"),
            FakeToolCall("echo", "{not json", id="c3"),
        ]
    )
    events = await collect(llm, request(tools=(SPEC,)))
    assert events[:3] == [
        ToolCallRequest("c1", "echo", {"text": "a long argument", "n": 1}),
        ToolCallRequest("c2", "echo", {}),
        ToolCallRequest("c3", "echo", {}, raw_arguments="{not json"),
    ]
    assert events[3].finish_reason == "tool_calls"
    assert fake_llm.requests[0].body["tools"] == [SPEC]


async def test_history_with_tool_calls_is_sent_in_openai_shape(
    fake_llm: FakeLLM, llm: OpenAIProvider
) -> None:
    fake_llm.reply("done")
    history = (
        UserMessage("run it"),
        AssistantMessage("sure", (ToolCall("c1", "echo", {"x": 1}),), thought="hidden"),
        ToolResultMessage("c1", "echo", "1", is_error=False),
    )
    await collect(llm, request(*history))
    assert fake_llm.requests[0].body["messages"][1:] == [
        {
            "role": "assistant",
            "content": "sure",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "echo", "arguments": '{"x": 1}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "1"},
    ]


@pytest.mark.parametrize(
    ("status", "transient", "reason"),
    [
        (500, True, "server_error"),
        (503, True, "server_error"),
        (429, True, "rate_limited"),
        (401, False, "auth"),
        (403, False, "auth"),
        (400, False, "bad_request"),
        (404, False, "not_found"),
    ],
)
async def test_http_errors_are_mapped(
    fake_llm: FakeLLM, llm: OpenAIProvider, status: int, transient: bool, reason: str
) -> None:
    fake_llm.fail(status, "nope", headers={"retry-after": "7"})
    with pytest.raises(LlmError) as info:
        await collect(llm, request())
    assert (info.value.transient, info.value.reason) == (transient, reason)
    assert info.value.retry_after == (7.0 if transient else None)
    assert len(fake_llm.requests) == 1  # the SDK's own retries are off


async def test_unreachable_server_is_transient() -> None:
    with socket.socket() as s:  # a port with nobody listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    unreachable = OpenAIProvider(LlmConfig("OPENAI", "m", "k", f"http://127.0.0.1:{port}/v1"))
    with pytest.raises(LlmError) as info:
        await collect(unreachable, request())
    await unreachable.aclose()
    assert (info.value.transient, info.value.reason) == (True, "connection")


async def test_cancel_mid_stream_closes_the_connection(
    fake_llm: FakeLLM, llm: OpenAIProvider
) -> None:
    fake_llm.hang("first")
    got_text = asyncio.Event()

    async def consume() -> None:
        async for event in llm.stream(request()):
            if isinstance(event, TextPiece):
                got_text.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(got_text.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await fake_llm.requests[0].wait_disconnected_async()


async def test_closing_the_stream_early_closes_the_connection(
    fake_llm: FakeLLM, llm: OpenAIProvider
) -> None:
    fake_llm.hang("first", "second")
    stream = llm.stream(request())
    assert await anext(stream) == TextPiece("first")
    await stream.aclose()
    assert await fake_llm.requests[0].wait_disconnected_async()
    assert not fake_llm.requests[0].done.is_set()


# --- through the turn loop: retries are the loop's, visible as Notices ------------------


async def test_turn_retries_a_500_with_a_notice(
    fake_llm: FakeLLM, llm: OpenAIProvider, tmp_path
) -> None:
    fake_llm.fail(500, "overloaded")
    fake_llm.reply("fine")
    session = new_session(tmp_path)
    events = [e async for e in run_turn(session, "hi", make_deps(provider=llm))]
    assert [type(e).__name__ for e in events] == ["Notice", "TextDelta", "TurnEnded"]
    assert "server_error" in events[0].text and "Retrying" in events[0].text
    assert len(fake_llm.requests) == 2 and events[-1].usage == Usage(10, 5, 15)


async def test_turn_does_not_retry_401(fake_llm: FakeLLM, llm: OpenAIProvider, tmp_path) -> None:
    fake_llm.fail(401, "bad key")
    session = new_session(tmp_path)
    with pytest.raises(LlmError) as info:
        [e async for e in run_turn(session, "hi", make_deps(provider=llm))]
    assert info.value.reason == "auth" and len(fake_llm.requests) == 1
    assert session.messages == [UserMessage("hi")]
    assert session.turns[-1].error == "auth"


async def test_fake_llm_also_serves_models_and_plain_completions(fake_llm: FakeLLM) -> None:
    """Other suites (gateway, client) use these routes of the fake directly."""
    import openai

    client = openai.AsyncOpenAI(base_url=fake_llm.base_url, api_key="test-key", max_retries=0)
    assert [m.id async for m in client.models.list()] == ["fake-model"]
    fake_llm.reply("a", "b", reasoning=["r"], tool_calls=[FakeToolCall("echo", {"x": 1}, id="c")])
    reply = await client.chat.completions.create(model="fake-model", messages=[])
    message = reply.choices[0].message
    assert message.content == "ab" and message.tool_calls[0].function.arguments == '{"x": 1}'
    assert reply.choices[0].finish_reason == "tool_calls" and reply.usage.total_tokens == 15
    assert fake_llm.requests[0].done.is_set() and not fake_llm.requests[0].disconnected.is_set()
    await client.close()
