"""Seed C.1 (initialize) and C.12 (JSON-RPC error codes), over real pipes."""

from __future__ import annotations

import pytest

from tests.e2e.agent_process import AgentProcess, agent_env, running

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def env(tmp_path):
    return agent_env(tmp_path / "home", LLM_PROVIDER="OPENAI", OPENAI_API_KEY="test")


async def test_c1_initialize_response_fields(env):
    async with running(env, init=False) as agent:
        reply = await agent.request(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}},
                "clientInfo": {"name": "test", "version": "1", "title": "Test"},
            },
        )
    result = reply["result"]
    assert result["protocolVersion"] == 1
    assert result["authMethods"] == []
    info = result["agentInfo"]
    assert info["name"] == "agentao" and info["title"] == "Agentao" and info["version"]
    caps = result["agentCapabilities"]
    assert caps["loadSession"] is True
    # gpt-4o (OpenAI's default model) takes images; resource blocks always reach the model
    assert caps["promptCapabilities"] == {"image": True, "audio": False, "embeddedContext": True}
    assert caps["mcpCapabilities"] == {"sse": True, "http": True}
    for method in ("list", "close", "resume", "delete"):
        assert caps["sessionCapabilities"][method] == {}
    extensions = result["_meta"]["_agentao.cn/extensions"]
    methods = {e["method"] for e in extensions}
    assert {"_agentao.cn/ask_user", "_agentao.cn/set_model"} <= methods
    assert all(isinstance(e["description"], str) and e["description"] for e in extensions)


@pytest.mark.parametrize(
    ("model", "catalog", "image"),
    [
        ("deepseek-chat", "", False),
        ("my-vlm", "", False),
        (
            "my-vlm",
            "[providers.openai]\n[[providers.openai.models]]\nid = 'my-vlm'\nimages = true",
            True,
        ),
        (
            "gpt-4o",
            "[providers.openai]\n[[providers.openai.models]]\nid = 'gpt-4o'\nimages = false",
            False,
        ),
    ],
)
async def test_c1_image_prompts_are_advertised_for_the_configured_model(
    tmp_path, model, catalog, image
):
    config = tmp_path / "config"
    config.mkdir()
    if catalog:
        (config / "models.toml").write_text(catalog)
    env = agent_env(
        tmp_path / "home",
        LLM_PROVIDER="OPENAI",
        OPENAI_API_KEY="k",
        OPENAI_MODEL=model,
        AGENTAO_CONFIG_DIR=str(config),
    )
    async with running(env, init=False) as agent:
        result = await agent.call("initialize", {"protocolVersion": 1})
    assert result["agentCapabilities"]["promptCapabilities"]["image"] is image


@pytest.mark.parametrize(("version", "settled"), [(1, 1), (2, 2), (65535, 2)])
async def test_c1_protocol_version_negotiates_to_the_highest_at_or_below(env, version, settled):
    # Seed C.1 said "always 1"; since ACP v2 (issue 22) a client asking for 2 or more gets v2
    # (tests/e2e/test_agent_versions.py), and one asking for 1 exactly the v1 result.
    info = {"name": "test", "version": "1"}
    async with running(env, init=False) as agent:
        result = await agent.call(
            "initialize", {"protocolVersion": version, "clientCapabilities": {}, "info": info}
        )
    assert result["protocolVersion"] == settled


async def test_c1_protocol_version_0_is_unsupported(env):
    # v2's rule: no version we speak is at or below 0 (seed C.1 answered 1)
    async with running(env, init=False) as agent:
        reply = await agent.request("initialize", {"protocolVersion": 0, "clientCapabilities": {}})
    assert reply["error"]["code"] == -32022


@pytest.mark.parametrize("version", [True, False, "1", 1.5, None, [1]])
async def test_c1_protocol_version_not_an_int_is_rejected(env, version):
    async with running(env, init=False) as agent:
        reply = await agent.request(
            "initialize", {"protocolVersion": version, "clientCapabilities": {}}
        )
        assert reply["error"]["code"] == -32602
        # The connection lives on, and is still uninitialized.
        again = await agent.request("session/list", {})
        assert again["error"]["code"] == -32002


async def test_c1_client_capabilities_absent_means_defaults(env):
    async with running(env, init=False) as agent:
        result = await agent.call("initialize", {"protocolVersion": 1})
        assert result["protocolVersion"] == 1


@pytest.mark.parametrize("caps", [[], "fs", 3, True])
async def test_c1_client_capabilities_not_an_object_is_rejected(env, caps):
    async with running(env, init=False) as agent:
        reply = await agent.request(
            "initialize", {"protocolVersion": 1, "clientCapabilities": caps}
        )
        assert reply["error"]["code"] == -32602


async def test_c12_session_method_before_initialize_is_32002(env, tmp_path):
    async with running(env, init=False) as agent:
        reply = await agent.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        assert reply["error"] == {"code": -32002, "message": "Server not initialized"}
        await agent.initialize()
        assert "result" in await agent.request("session/list", {})


async def test_c12_error_codes_over_the_wire(env):
    async with running(env) as agent:
        await agent.send(b"{not json\n")
        parse = await agent.wait_for(lambda m: m.get("error", {}).get("code") == -32700)
        assert parse["id"] is None
        await agent.send(b"[1, 2]\n")
        invalid = await agent.wait_for(lambda m: m.get("error", {}).get("code") == -32600)
        assert invalid["id"] is None
        unknown = await agent.request("session/unknown_method", {})
        assert unknown["error"]["code"] == -32601
        bad = await agent.request("session/prompt", {"sessionId": 5, "prompt": []})
        assert bad["error"]["code"] == -32602
        missing = await agent.request(
            "session/prompt", {"sessionId": "nope", "prompt": [{"type": "text", "text": "x"}]}
        )
        assert missing["error"]["code"] == -32002
        assert missing["error"]["data"] == {"sessionId": "nope"}
        # Still serving after all of that.
        assert "result" in await agent.request("session/list", {})


async def test_stdout_carries_only_protocol_and_exit_is_zero(env, tmp_path):
    agent = await AgentProcess.start(env)
    await agent.initialize()
    await agent.new_session(tmp_path)
    code = await agent.close()
    assert code == 0
    assert all(m.get("jsonrpc") == "2.0" for m in agent.received)
    assert not any(tmp_path.iterdir()) or all(p.name == "home" for p in tmp_path.iterdir())
