"""`agentao --acp` negotiates the protocol version per connection, over real pipes: a v1
client gets exactly the v1 result, a v2 client a v2 one, an odd or unsupported version a clear
error; and every message of each conversation follows that version's official schema
(tests/schema_check.py)."""

from __future__ import annotations

import pytest

from agentao.server.capabilities import initialize_response
from tests.e2e.agent_process import agent_env, running
from tests.schema_check import check_all

pytestmark = pytest.mark.timeout(60)
V2_CLIENT = {"name": "v2-test-client", "version": "1.0.0"}


@pytest.fixture
def env(tmp_path, monkeypatch):
    env = agent_env(tmp_path / "home", LLM_PROVIDER="OPENAI", OPENAI_API_KEY="test")
    for name in ("LLM_PROVIDER", "OPENAI_API_KEY", "OPENAI_MODEL", "AGENTAO_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LLM_PROVIDER", "OPENAI")
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    return env


async def test_a_v1_client_gets_exactly_the_v1_result(env):
    async with running(env, init=False) as agent:
        result = await agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    assert result == initialize_response()  # what the v1-only agent answered
    assert result["protocolVersion"] == 1 and "info" not in result
    assert check_all(agent.received, agent.sent, version=1) == []


async def test_a_v2_client_gets_a_v2_result(env):
    async with running(env, init=False) as agent:
        params = {"protocolVersion": 2, "info": V2_CLIENT, "capabilities": {}}
        result = await agent.call("initialize", params)
    assert result["protocolVersion"] == 2
    assert result["info"]["name"] == "agentao" and result["info"]["title"] == "Agentao"
    assert "agentCapabilities" not in result and "agentInfo" not in result
    # the v2 session surface and auth/status are served (server/v2.py), so advertised
    assert set(result["capabilities"]) == {"session", "auth"}
    assert check_all(agent.received, agent.sent, version=2) == []


async def test_a_newer_version_settles_on_2(env):
    async with running(env, init=False) as agent:
        result = await agent.call("initialize", {"protocolVersion": 9, "info": V2_CLIENT})
    assert result["protocolVersion"] == 2
    assert check_all(agent.received, agent.sent, version=2) == []


async def test_methods_not_served_on_v2_are_32601_and_v1_ones_stay_served_on_v1(env, tmp_path):
    v2_only_gone = {"sessionId": "s", "cwd": str(tmp_path), "mcpServers": []}
    async with running(env, init=False) as agent:
        await agent.call("initialize", {"protocolVersion": 2, "info": V2_CLIENT})
        replies = [
            await agent.request("session/archive", {"sessionId": "s"}),
            await agent.request("session/load", v2_only_gone),  # not in v2 at all
            await agent.request("_agentao.cn/set_model", {"sessionId": "s", "model": "m"}),
        ]
    for reply, method in zip(
        replies, ("session/archive", "session/load", "_agentao.cn/set_model"), strict=True
    ):
        assert reply["error"]["code"] == -32601, reply
        assert reply["error"]["message"] == f"Method not found: {method}"
    assert check_all(agent.received, agent.sent, version=2) == []
    async with running(env) as agent:  # control: the same calls on v1 are served
        session = await agent.new_session(tmp_path)
        assert session
        load = await agent.request("session/load", {**v2_only_gone, "sessionId": session})
        assert "result" in load, load


async def test_a_version_below_every_one_spoken_is_32022_and_the_agent_lives_on(env):
    async with running(env, init=False) as agent:
        refused = await agent.request("initialize", {"protocolVersion": 0, "info": V2_CLIENT})
        early = await agent.request("session/new", {"cwd": "/"})
        result = await agent.call("initialize", {"protocolVersion": 2, "info": V2_CLIENT})
    assert refused["error"]["code"] == -32022
    assert refused["error"]["data"] == {"requested": 0, "supported": [1, 2]}
    assert early["error"]["code"] == -32002  # still not initialized
    assert result["protocolVersion"] == 2
    assert check_all(agent.received, agent.sent, version=2) == []


@pytest.mark.parametrize(
    ("version", "detail"),
    [
        (True, "got `bool`"),
        ("2", "got `str`"),
        (2.5, "got `float`"),
        (70000, "<= 65535"),
        (None, "got `null`"),
    ],
)
async def test_an_odd_version_is_32602_naming_it(env, version, detail):
    async with running(env, init=False) as agent:
        reply = await agent.request("initialize", {"protocolVersion": version, "info": V2_CLIENT})
    assert reply["error"]["code"] == -32602
    assert detail in reply["error"]["message"] and "protocolVersion" in reply["error"]["message"]
    assert check_all(agent.received, agent.sent, version=2) == []


async def test_a_v2_initialize_without_info_is_32602(env):
    async with running(env, init=False) as agent:
        reply = await agent.request("initialize", {"protocolVersion": 2})
    assert reply["error"]["code"] == -32602 and "`info`" in reply["error"]["message"]


async def test_every_message_of_a_v1_session_with_the_fake_llm_follows_v1(tmp_path, fake_llm):
    fake_llm.reply(reasoning=["thinking"], text=["Hello", " there"])
    env = agent_env(tmp_path / "home", **fake_llm.env())
    ws = tmp_path / "ws"
    ws.mkdir()
    async with running(env) as agent:
        session = await agent.new_session(ws)
        reply = await agent.prompt(session, "hi")
    assert reply["result"]["stopReason"] == "end_turn"
    kinds = {u["sessionUpdate"] for u in agent.updates(session)}
    assert {"agent_thought_chunk", "agent_message_chunk"} <= kinds
    assert check_all(agent.received, agent.sent, version=1) == []
