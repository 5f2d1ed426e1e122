"""Our agent's v2 session surface over a real `agentao --acp` and the fake LLM (server/v2.py):
session/new without mcpServers, a prompt answered at insertion with `{messageId}`, the
`state_update` life of a turn, keyed upserts (tool calls, plan), permissions in v2's shape
with `requires_action`, cancel, errors after insertion, resume with replay, close, list and
the mode as a config option. Every message both ways is checked against the official v2
schema (tests/schema_check.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.agent_process import AgentProcess, agent_env, running
from tests.fakes.fake_llm import FakeToolCall
from tests.schema_check import check_all

pytestmark = pytest.mark.timeout(60)
V2_CLIENT = {"name": "v2-test-client", "version": "1.0.0"}
SHELL = "touch made.txt"


async def v2_initialize(agent: AgentProcess) -> dict[str, Any]:
    return await agent.call("initialize", {"protocolVersion": 2, "info": V2_CLIENT})


def states(agent: AgentProcess, session: str) -> list[str]:
    return [
        u["state"]
        for u in agent.updates(session, every=True)
        if u["sessionUpdate"] == "state_update"
    ]


async def idle(agent: AgentProcess, session: str, nth: int = 1) -> dict[str, Any]:
    """The `nth` idle state_update of `session` (waited for)."""

    def seen(_: dict) -> bool:
        return len(_idles(agent, session)) >= nth

    await agent.wait_for(seen)
    return _idles(agent, session)[nth - 1]


def _idles(agent: AgentProcess, session: str) -> list[dict[str, Any]]:
    return [
        u
        for u in agent.updates(session, every=True)
        if u["sessionUpdate"] == "state_update" and u["state"] == "idle"
    ]


def choose(option_id: str):
    async def handler(message: dict[str, Any]) -> dict[str, Any]:
        return {"outcome": {"outcome": "selected", "optionId": option_id}}

    return handler


@pytest.fixture
def env(tmp_path, fake_llm):
    return agent_env(tmp_path / "home", **fake_llm.env())


async def test_a_v2_prompt_is_acknowledged_with_its_message_id_then_runs_to_idle(env, ws, fake_llm):
    fake_llm.reply(reasoning=["thinking"], text=["Hello", " there"])
    async with running(env, init=False) as agent:
        init = await v2_initialize(agent)
        new = await agent.call("session/new", {"cwd": str(ws)})  # no mcpServers: optional
        sid = new["sessionId"]
        ack = await agent.call(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
        )
        end = await idle(agent, sid)
    assert set(init["capabilities"]["session"]) >= {"prompt", "mcp"}
    assert [o["configId"] for o in new["configOptions"]] == ["mode", "model"]
    assert set(ack) == {"messageId"}
    updates = agent.updates(sid, every=True)
    [user] = [u for u in updates if u["sessionUpdate"] == "user_message_chunk"]
    assert user["messageId"] == ack["messageId"] and user["content"]["text"] == "hi"
    chunks = [u for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert "".join(c["content"]["text"] for c in chunks) == "Hello there"
    assert len({c["messageId"] for c in chunks}) == 1 != ack["messageId"]
    thoughts = [u for u in updates if u["sessionUpdate"] == "agent_thought_chunk"]
    assert thoughts and all(t["messageId"] for t in thoughts)
    assert states(agent, sid) == ["running", "idle"]
    assert end["stopReason"] == "end_turn"
    assert end["_meta"]["agentao.cn/usage"]["totalTokens"] == 15
    assert check_all(agent.received, agent.sent, version=2) == []


async def test_tool_calls_are_keyed_upserts_and_a_plan_is_a_plan_update(env, ws, fake_llm):
    todo = {"todos": [{"content": "write it", "status": "in_progress"}]}
    fake_llm.reply(
        tool_calls=[
            FakeToolCall("todo_write", todo, id="t1"),
            FakeToolCall("write_file", {"file_path": "a.txt", "content": "x\n"}, id="w1"),
        ]
    )
    fake_llm.reply(text=["done"])
    async with running(env, init=False) as agent:
        await v2_initialize(agent)
        sid = (await agent.call("session/new", {"cwd": str(ws)}))["sessionId"]
        await agent.call("session/prompt", {"sessionId": sid, "prompt": [_text("go")]})
        end = await idle(agent, sid)
    assert end["stopReason"] == "end_turn", agent.stderr.decode()[-2000:]
    updates = agent.updates(sid)
    kinds = {u["sessionUpdate"] for u in updates}
    assert "tool_call" not in kinds and "plan" not in kinds  # v1's kinds never on v2
    [plan] = [u for u in updates if u["sessionUpdate"] == "plan_update"]
    assert plan["plan"]["type"] == "items" and plan["plan"]["planId"]
    assert plan["plan"]["entries"][0]["content"] == "write it"
    writes = [u for u in updates if u.get("toolCallId") == "w1"]
    assert writes[0]["status"] == "pending" and writes[0]["name"] == "write_file"
    assert writes[-1]["status"] == "completed"
    [diff] = [c for c in writes[-1]["content"] if c["type"] == "diff"]
    assert diff["changes"] == [{"operation": "add", "path": str(ws / "a.txt")}]
    assert "+x" in diff["patch"]["text"]
    assert (ws / "a.txt").read_text() == "x\n"
    assert check_all(agent.received, agent.sent, version=2) == []


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}
