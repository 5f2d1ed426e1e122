"""`session/fork` (v2, and v1's unstable method) at an earlier user message (server/fork.py): `_meta["agentao.cn/beforeTurn"]`
names the stored turn the fork ends before, so an edited prompt is resent on a session that
holds exactly the turns before it. A real `agentao --acp` over v2 and the fake LLM, whose
recorded requests show what the model is told."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.agent_process import AgentProcess, agent_env, running
from tests.e2e.test_agent_v2_session import idle, v2_initialize
from tests.fakes.fake_llm import FakeToolCall
from tests.schema_check import check_all

pytestmark = pytest.mark.timeout(60)
KEY = "agentao.cn/beforeTurn"
PROMPT = "agentao.cn/beforePrompt"


@pytest.fixture
def env(tmp_path, fake_llm):
    return agent_env(tmp_path / "home", **fake_llm.env())


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


def _user_texts(body: dict[str, Any]) -> list[str]:
    """The text of every user message the model was sent, in order."""
    texts = []
    for message in body["messages"]:
        if message["role"] != "user":
            continue
        content = message["content"]
        parts = content if isinstance(content, list) else [{"text": content}]
        texts.append("".join(p.get("text", "") for p in parts))
    return texts


async def _prompt(agent: AgentProcess, sid: str, text: str, nth: int) -> None:
    await agent.call("session/prompt", {"sessionId": sid, "prompt": [_text(text)]})
    await idle(agent, sid, nth)


async def test_a_fork_before_message_3_of_4_holds_messages_1_and_2_only(env, ws, fake_llm):
    plan = {"todos": [{"content": "second's plan", "status": "pending"}]}
    fake_llm.reply(text=["answer 1"])
    fake_llm.reply(tool_calls=[FakeToolCall("todo_write", plan, id="p1")])
    fake_llm.reply(text=["answer 2"])
    fake_llm.reply(text=["answer 3"])
    fake_llm.reply(text=["answer 4"])
    fake_llm.reply(text=["edited answer"])
    async with running(env, init=False) as agent:
        init = await v2_initialize(agent)
        sid = (await agent.call("session/new", {"cwd": str(ws)}))["sessionId"]
        for n in range(1, 5):
            await _prompt(agent, sid, f"message {n}", n)
        fork = await agent.call(
            "session/fork", {"sessionId": sid, "cwd": str(ws), "_meta": {KEY: 2}}
        )
        fid = fork["sessionId"]
        await _prompt(agent, fid, "message 3, edited", 1)
        told = fake_llm.requests[-1].body
        back = {"sessionId": fid, "cwd": str(ws), "replayFrom": {"type": "start"}}
        await agent.call("session/close", {"sessionId": fid})
        await agent.call("session/resume", back)
    assert init["capabilities"]["session"]["fork"]["_meta"][KEY]
    assert _user_texts(told) == ["message 1", "message 2", "message 3, edited"]
    said = " ".join(str(m.get("content")) for m in told["messages"])
    assert "answer 2" in said and "answer 3" not in said and "answer 4" not in said
    replayed = [
        u["content"]["text"]
        for u in agent.updates(fid, every=True)
        if u["sessionUpdate"] == "user_message_chunk"
    ]
    # the prompt on the fork, then the resume's replay of the fork's whole history
    assert replayed == ["message 3, edited", "message 1", "message 2", "message 3, edited"]
    plans = [u for u in agent.updates(fid, every=True) if u["sessionUpdate"] == "plan_update"]
    assert plans and plans[-1]["plan"]["entries"][0]["content"] == "second's plan"
    assert check_all(agent.received, agent.sent, version=2) == []


@pytest.mark.parametrize("bad", [-1, 3, True, "1", 1.0, None])
async def test_a_fork_point_outside_the_stored_turns_is_invalid_params(env, ws, fake_llm, bad):
    fake_llm.reply(text=["answer"])
    fake_llm.reply(text=["answer"])
    async with running(env, init=False) as agent:
        await v2_initialize(agent)
        sid = (await agent.call("session/new", {"cwd": str(ws)}))["sessionId"]
        for n in (1, 2):
            await _prompt(agent, sid, f"message {n}", n)
        refused = await agent.request(
            "session/fork", {"sessionId": sid, "cwd": str(ws), "_meta": {KEY: bad}}
        )
        listed = await agent.call("session/list", {})
    assert refused["error"]["code"] == -32602
    assert refused["error"]["data"]["field"] == f"_meta.{KEY}"
    assert [s["sessionId"] for s in listed["sessions"]] == [sid]  # nothing was made


async def test_a_v1_client_forks_before_a_turn_too(env, ws, fake_llm):
    fake_llm.reply(text=["answer 1"])
    fake_llm.reply(text=["answer 2"])
    fake_llm.reply(text=["edited answer"])
    async with running(env, init=False) as agent:
        init = await agent.initialize()  # v1
        sid = (await agent.call("session/new", {"cwd": str(ws), "mcpServers": []}))["sessionId"]
        for n in (1, 2):
            await agent.call(
                "session/prompt", {"sessionId": sid, "prompt": [_text(f"message {n}")]}
            )
        fork = await agent.call(
            "session/fork", {"sessionId": sid, "cwd": str(ws), "_meta": {KEY: 1}}
        )
        await agent.call(
            "session/prompt", {"sessionId": fork["sessionId"], "prompt": [_text("2, edited")]}
        )
    assert init["agentCapabilities"]["sessionCapabilities"]["fork"]["_meta"][KEY]
    assert fork["sessionId"] != sid and fork["modes"]["currentModeId"]
    assert _user_texts(fake_llm.requests[-1].body) == ["message 1", "2, edited"]
    assert check_all(agent.received, agent.sent, version=1) == []


async def test_the_prompt_finds_the_turn_when_the_callers_count_ran_ahead(env, ws, fake_llm):
    for n in (1, 2, 3, 4):
        fake_llm.reply(text=[f"answer {n}"])
    async with running(env, init=False) as agent:
        await v2_initialize(agent)
        sid = (await agent.call("session/new", {"cwd": str(ws)}))["sessionId"]
        for n in (1, 2, 3):
            await _prompt(agent, sid, f"message {n}", n)

        async def fork(meta: dict[str, Any]) -> dict[str, Any]:
            params = {"sessionId": sid, "cwd": str(ws), "_meta": meta}
            return await agent.request("session/fork", params)

        # a caller that counted a fourth turn the agent never stored, before "message 2"'s
        ahead = await fork({KEY: 3, PROMPT: "  message 2\n"})
        missing = await fork({KEY: 3, PROMPT: "never said"})
        later = await fork({KEY: 1, PROMPT: "message 3"})  # only at or before the index
        typed = await fork({KEY: 1, PROMPT: 7})
        fid = ahead["result"]["sessionId"]
        await _prompt(agent, fid, "message 2, edited", 1)
    assert _user_texts(fake_llm.requests[-1].body) == ["message 1", "message 2, edited"]
    for refused in (missing, later):
        assert refused["error"]["code"] == -32602
        assert refused["error"]["data"] == {"field": f"_meta.{PROMPT}", "reason": "no_such_turn"}
    assert typed["error"]["code"] == -32602 and typed["error"]["data"]["field"] == f"_meta.{PROMPT}"
