"""Seed C.11 (_agentao.cn/ask_user): the agent asks, the client answers in either shape;
no answer, an error or a cancel gives the model "(user unavailable)"."""

from __future__ import annotations

import pytest

from tests.e2e.agent_process import ClientError, running, scripted_env

pytestmark = pytest.mark.timeout(60)
SENTINEL = "(user unavailable)"


def _script():
    call = {"id": "q1", "name": "ask_user", "arguments": {"question": "Tabs or spaces?"}}
    return [{"tool_calls": [call]}, {"text": "ok"}]


async def _answer_with(tmp_path, ws, handler):
    env = scripted_env(tmp_path, _script())
    async with running(env) as agent:
        agent.handlers["_agentao.cn/ask_user"] = handler
        sid = await agent.new_session(ws)
        reply = await agent.prompt(sid, "ask")
    [asked] = [m for m in agent.agent_requests if m["method"] == "_agentao.cn/ask_user"]
    assert asked["params"] == {"sessionId": sid, "question": "Tabs or spaces?"}
    assert reply["result"]["stopReason"] == "end_turn"
    final = [u for u in agent.updates(sid) if u["sessionUpdate"] == "tool_call_update"][-1]
    return final["content"][0]["content"]["text"]


async def test_c11_answer_shape(tmp_path, ws):
    async def answer(message):
        return {"answer": "spaces"}

    assert await _answer_with(tmp_path, ws, answer) == "spaces"


async def test_c11_outcome_answered_shape(tmp_path, ws):
    async def answer(message):
        return {"outcome": "answered", "text": "tabs"}

    assert await _answer_with(tmp_path, ws, answer) == "tabs"


@pytest.mark.parametrize("result", [{}, {"answer": 3}, {"outcome": "cancelled"}, None, []])
async def test_c11_no_answer_is_the_sentinel(tmp_path, ws, result):
    async def answer(message):
        return result

    assert await _answer_with(tmp_path, ws, answer) == SENTINEL


async def test_c11_error_is_the_sentinel(tmp_path, ws):
    async def answer(message):
        raise ClientError(-32601, "Method not found")

    assert await _answer_with(tmp_path, ws, answer) == SENTINEL
