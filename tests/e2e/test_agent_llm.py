"""The agent against a real OpenAI-compatible HTTP server on loopback (tests/fakes/fake_llm.py):
streamed text, reasoning as thoughts, streamed tool calls, visible retries, failed calls as
JSON-RPC errors (never stored as assistant text), cancel closing the HTTP stream."""

from __future__ import annotations

import asyncio

import pytest

from tests.e2e.agent_process import agent_env, running, turn_update
from tests.fakes.fake_llm import FakeToolCall

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def ws(tmp_path):
    path = tmp_path / "ws"
    path.mkdir()
    (path / "hello.txt").write_text("hi from file\n")
    return path


@pytest.fixture
def env(tmp_path, fake_llm):
    return agent_env(tmp_path / "home", AGENTAO_LLM_RETRY_BACKOFF="0.01", **fake_llm.env())


async def test_text_and_reasoning_stream_as_updates(env, ws, fake_llm):
    fake_llm.reply(reasoning=["let me ", "think"], text=["Hello", ", ", "world"])
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        reply = await agent.prompt(sid, "greet")
    assert reply["result"]["stopReason"] == "end_turn"
    updates = agent.updates(sid)
    thoughts = [
        u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_thought_chunk"
    ]
    texts = [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert "".join(thoughts) == "let me think" and texts == ["Hello", ", ", "world"]
    body = fake_llm.requests[0].body
    assert body["model"] == "fake-model" and body["stream"] is True
    assert body["messages"][-1] == {"role": "user", "content": "greet"}
    assert {t["function"]["name"] for t in body["tools"]} >= {"read_file", "ask_user", "todo_write"}


async def test_streamed_tool_call_runs_and_its_result_goes_back(env, ws, fake_llm):
    fake_llm.reply(tool_calls=[FakeToolCall("read_file", {"file_path": "hello.txt"}, id="t1")])
    fake_llm.reply("The file says hi.")
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        reply = await agent.prompt(sid, "read hello.txt")
    assert reply["result"]["stopReason"] == "end_turn"
    call = next(u for u in agent.updates(sid) if u["sessionUpdate"] == "tool_call")
    assert call["toolCallId"] == "t1" and call["rawInput"] == {"file_path": "hello.txt"}
    second = fake_llm.requests[1].body["messages"]
    tool_message = next(m for m in second if m["role"] == "tool")
    assert tool_message["tool_call_id"] == "t1" and "hi from file" in tool_message["content"]


async def test_transient_errors_are_retried_visibly(env, ws, fake_llm):
    fake_llm.fail(503, "overloaded")
    fake_llm.fail(429, "slow down", headers={"retry-after": "0"})
    fake_llm.reply("finally")
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        reply = await agent.prompt(sid, "hi")
    assert reply["result"]["stopReason"] == "end_turn"
    thoughts = [
        u["content"]["text"]
        for u in agent.updates(sid)
        if u["sessionUpdate"] == "agent_thought_chunk"
    ]
    assert len(thoughts) == 2 and all("Retrying" in t for t in thoughts)
    assert len(fake_llm.requests) == 3


async def test_failed_llm_call_is_an_error_and_never_stored_as_text(env, ws, fake_llm):
    fake_llm.fail(400, "bad request: context too long")
    fake_llm.reply("second works")
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        failed = await agent.prompt(sid, "first")
        error = failed["error"]
        assert error["code"] == -32603
        assert error["data"]["reason"] == "bad_request"
        assert "context too long" in error["message"]
        assert (await agent.prompt(sid, "second"))["result"]["stopReason"] == "end_turn"
    async with running(env) as agent:
        await agent.call("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
        replayed = agent.updates(sid)
    agent_text = "".join(
        u["content"]["text"] for u in replayed if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert agent_text == "second works"
    assert "context too long" not in str(replayed)


async def test_auth_failure_is_32000(env, ws, fake_llm):
    fake_llm.fail(401, "invalid api key")
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        reply = await agent.prompt(sid, "hi")
    assert reply["error"]["code"] == -32000 and reply["error"]["data"]["reason"] == "auth"


async def test_cancel_closes_the_llm_stream(env, ws, fake_llm):
    fake_llm.hang("partial ")
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        task = asyncio.create_task(agent.prompt(sid, "go"))
        await agent.wait_for(turn_update)
        await agent.notify("session/cancel", {"sessionId": sid})
        reply = await task
        assert reply["result"]["stopReason"] == "cancelled"
        assert await fake_llm.requests[0].wait_disconnected_async(timeout=5)


async def test_long_stream_relayed_complete_and_in_order(env, ws, fake_llm):
    pieces = [f"{i} " for i in range(5000)]
    fake_llm.reply(*pieces)
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        reply = await agent.prompt(sid, "count", timeout=60)
    assert reply["result"]["stopReason"] == "end_turn"
    texts = [
        u["content"]["text"]
        for u in agent.updates(sid)
        if u["sessionUpdate"] == "agent_message_chunk"
    ]
    assert "".join(texts) == "".join(pieces)
