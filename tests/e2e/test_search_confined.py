"""The search tools read through the same confined path as read_file (issue 20).

The attack: a client whose permission policy approves reads and searches (the gateway
answers so for a `reads` key) but whose `fs/read_text_file` confines reads to the
session's directories (the client library's `LocalFiles`, which the gateway runs).
read_file of a file outside the workspace is refused by the client; a search of the
same file must be refused too, not read off the disk beside the client. Real agent
process, real pipes, scripted model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentao.client import AgentCommand, Client, ClientPolicy

pytestmark = pytest.mark.timeout(60)
SECRET = "sk-admin-0123456789"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace with a match of its own, and an outside 'gateway config' with a key."""
    ws, outside = tmp_path / "ws", tmp_path / "etc-gateway"
    ws.mkdir()
    outside.mkdir()
    (ws / "notes.txt").write_text("api_key = placeholder-inside\n")
    (outside / "gateway.toml").write_text(f'[keys.admin]\napi_key = "{SECRET}"\n')
    return ws, outside


def ours(tmp_path: Path, calls: list[dict]) -> AgentCommand:
    script = tmp_path / "script.json"
    turns = [{"tool_calls": [call]} for call in calls] + [{"text": "done"}]
    script.write_text(json.dumps({"responses": turns}))
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {"LLM_PROVIDER": "SCRIPTED", "AGENTAO_SCRIPT": str(script), "AGENTAO_HOME": str(home)}
    return AgentCommand.ours(env=env)


async def tool_outputs(tmp_path: Path, ws: Path, calls: list[dict]) -> list[str]:
    """Each tool call's result text, as the client saw it (reads approved, fs/* confined)."""
    # v1: the gateway's pool speaks v1 and serves fs/* confined (a v2 agent calls no fs/*)
    policy = ClientPolicy(approve="reads")
    async with Client(ours(tmp_path, calls), policy=policy, protocol=1) as client:
        session = await client.new_session(str(ws))
        await session.prompt("go").run()
    return [json.dumps(call.raw) for call in session.tool_calls.values()]


def search(pattern: str, path: str) -> dict:
    return {"name": "search_file_content", "arguments": {"pattern": pattern, "path": path}}


async def test_a_search_outside_the_workspace_does_not_read_past_the_client(tmp_path, layout):
    ws, outside = layout
    calls = [
        {"name": "read_file", "arguments": {"file_path": str(outside / "gateway.toml")}},
        search("api_key", str(outside)),
        search("api_key", str(outside / "gateway.toml")),
    ]
    read, by_dir, by_file = await tool_outputs(tmp_path, ws, calls)
    assert "outside the session" in read  # the client confines read_file
    for result in (by_dir, by_file):
        assert SECRET not in result
        assert "could not be read" in result


async def test_a_symlink_out_of_the_workspace_is_not_searched(tmp_path, layout):
    ws, outside = layout
    (ws / "link").symlink_to(outside)
    (ws / "file-link.toml").symlink_to(outside / "gateway.toml")
    (result,) = await tool_outputs(tmp_path, ws, [search("api_key", ".")])
    assert SECRET not in result
    assert "notes.txt:1: api_key = placeholder-inside" in result


async def test_control_the_same_search_inside_the_workspace_finds_its_match(tmp_path, layout):
    ws, _ = layout
    by_dir, by_file = await tool_outputs(
        tmp_path, ws, [search("api_key", str(ws)), search("api_key", "notes.txt")]
    )
    assert "notes.txt:1: api_key = placeholder-inside" in by_dir
    assert ":1: api_key = placeholder-inside" in by_file
