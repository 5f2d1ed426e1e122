"""Seed C.8 (session/set_config_option), C.9 (_agentao.cn/set_model), C.10 (session/set_mode)."""

from __future__ import annotations

import asyncio

import pytest

from tests.e2e.agent_process import agent_env, running, scripted_env, turn_update

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def openai_env(tmp_path):
    return agent_env(tmp_path / "home", LLM_PROVIDER="OPENAI", OPENAI_API_KEY="sk-secret-value")


def _set(sid, value, **extra):
    return {"sessionId": sid, "configId": "model", "value": value, **extra}


@pytest.mark.parametrize(
    "value, current",
    [
        ("openai/gpt-4o-mini", "openai/gpt-4o-mini"),
        ("OpenAI/GPT-X", "openai/GPT-X"),  # provider lower-cased, model kept as is
        ("gpt-5", "openai/gpt-5"),  # bare model: the current provider
        ("openai/org/model:tag", "openai/org/model:tag"),  # split on the first "/"
    ],
)
async def test_c8_set_config_option_model(openai_env, ws, value, current):
    async with running(openai_env) as agent:
        sid = await agent.new_session(ws)
        result = await agent.call("session/set_config_option", _set(sid, value))
    [option] = result["configOptions"]
    assert option["id"] == "model" and option["currentValue"] == current


async def test_c8_only_the_model_config_id(openai_env, ws):
    async with running(openai_env) as agent:
        sid = await agent.new_session(ws)
        reply = await agent.request(
            "session/set_config_option", {"sessionId": sid, "configId": "mode", "value": "x"}
        )
    assert reply["error"]["code"] == -32600


@pytest.mark.parametrize(
    "extra",
    [{"apiKey": "k"}, {"baseUrl": "http://x"}, {"_meta": {}}, {"other": 1}, {"type": "boolean"}],
)
async def test_c8_any_other_field_is_32602(openai_env, ws, extra):
    async with running(openai_env) as agent:
        sid = await agent.new_session(ws)
        reply = await agent.request("session/set_config_option", _set(sid, "gpt-5", **extra))
    assert reply["error"]["code"] == -32602


async def test_c8_unknown_provider_is_32600_and_logs_no_secret(openai_env, ws):
    async with running(openai_env) as agent:
        sid = await agent.new_session(ws)
        reply = await agent.request("session/set_config_option", _set(sid, "Anthropic/claude"))
        still = await agent.call("session/set_config_option", _set(sid, "gpt-4o"))
    assert reply["error"]["code"] == -32600
    assert reply["error"]["message"] == "cannot resolve provider 'anthropic'"
    assert still["configOptions"][0]["currentValue"] == "openai/gpt-4o"
    log = agent.stderr.decode()
    assert "'anthropic'" in log and "ProviderNotFound" in log
    assert "sk-secret-value" not in log


async def test_c8_unknown_session(openai_env):
    async with running(openai_env) as agent:
        reply = await agent.request("session/set_config_option", _set("nope", "gpt-5"))
    assert reply["error"]["code"] == -32002


async def test_c9_set_model(openai_env, ws):
    async with running(openai_env) as agent:
        sid = await agent.new_session(ws)
        reply = await agent.request(
            "_agentao.cn/set_model", {"sessionId": sid, "model": "  deepseek-ish  "}
        )
        update = await agent.wait_for(
            lambda m: (
                m.get("method") == "session/update"
                and m["params"]["update"]["sessionUpdate"] == "config_option_update"
            )
        )
        for bad in ({"apiKey": "k"}, {"baseUrl": "u"}, {"_meta": {}}):
            rejected = await agent.request(
                "_agentao.cn/set_model", {"sessionId": sid, "model": "m", **bad}
            )
            assert rejected["error"]["code"] == -32602
        empty = await agent.request("_agentao.cn/set_model", {"sessionId": sid, "model": " "})
        assert empty["error"]["code"] == -32602
        unknown = await agent.request("_agentao.cn/set_model", {"sessionId": "x", "model": "m"})
        assert unknown["error"]["code"] == -32002
    assert reply["result"] == {"model": "deepseek-ish"}
    assert agent.received.index(reply) < agent.received.index(update)
    options = update["params"]["update"]["configOptions"]
    assert options[0]["currentValue"] == "openai/deepseek-ish"


def _write_script():
    call = {"name": "write_file", "arguments": {"file_path": "w.txt", "content": "w"}}
    return [{"match": "write", "tool_calls": [call]}, {"match": "write", "text": "done"}]


async def test_c10_preset_changes_posture_per_session(tmp_path, ws):
    env = scripted_env(tmp_path, _write_script() + _write_script())
    async with running(env) as agent:
        ro = await agent.new_session(ws)
        rw = await agent.new_session(ws)
        reply = await agent.request("session/set_mode", {"sessionId": ro, "modeId": "read-only"})
        assert reply["result"] == {"_meta": {"agentao.cn/modeId": "read-only"}}
        await agent.prompt(ro, "write it")
        assert not (ws / "w.txt").exists()  # denied in read-only
        await agent.prompt(rw, "write it")  # the other session is unaffected
        assert (ws / "w.txt").exists()
    mode_updates = [u for u in agent.updates(ro) if u["sessionUpdate"] == "current_mode_update"]
    assert mode_updates == [{"sessionUpdate": "current_mode_update", "currentModeId": "read-only"}]
    denied = [u for u in agent.updates(ro) if u["sessionUpdate"] == "tool_call_update"][-1]
    assert denied["status"] == "failed"


async def test_c10_other_mode_id_is_echoed_and_kept_without_changing_posture(tmp_path, ws):
    env = scripted_env(tmp_path, _write_script())
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        await agent.call("session/set_mode", {"sessionId": sid, "modeId": "read-only"})
        reply = await agent.call("session/set_mode", {"sessionId": sid, "modeId": "code"})
        assert reply == {"_meta": {"agentao.cn/modeId": "code"}}
        await agent.prompt(sid, "write it")
        assert not (ws / "w.txt").exists()  # still read-only underneath
        empty = await agent.request("session/set_mode", {"sessionId": sid, "modeId": ""})
        assert empty["error"]["code"] == -32602
        unknown = await agent.request("session/set_mode", {"sessionId": "x", "modeId": "plan"})
        assert unknown["error"]["code"] == -32002
    async with running(env) as agent:
        result = await agent.call(
            "session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []}
        )
    assert result["modes"]["currentModeId"] == "code"
    assert "code" in [m["id"] for m in result["modes"]["availableModes"]]


async def test_c10_set_mode_during_a_turn_is_answered_at_once(tmp_path, ws):
    slow = {"text": {"repeat": "x", "count": 500}, "delay": 0.02}
    env = scripted_env(tmp_path, [slow])
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        task = asyncio.create_task(agent.prompt(sid, "go"))
        await agent.wait_for(turn_update)
        reply = await agent.call("session/set_mode", {"sessionId": sid, "modeId": "plan"})
        assert reply == {"_meta": {"agentao.cn/modeId": "plan"}}
        assert not task.done()
        await agent.notify("session/cancel", {"sessionId": sid})
        await task
