"""Seed C.2 (session/new): cwd and mcpServers checked field by field, the result's shape,
missing credentials, and the result written before the session's first update."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.e2e.agent_process import agent_env, running, scripted_env, turn_update
from tests.fakes.recording_http import AdminEndpoint

pytestmark = pytest.mark.timeout(60)
MCP_SERVER = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py")


@pytest.fixture
def env(tmp_path):
    return scripted_env(tmp_path, [{"text": "ok"}])


@pytest.fixture
def ws(tmp_path):
    path = tmp_path / "ws"
    path.mkdir()
    (tmp_path / "file.txt").write_text("x")
    return path


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def refusing(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One agent, and its workspace, for the tests whose session/new is refused: a refused
    session/new leaves no session behind, so each need not start an agent (~0.6 s each).
    Its exit code is still checked (`running`), once they have all run."""
    tmp = tmp_path_factory.mktemp("session-new-refused")
    path = tmp / "ws"
    path.mkdir()
    (tmp / "file.txt").write_text("x")
    async with running(scripted_env(tmp, [{"text": "ok"}])) as agent:
        yield agent, path


ON_THE_REFUSING_AGENT = pytest.mark.asyncio(loop_scope="module")  # where `refusing` runs


async def test_c2_result_session_id_modes_config_options(env, ws):
    async with running(env) as agent:
        result = await agent.call("session/new", {"cwd": str(ws), "mcpServers": []})
    assert str(uuid.UUID(result["sessionId"])) == result["sessionId"]
    modes = result["modes"]
    assert modes["currentModeId"] == "workspace-write"
    assert [m["id"] for m in modes["availableModes"]] == [
        "read-only",
        "workspace-write",
        "full-access",
        "plan",
    ]
    [option] = result["configOptions"]
    assert option["id"] == "model" and option["name"] == "Model"
    assert option["category"] == "model" and option["type"] == "select"
    assert option["currentValue"] == "scripted/script"
    assert [o["value"] for o in option["options"]] == ["scripted/script"]


@pytest.mark.parametrize(
    "cwd, problem",
    [("relative/dir", "absolute"), ("/no/such/dir", "does not exist"), ("FILE", "not a directory")],
)
@ON_THE_REFUSING_AGENT
async def test_c2_cwd_absolute_existing_directory(refusing, cwd, problem):
    agent, ws = refusing
    if cwd == "FILE":
        cwd = str(ws.parent / "file.txt")
    reply = await agent.request("session/new", {"cwd": cwd, "mcpServers": []})
    assert reply["error"]["code"] == -32602
    assert problem in reply["error"]["message"]
    assert reply["error"]["data"] == {"field": "cwd"}


BAD_MCP = [
    ("not a list", {"name": "x"}, "mcpServers"),
    ("item not object", ["x"], "mcpServers[0]"),
    ("empty name", [{"name": "", "command": "x", "args": [], "env": []}], "mcpServers[0].name"),
    ("no command", [{"name": "a", "args": [], "env": []}], "mcpServers[0]"),
    ("args not list", [{"name": "a", "command": "x", "args": "y", "env": []}], "mcpServers[0]"),
    (
        "env as a map",
        [{"name": "a", "command": "x", "args": [], "env": {"K": "V"}}],
        "mcpServers[0]",
    ),
    (
        "env item bad",
        [{"name": "a", "command": "x", "args": [], "env": [{"name": "K"}]}],
        "mcpServers[0]",
    ),
    ("sse no url", [{"type": "sse", "name": "a", "headers": []}], "mcpServers[0]"),
    ("unknown type", [{"type": "ws", "name": "a", "url": "ws://x"}], "mcpServers[0]"),
    (
        "duplicate names",
        [
            {"name": "a", "command": "x", "args": [], "env": []},
            {"name": "a", "command": "y", "args": [], "env": []},
        ],
        "mcpServers[1].name",
    ),
]


@pytest.mark.parametrize("why, servers, field", BAD_MCP, ids=[b[0] for b in BAD_MCP])
@ON_THE_REFUSING_AGENT
async def test_c2_mcp_servers_malformed_is_32602(refusing, why, servers, field):
    agent, ws = refusing
    reply = await agent.request("session/new", {"cwd": str(ws), "mcpServers": servers})
    assert reply["error"]["code"] == -32602, reply
    assert field in reply["error"]["message"] or field in str(reply["error"].get("data"))


