"""Everything our agent sends in a rich session follows the *stable* ACP schema, with no
field outside it at the root of any message (custom data goes under `_meta`).

One agent over real pipes, played by the scripted provider, with a client that
offers fs, terminals and notices (so the agent's own requests are on the wire too):
session/new with a broken MCP server (a notice), modes and models, a turn that
thinks, reads, writes, edits, runs a command after asking permission, plans and
asks the user, reports usage; the error replies; list, close, resume, load (a
replay), delete. Then every recorded message is checked (tests/schema_check.py, v1).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.agent_process import running, scripted_env
from tests.e2e.test_agent_client_io import CAPS, FakeEditor
from tests.schema_check import check_all

pytestmark = pytest.mark.timeout(90)
MCP_SERVER = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py")


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


SCRIPT = [
    {
        "thought": "Look first.",
        "text": "On it.",
        "tool_calls": [
            call("read_file", file_path="notes.txt"),
            call("list_directory", path="."),
            call("glob", pattern="*.txt"),
            call("write_file", file_path="new.txt", content="fresh\n"),
        ],
    },
    {
        "tool_calls": [
            call("replace", file_path="notes.txt", old_string="buffer", new_string="edited"),
            call("run_shell_command", command="touch made.txt && echo shell-ok"),
            call("todo_write", todos=[{"content": "check", "status": "completed"}]),
            call("ask_user", question="Tabs or spaces?"),
        ]
    },
    {"text": "Done.", "usage": {"input_tokens": 7, "output_tokens": 3}},
]


async def test_every_message_the_agent_sends_follows_the_stable_schema(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("on disk\n")
    broken = {
        "name": "broken",
        "command": sys.executable,
        "args": [MCP_SERVER, "--fail"],
        "env": [],
    }
    caps = {**CAPS, "session": {"notices": {}}}
    env = scripted_env(tmp_path, SCRIPT)

    async def allow(message: dict[str, Any]) -> dict[str, Any]:
        return {"outcome": {"outcome": "selected", "optionId": "allow"}}

    async def answer(message: dict[str, Any]) -> dict[str, Any]:
        return {"answer": "spaces"}

    async with running(env, capabilities=caps) as agent:
        FakeEditor(agent, {str(ws / "notes.txt"): "unsaved buffer\n"})
        agent.handlers["session/request_permission"] = allow
        agent.handlers["_agentao.cn/ask_user"] = answer
        new = await agent.call("session/new", {"cwd": str(ws), "mcpServers": [broken]})
        sid = new["sessionId"]
        await agent.wait_for(
            lambda m: m.get("params", {}).get("update", {}).get("sessionUpdate") == "notice"
        )
        await agent.call("session/set_mode", {"sessionId": sid, "modeId": "code"})
        current = new["configOptions"][0]["currentValue"]
        await agent.call(
            "session/set_config_option", {"sessionId": sid, "configId": "model", "value": current}
        )
        await agent.call("_agentao.cn/set_model", {"sessionId": sid, "model": "other-model"})
        reply = await agent.prompt(sid, "do it all")
        assert reply["result"]["stopReason"] == "end_turn"
        assert await agent.call("session/cancel", {"sessionId": sid}) == {}
        errors = [
            await agent.request(
                "session/prompt", {"sessionId": "nope", "prompt": [{"type": "text", "text": "x"}]}
            ),
            await agent.request("session/prompt", {"sessionId": 5, "prompt": []}),
            await agent.request("no/such_method", {}),
        ]
        assert [e["error"]["code"] for e in errors] == [-32002, -32602, -32601]
        await agent.call("session/list", {})
        await agent.call("session/close", {"sessionId": sid})
        await agent.call("session/resume", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
        await agent.call("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
        await agent.call("session/delete", {"sessionId": sid})
        await agent.call("session/delete", {"sessionId": sid})

    kinds = {u["sessionUpdate"] for u in agent.updates(sid)}
    assert {"notice", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"} <= kinds
    assert {"current_mode_update", "config_option_update", "user_message_chunk"} <= kinds
    methods = {m["method"] for m in agent.agent_requests}
    assert {"fs/read_text_file", "fs/write_text_file", "terminal/create"} <= methods
    assert {"session/request_permission", "_agentao.cn/ask_user"} <= methods
    assert check_all(agent.received, agent.sent, version=1) == []
