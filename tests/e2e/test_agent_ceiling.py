"""AGENTAO_MODE_CEILING: no way past the mode ceiling its starter set (agent/ceiling.py).

The attack: a gateway key whose ceiling is below `all` sends `session/set_mode
full-access`, or just the chat message `/mode full-access`, and its next turn runs a
command unconfined. The process's environment carries the ceiling, so no client message
can lift it. Each test has a control: the same request without the ceiling works.
"""

from __future__ import annotations

import pytest

from tests.e2e.agent_process import AgentProcess, running, scripted_env

pytestmark = pytest.mark.timeout(60)

SAY = {"text": "ok"}


def _env(tmp_path, ceiling: str | None = None):
    extra = {"AGENTAO_MODE_CEILING": ceiling} if ceiling else {}
    return scripted_env(tmp_path, [SAY, SAY, SAY], **extra)


def _mode_ids(result) -> list[str]:
    return [m["id"] for m in result["modes"]["availableModes"]]


async def test_set_mode_above_the_ceiling_is_refused(tmp_path, ws):
    async with running(_env(tmp_path, "workspace-write")) as agent:
        new = await agent.call("session/new", {"cwd": str(ws), "mcpServers": []})
        sid = new["sessionId"]
        refused = await agent.request(
            "session/set_mode", {"sessionId": sid, "modeId": "full-access"}
        )
        lower = await agent.request("session/set_mode", {"sessionId": sid, "modeId": "read-only"})
    assert new["modes"]["currentModeId"] == "workspace-write"
    assert "full-access" not in _mode_ids(new)
    assert refused["error"]["code"] == -32602
    assert refused["error"]["data"]["reason"] == "above_ceiling"
    assert refused["error"]["data"]["ceiling"] == "workspace-write"
    assert lower["result"] == {"_meta": {"agentao.cn/modeId": "read-only"}}  # control


async def test_without_a_ceiling_full_access_is_allowed(tmp_path, ws):  # control
    async with running(_env(tmp_path)) as agent:
        new = await agent.call("session/new", {"cwd": str(ws), "mcpServers": []})
        reply = await agent.request(
            "session/set_mode", {"sessionId": new["sessionId"], "modeId": "full-access"}
        )
    assert "full-access" in _mode_ids(new)
    assert reply["result"] == {"_meta": {"agentao.cn/modeId": "full-access"}}


@pytest.mark.parametrize("ceiling, expect_switch", [("workspace-write", False), (None, True)])
async def test_the_mode_command_obeys_the_ceiling(tmp_path, ws, ceiling, expect_switch):
    async with running(_env(tmp_path, ceiling)) as agent:
        sid = await agent.new_session(ws)
        reply = await agent.prompt(sid, "/mode full-access")
        text = "".join(
            u["content"]["text"]
            for u in agent.updates(sid)
            if u["sessionUpdate"] == "agent_message_chunk"
        )
        switched = [u for u in agent.updates(sid) if u["sessionUpdate"] == "current_mode_update"]
    assert reply["result"]["stopReason"] == "end_turn"
    if expect_switch:
        assert text == "Mode: full-access" and switched
    else:
        assert "above this agent's ceiling 'workspace-write'" in text, text
        assert switched == []


async def test_a_new_session_starts_at_a_lower_ceiling(tmp_path, ws):
    async with running(_env(tmp_path, "read-only")) as agent:
        new = await agent.call("session/new", {"cwd": str(ws), "mcpServers": []})
    assert new["modes"]["currentModeId"] == "read-only"
    assert sorted(_mode_ids(new)) == ["plan", "read-only"]


async def test_a_stored_session_loaded_under_a_ceiling_is_lowered(tmp_path, ws):
    async with running(_env(tmp_path)) as agent:
        sid = await agent.new_session(ws)
        await agent.call("session/set_mode", {"sessionId": sid, "modeId": "full-access"})
        assert (await agent.prompt(sid, "hi"))["result"]["stopReason"] == "end_turn"
    async with running(_env(tmp_path, "workspace-write")) as agent:
        loaded = await agent.call(
            "session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []}
        )
    async with running(_env(tmp_path)) as agent:  # control: stored as full-access
        again = await agent.call(
            "session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []}
        )
    assert loaded["modes"]["currentModeId"] == "workspace-write"
    assert again["modes"]["currentModeId"] == "full-access"


async def test_a_bad_ceiling_value_stops_the_agent(tmp_path, ws):
    agent = await AgentProcess.start(_env(tmp_path, "root"))
    await agent.send(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    )
    code = await agent.close()
    assert code != 0
    assert "AGENTAO_MODE_CEILING='root'" in agent.stderr.decode()