@pytest.fixture
def http_mcp(tmp_path):
    """The fake MCP server over streamable HTTP, on a free loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    root = str(Path(__file__).resolve().parents[2])
    code = (
        f"import sys; sys.path.insert(0, {root!r}); from tests.fakes.mcp_server import build; "
        f"build('web').run('streamable-http', host='127.0.0.1', port={port})"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        for _ in range(200):  # until it listens (at most ~10 s)
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def test_c2_http_mcp_server_tools_are_offered(tmp_path, ws, http_mcp):
    """mcpCapabilities.http is advertised because a streamable HTTP server works."""
    server = {"type": "http", "name": "web", "url": http_mcp, "headers": []}
    call = {"name": "mcp__web__echo", "arguments": {"text": "over http"}}
    env = scripted_env(tmp_path, [{"tool_calls": [call]}, {"text": "ok"}])
    async with running(env) as agent:
        sid = (await agent.call("session/new", {"cwd": str(ws), "mcpServers": [server]}))[
            "sessionId"
        ]
        reply = await agent.prompt(sid, "echo")
        updates = agent.updates(sid)
    assert reply["result"]["stopReason"] == "end_turn"
    [end] = [u for u in updates if u["sessionUpdate"] == "tool_call_update" and u.get("content")]
    assert end["status"] == "completed" and end["content"][0]["content"]["text"] == "over http"


@pytest.fixture
def admin():
    endpoint = AdminEndpoint()
    yield endpoint
    endpoint.close()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "0x7f000001", "[::ffff:127.0.0.1]"])
async def test_c2_public_only_refuses_a_private_mcp_url(tmp_path, ws, admin, host):
    """Started by a gateway (AGENTAO_MCP_PUBLIC_ONLY=1), our agent refuses an http/sse MCP
    server on a loopback address itself, in the session/new answer, and never calls it."""
    env = scripted_env(tmp_path, [{"text": "ok"}], AGENTAO_MCP_PUBLIC_ONLY="1")
    url = f"http://{host}:{admin.port}/mcp"
    servers = [{"type": "http", "name": "admin", "url": url, "headers": []}]
    async with running(env) as agent:
        reply = await agent.request("session/new", {"cwd": str(ws), "mcpServers": servers})
    assert reply["error"]["code"] == -32602
    assert "MCP server 'admin' refused" in reply["error"]["message"]
    assert reply["error"]["data"] == {
        "field": "mcpServers",
        "server": "admin",
        "reason": "private_address",
    }
    assert admin.requests == []


async def test_c2_public_only_calls_the_one_url_the_gateway_trusts(tmp_path, ws, admin):
    """The gateway's tool bridge is on its own (loopback) address: the one URL named in
    AGENTAO_MCP_TRUSTED_URL is reached, exactly it; another path on that host still is not."""
    url = f"http://127.0.0.1:{admin.port}/mcp"
    env = scripted_env(
        tmp_path, [{"text": "ok"}], AGENTAO_MCP_PUBLIC_ONLY="1", AGENTAO_MCP_TRUSTED_URL=url
    )
    other = [{"type": "http", "name": "admin", "url": url + "/other", "headers": []}]
    servers = [{"type": "http", "name": "admin", "url": url, "headers": []}]
    async with running(env) as agent:
        refused = await agent.request("session/new", {"cwd": str(ws), "mcpServers": other})
        assert refused["error"]["data"]["reason"] == "private_address"
        await agent.call("session/new", {"cwd": str(ws), "mcpServers": servers})
        assert await asyncio.to_thread(admin.hit.wait, 30)


async def test_c2_without_public_only_the_same_mcp_url_is_called(tmp_path, ws, admin):
    """The control: run by a person (no AGENTAO_MCP_PUBLIC_ONLY), a loopback MCP server is
    theirs to use, and the agent connects to it."""
    env = scripted_env(tmp_path, [{"text": "ok"}])
    url = f"http://127.0.0.1:{admin.port}/mcp"
    servers = [{"type": "http", "name": "admin", "url": url, "headers": []}]
    async with running(env) as agent:
        await agent.call("session/new", {"cwd": str(ws), "mcpServers": servers})
        assert await asyncio.to_thread(admin.hit.wait, 30)


@ON_THE_REFUSING_AGENT
async def test_c2_mcp_servers_missing_is_32602(refusing):
    agent, ws = refusing
    reply = await agent.request("session/new", {"cwd": str(ws)})
    assert reply["error"]["code"] == -32602


async def test_c2_valid_stdio_server_tools_are_offered(tmp_path, ws):
    server = {
        "name": "fake",
        "command": sys.executable,
        "args": [MCP_SERVER, "--name", "fake"],
        "env": [{"name": "FAKE_VAR", "value": "from-the-client"}],
    }
    call = {"name": "mcp__fake__whoami", "arguments": {"var": "FAKE_VAR"}}
    env = scripted_env(tmp_path, [{"tool_calls": [call]}, {"text": "ok"}])

    async def allow(message):  # an MCP tool not marked read-only asks under workspace-write
        return {"outcome": {"outcome": "selected", "optionId": "allow"}}

    async with running(env) as agent:
        agent.handlers["session/request_permission"] = allow
        sid = (await agent.call("session/new", {"cwd": str(ws), "mcpServers": [server]}))[
            "sessionId"
        ]
        reply = await agent.prompt(sid, "hello")
        updates = agent.updates(sid)
    assert reply["result"]["stopReason"] == "end_turn"
    [start] = [u for u in updates if u["sessionUpdate"] == "tool_call"]
    assert start["kind"] == "other"
    [end] = [u for u in updates if u["sessionUpdate"] == "tool_call_update" and u.get("content")]
    assert end["status"] == "completed"
    # env arrives as name/value pairs and reaches the server's process
    assert "FAKE_VAR=from-the-client" in end["content"][0]["content"]["text"]


async def test_c2_result_before_first_update_mcp_failure_is_a_notice(env, ws):
    broken = {
        "name": "broken",
        "command": sys.executable,
        "args": [MCP_SERVER, "--fail"],
        "env": [],
    }
    async with running(env) as agent:
        reply = await agent.request("session/new", {"cwd": str(ws), "mcpServers": [broken]})
        sid = reply["result"]["sessionId"]
        notice = await agent.wait_for(turn_update)
        # The session still works without the server.
        assert (await agent.prompt(sid, "hi"))["result"]["stopReason"] == "end_turn"
    first = agent.received.index(notice)
    assert agent.received.index(reply) < first
    assert notice["params"]["sessionId"] == sid
    update = notice["params"]["update"]
    assert update["sessionUpdate"] == "agent_thought_chunk"
    assert "broken" in update["content"]["text"]


async def test_c2_mcp_failure_is_a_notice_update_when_the_client_shows_notices(env, ws):
    broken = {
        "name": "broken",
        "command": sys.executable,
        "args": [MCP_SERVER, "--fail"],
        "env": [],
    }
    caps = {"session": {"notices": {}}}
    async with running(env, capabilities=caps) as agent:
        await agent.request("session/new", {"cwd": str(ws), "mcpServers": [broken]})
        notice = await agent.wait_for(turn_update)
    update = notice["params"]["update"]
    assert update["sessionUpdate"] == "notice" and "broken" in update["title"]


async def test_c2_missing_credentials_is_32000_naming_the_variables(tmp_path, ws):
    env = agent_env(tmp_path / "home", LLM_PROVIDER="DEEPSEEK")
    async with running(env) as agent:
        reply = await agent.request("session/new", {"cwd": str(ws), "mcpServers": []})
    error = reply["error"]
    assert error["code"] == -32000
    assert "DEEPSEEK_API_KEY" in error["message"]
    assert error["data"]["variables"] == ["DEEPSEEK_API_KEY"]


async def test_c2_additional_directories_must_exist(env, ws):
    async with running(env) as agent:
        reply = await agent.request(
            "session/new",
            {"cwd": str(ws), "mcpServers": [], "additionalDirectories": ["/no/such"]},
        )
        assert reply["error"]["code"] == -32602
        ok = await agent.request(
            "session/new",
            {"cwd": str(ws), "mcpServers": [], "additionalDirectories": [str(ws.parent)]},
        )
        assert "sessionId" in ok["result"]


async def test_c2_nothing_is_written_into_the_session_cwd(env, ws):
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        await agent.prompt(sid, "hello")
    assert list(ws.iterdir()) == []


async def test_c12_internal_error_is_32603_without_traceback(tmp_path, ws):
    env = scripted_env(tmp_path, [])
    (tmp_path / "home").mkdir(exist_ok=True)
    (tmp_path / "home" / "permissions.json").write_text("{not json")
    async with running(env) as agent:
        reply = await agent.request("session/new", {"cwd": str(ws), "mcpServers": []})
    assert reply["error"]["code"] == -32603
    assert "permission rules" in reply["error"]["message"]
    assert "Traceback" not in str(reply)
