"""McpHub against a real stdio MCP server (tests/fakes/mcp_server.py, built on the `mcp` SDK)."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

from agentao.agent.events import Notice, TextOutput
from agentao.agent.mcp import HttpServer, McpHub, StdioServer, tool_name
from agentao.agent.settings import McpLimits
from agentao.agent.tools.base import ToolContext, ToolError

FAKE = str(Path(__file__).parent.parent / "fakes" / "mcp_server.py")


def fake(name: str = "fake", *extra: str) -> StdioServer:
    return StdioServer(name, sys.executable, (FAKE, "--name", name, *extra))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_lists_and_calls_tools(ctx: ToolContext) -> None:
    async with McpHub([fake()]) as hub:
        assert hub.failures == []
        tools = {t.name: t for t in hub.tools}
        assert set(tools) == {
            "mcp__fake__echo",
            "mcp__fake__add",
            "mcp__fake__whoami",
            "mcp__fake__boom",
        }
        echo, add = tools["mcp__fake__echo"], tools["mcp__fake__add"]
        assert echo.kind == "read" and add.kind == "other"  # readOnlyHint → read
        assert echo.title({}) == "Echo text (fake)"
        assert add.parameters["required"] == ["a", "b"]
        assert add.schema()["function"]["name"] == "mcp__fake__add"
        result = await add.run({"a": 2, "b": 3}, ctx)
        assert result.model_text == "5" and result.content == (TextOutput("5"),)
        assert not result.is_error
        failed = await tools["mcp__fake__boom"].run({}, ctx)
        assert failed.is_error and "boom on purpose" in failed.model_text


async def test_a_failing_server_is_reported_and_the_others_work(ctx: ToolContext) -> None:
    servers = [
        fake("broken", "--fail"),
        StdioServer("missing", "/nonexistent/mcp-server"),
        HttpServer("nohttp", f"http://127.0.0.1:{free_port()}/mcp"),
        fake("good"),
    ]
    hub = McpHub(servers, McpLimits(startup_timeout=20))
    try:
        failures = await hub.start()
        assert {f.server for f in failures} == {"broken", "missing", "nohttp"}
        missing = next(f for f in failures if f.server == "missing")
        assert "/nonexistent/mcp-server" in missing.error
        assert isinstance(missing.notice(), Notice) and "'missing'" in missing.notice().text
        assert {t.name for t in hub.tools} == {
            "mcp__good__echo",
            "mcp__good__add",
            "mcp__good__whoami",
            "mcp__good__boom",
        }
        echo = next(t for t in hub.tools if t.name == "mcp__good__echo")
        assert (await echo.run({"text": "still here"}, ctx)).model_text == "still here"
    finally:
        await hub.aclose()


async def test_closing_stops_the_server_process(tmp_path: Path, ctx: ToolContext) -> None:
    pid_file = tmp_path / "pid"
    hub = McpHub([fake("fake", "--pid-file", str(pid_file))])
    await hub.start()
    pid = int(pid_file.read_text())
    os.kill(pid, 0)  # running
    tool = hub.tools[0]
    await hub.aclose()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert hub.tools == []
    with pytest.raises(ToolError, match="not connected"):
        await tool.run({"text": "x"}, ctx)


async def test_startup_timeout(ctx: ToolContext) -> None:
    silent = StdioServer("silent", sys.executable, ("-c", "import time; time.sleep(60)"))
    hub = McpHub([silent, fake()], McpLimits(startup_timeout=3))
    try:
        failures = await hub.start()
        assert [f.server for f in failures] == ["silent"]
        assert "startup_timeout=3" in failures[0].error
        assert len(hub.tools) == 4
    finally:
        await hub.aclose()


async def test_server_env_is_minimal(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    server = StdioServer("envy", sys.executable, (FAKE,), env=(("GREETING", "hi"),))
    async with McpHub([server]) as hub:
        whoami = next(t for t in hub.tools if t.name.endswith("whoami"))
        assert "GREETING=hi" in (await whoami.run({"var": "GREETING"}, ctx)).model_text
        leak = await whoami.run({"var": "OPENAI_API_KEY"}, ctx)
        assert "OPENAI_API_KEY=<unset>" in leak.model_text


def test_no_server_no_process() -> None:
    hub = McpHub([])
    assert hub.tools == [] and hub.failures == []


@pytest.mark.parametrize(
    ("server", "tool", "expected"),
    [
        ("fake", "echo", "mcp__fake__echo"),
        ("my server", "do.it!", "mcp__my_server__do_it_"),
        ("s", "x" * 100, None),
    ],
)
def test_tool_names(server: str, tool: str, expected: str | None) -> None:
    name = tool_name(server, tool)
    assert len(name) <= 64 and all(c.isalnum() or c in "_-" for c in name)
    if expected is not None:
        assert name == expected
    else:
        assert name != tool_name(server, "x" * 101)
