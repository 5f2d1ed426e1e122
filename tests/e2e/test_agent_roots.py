"""Pinned roots over ACP: a workspace swapped for a symlink after the session opened.

A real `agentao --acp` over real pipes and the real bubblewrap sandbox; the scripted
provider plays the model and the test's client approves every permission request. The
session opens in D; then D is renamed away and a symlink to O (standing for `/`) takes
its place, as a command in another session could do. Before pinning, the next decision
resolved D to O: the write landed in O and bwrap bound O writable.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from agentao.agent.sandbox import Sandbox
from tests.e2e.agent_process import running, scripted_env
from tests.e2e.test_agent_sandbox import approve, permission_titles, shell, tool_output, write

pytestmark = pytest.mark.timeout(60)
REPLACED = "was replaced since the session opened; refusing"
SCRIPT: list[dict[str, Any]] = [
    {"tool_calls": [shell("touch marker", "s1"), write("written.txt", "x", "w1")]},
    {"text": "done"},
]


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    base = Path(os.path.realpath(tmp_path))
    (base / "ws").mkdir()
    (base / "outside").mkdir()
    return base / "ws", base / "outside"


async def test_a_swapped_workspace_is_refused_not_followed(
    tmp_path: Path, dirs: tuple[Path, Path], sandbox: Sandbox
) -> None:
    ws, outside = dirs
    async with running(scripted_env(tmp_path, SCRIPT)) as agent:
        agent.handlers["session/request_permission"] = approve
        sid = await agent.new_session(ws)
        ws.rename(ws.parent / "ws-moved")
        ws.symlink_to(outside)
        reply = await agent.prompt(sid, "go")
    assert reply["result"]["stopReason"] == "end_turn"
    assert list(outside.iterdir()) == []  # nothing written through the link
    for call_id in ("s1", "w1"):
        assert f"the workspace directory {ws} {REPLACED}" in tool_output(agent, sid, call_id)
    assert permission_titles(agent) == []  # refused before anyone is asked


async def test_the_same_turn_writes_in_the_workspace_without_the_swap(
    tmp_path: Path, dirs: tuple[Path, Path], sandbox: Sandbox
) -> None:
    ws, outside = dirs
    async with running(scripted_env(tmp_path, SCRIPT)) as agent:
        agent.handlers["session/request_permission"] = approve
        sid = await agent.new_session(ws)
        reply = await agent.prompt(sid, "go")
    assert reply["result"]["stopReason"] == "end_turn"
    assert (ws / "marker").exists() and (ws / "written.txt").read_text() == "x"
    assert list(outside.iterdir()) == []
    assert permission_titles(agent) == ["Run `touch marker`"]  # the command was approved


async def test_a_load_after_the_swap_is_refused(
    tmp_path: Path, dirs: tuple[Path, Path], sandbox: Sandbox
) -> None:
    """A stored session's cwd must resolve where it did when the session was created:
    loaded after the swap (another agent process, the same store) it is -32602 naming
    the directory; loaded without the swap it opens (the control)."""
    ws, outside = dirs
    env = scripted_env(tmp_path, [{"text": "x"}, *SCRIPT])
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        await agent.prompt(sid, "x")
    load = {"sessionId": sid, "cwd": str(ws), "mcpServers": []}
    async with running(env) as agent:
        assert "result" in await agent.request("session/load", load)  # the control
    ws.rename(ws.parent / "ws-moved")
    ws.symlink_to(outside)
    async with running(env) as agent:
        agent.handlers["session/request_permission"] = approve
        refused = await agent.request("session/load", load)
        assert refused["error"]["code"] == -32602
        assert f"the workspace directory {ws} {REPLACED}" in refused["error"]["message"]
        after = await agent.prompt(sid, "go")
        assert after["error"]["code"] == -32002  # the session did not open
    assert list(outside.iterdir()) == []
