"""agentao.client following an agent's children (client/children.py): our agent's `task`
tool over real pipes (scripted provider), v1 and v2, with `Client(subagents=True)` and
without (then a child's words never reach the parent's reader). The child's updates and
its answered question reach the reader of the parent's turn, with the child's session
id; the parent's view holds the child's title and state; `agentao run` shows a child's
steps indented under its tool call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from agentao.client import AgentCommand, Client, PermissionDecision, Update
from agentao.client.view import ChildEntry

pytestmark = pytest.mark.timeout(60)

FETCH = {"name": "web_fetch", "arguments": {"url": "http://127.0.0.1:9/"}}  # always asks
TASK = {"description": "fetcher", "prompt": "alpha: go"}
SCRIPT = [
    {"tool_calls": [{"name": "task", "arguments": TASK}]},
    {"match": "alpha", "tool_calls": [FETCH]},
    {"match": "alpha", "text": "could not fetch"},
    {"text": "parent done"},
]


@pytest.fixture
def agent(tmp_path) -> AgentCommand:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": SCRIPT}))
    home = tmp_path / "home"
    env = {"LLM_PROVIDER": "SCRIPTED", "AGENTAO_SCRIPT": str(script), "AGENTAO_HOME": str(home)}
    return AgentCommand.ours(env=env)


@pytest.fixture
def workspace(tmp_path) -> str:
    ws = tmp_path / "ws"
    ws.mkdir()
    return str(ws)


def text_of(events: list[Any], session_id: str) -> str:
    return "".join(
        e.text or ""
        for e in events
        if isinstance(e, Update) and e.session_id == session_id and e.kind == "agent_message_chunk"
    )


@pytest.mark.parametrize("protocol", [1, 2])
async def test_a_childs_updates_and_question_reach_the_parents_reader(agent, workspace, protocol):
    # the default policy rejects every question: the child is told
    async with Client(agent, protocol=protocol, subagents=True) as client:
        session = await client.new_session(workspace)
        events = [e async for e in session.prompt("delegate it")]
    [child] = [e for e in session.view.entries if isinstance(e, ChildEntry)]
    assert (child.title, child.state, child.stop_reason) == ("fetcher", "idle", "end_turn")
    assert text_of(events, child.session_id) == "could not fetch"
    assert text_of(events, session.id).strip() == "parent done"  # never the child's words
    assert session.view.text.strip() == "parent done"
    [decision] = [e for e in events if isinstance(e, PermissionDecision)]
    assert decision.request.session_id == child.session_id
    assert decision.request.kind == "fetch" and not decision.approved
    child_tools = [
        e
        for e in events
        if isinstance(e, Update) and e.session_id == child.session_id and e.tool_call
    ]
    assert child_tools and child_tools[-1].tool_call.status == "failed"


@pytest.mark.parametrize("protocol", [1, 2])
async def test_without_the_opt_in_a_reader_sees_the_parents_tool_call_alone(
    agent, workspace, protocol
):
    async with Client(agent, protocol=protocol) as client:
        session = await client.new_session(workspace)
        events = [e async for e in session.prompt("delegate it")]
    assert {e.session_id for e in events if isinstance(e, Update)} == {session.id}
    assert session.view.text.strip() == "parent done"  # never the child's words
    task = next(t for t in session.tool_calls.values() if t.title.startswith("Subagent"))
    assert task.status == "completed"
    if protocol == 1:  # v1 without the opt-in: no child session; its question, named
        assert not [e for e in session.view.entries if isinstance(e, ChildEntry)]
        [decision] = [e for e in events if isinstance(e, PermissionDecision)]
        assert decision.request.title.startswith("Subagent fetcher: ")


def test_agentao_run_shows_a_childs_steps_indented_under_its_tool_call(tmp_path, workspace):
    script = tmp_path / "run-script.json"
    task = {"description": "survey", "prompt": "alpha: look"}
    listing = {"name": "list_directory", "arguments": {"path": "."}}
    responses = [
        {"tool_calls": [{"name": "task", "arguments": task}]},
        {"match": "alpha", "tool_calls": [listing]},
        {"match": "alpha", "text": "nothing there"},
        {"text": "parent done"},
    ]
    script.write_text(json.dumps({"responses": responses}))
    env = {
        **os.environ,
        "LLM_PROVIDER": "SCRIPTED",
        "AGENTAO_SCRIPT": str(script),
        "AGENTAO_HOME": str(tmp_path / "home"),
    }
    result = subprocess.run(
        [sys.executable, "-m", "agentao", "run", "--cwd", workspace, "delegate it"],
        capture_output=True,
        text=True,
        timeout=50,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    start = lines.index("  ↳ subagent survey")
    step = next(i for i, line in enumerate(lines) if line.startswith("  │ ✓ List"))
    end = lines.index("  ↳ survey end_turn")
    assert start < step < end, result.stdout
    assert "parent done" in result.stdout
    assert not any(line.startswith("nothing there") for line in lines)  # never as the parent's


def _codex_script(fake: Any) -> None:
    """codex (through codex-acp) spawns one child with its `spawn_agent` tool and waits for
    it (`wait_agent`); the child answers; the parent ends. Routed by what each request
    ends with."""
    from tests.fakes.fake_llm import FakeReply, FakeToolCall

    spawn = FakeToolCall(
        "spawn_agent", {"message": "CHILD-TASK: say hi"}, namespace="multi_agent_v1"
    )

    def respond(body: dict[str, Any]) -> Any:
        if not body.get("tools"):  # a side request (the session's title)
            return FakeReply(text=["a title"])
        everything, last = json.dumps(body["input"]), json.dumps(body["input"][-1])
        if "CHILD-TASK" in everything and "delegate it" not in everything:
            return FakeReply(text=["child says hi"])
        if body["input"][-1].get("type") == "message" and "delegate it" in last:
            return FakeReply(tool_calls=[spawn])
        if "agent_id" in last:  # spawned: wait for the child, so it ends within the turn
            agent_id = json.loads(json.loads(last)["output"])["agent_id"]
            wait = FakeToolCall("wait_agent", {"targets": [agent_id]}, namespace="multi_agent_v1")
            return FakeReply(tool_calls=[wait])
        return FakeReply(text=["parent done"])

    fake.respond = respond


async def test_codex_acps_children_reach_our_reader_nested(tmp_path, workspace, v2_peers, fake_llm):
    """Interop: codex-acp 2.6.0 over v1 with `clientCapabilities.subagents` (its codex with
    the multi_agent feature on, against the fake LLM)."""
    from tests.npm_peers import codex_env

    env = codex_env(tmp_path / "codex-home", fake_llm)
    config = tmp_path / "codex-home" / "config.toml"
    config.write_text(config.read_text() + "\n[features]\nmulti_agent = true\n")
    _codex_script(fake_llm)
    codex = AgentCommand([str(v2_peers.codex_acp)], env=env)
    async with Client(codex, protocol=1, subagents=True) as client:
        session = await client.new_session(workspace)
        events = [e async for e in session.prompt("delegate it")]
    [child] = [e for e in session.view.entries if isinstance(e, ChildEntry)]
    assert child.description == "CHILD-TASK: say hi" and child.state == "idle"
    assert text_of(events, child.session_id).endswith("child says hi")  # after a warning, or not
    assert "child says hi" not in session.view.text  # the child's words stay the child's


def test_agentao_run_nests_a_grandchild_under_its_parent_child(tmp_path, workspace):
    """AGENTAO_SUBAGENT_DEPTH=2: the child's child is drawn a step further in, between
    the child's start and end."""
    script = tmp_path / "nest-script.json"
    outer = {"description": "outer", "prompt": "alpha: delegate"}
    inner = {"description": "inner", "prompt": "beta: look"}
    responses = [
        {"tool_calls": [{"name": "task", "arguments": outer}]},
        {"match": "alpha", "tool_calls": [{"name": "task", "arguments": inner}]},
        {"match": "beta", "text": "grandchild words"},
        {"match": "alpha", "text": "child words"},
        {"text": "parent done"},
    ]
    script.write_text(json.dumps({"responses": responses}))
    env = {
        **os.environ,
        "LLM_PROVIDER": "SCRIPTED",
        "AGENTAO_SCRIPT": str(script),
        "AGENTAO_HOME": str(tmp_path / "home"),
        "AGENTAO_SUBAGENT_DEPTH": "2",
    }
    result = subprocess.run(
        [sys.executable, "-m", "agentao", "run", "--cwd", workspace, "nest it"],
        capture_output=True,
        text=True,
        timeout=50,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    order = [
        lines.index("  ↳ subagent outer"),
        next(i for i, line in enumerate(lines) if line.startswith("  │ ✓ Subagent: inner")),
        lines.index("    ↳ subagent inner"),
        lines.index("    ↳ inner end_turn"),
        lines.index("  ↳ outer end_turn"),
    ]
    assert order[0] < order[2] < order[3] < order[4] and order[1] < order[4], result.stdout


async def test_a_grandchild_is_a_child_of_the_childs_view(tmp_path, workspace):
    """AGENTAO_SUBAGENT_DEPTH=2 through the library: the parent's view holds the child,
    the child's view (`Client.child_view`) its own child, whose view holds its words."""
    script = tmp_path / "nest-script.json"
    outer = {"description": "outer", "prompt": "alpha: delegate"}
    inner = {"description": "inner", "prompt": "beta: look"}
    responses = [
        {"tool_calls": [{"name": "task", "arguments": outer}]},
        {"match": "alpha", "tool_calls": [{"name": "task", "arguments": inner}]},
        {"match": "beta", "text": "grandchild words"},
        {"match": "alpha", "text": "child words"},
        {"text": "parent done"},
    ]
    script.write_text(json.dumps({"responses": responses}))
    env = {
        "LLM_PROVIDER": "SCRIPTED",
        "AGENTAO_SCRIPT": str(script),
        "AGENTAO_HOME": str(tmp_path / "home"),
        "AGENTAO_SUBAGENT_DEPTH": "2",
    }
    async with Client(AgentCommand.ours(env=env), subagents=True) as client:
        session = await client.new_session(workspace)
        [_ async for _ in session.prompt("nest it")]
        [child] = [e for e in session.view.entries if isinstance(e, ChildEntry)]
        child_view = client.child_view(child.session_id)
        assert child_view is not None and child_view.text.strip() == "child words"
        [grandchild] = [e for e in child_view.entries if isinstance(e, ChildEntry)]
        assert (grandchild.title, grandchild.state) == ("inner", "idle")
        inner_view = client.child_view(grandchild.session_id)
        assert inner_view is not None and inner_view.text.strip() == "grandchild words"
        assert client.root_of(grandchild.session_id) == session.id
        assert client.child_view(session.id) is None  # a session of its own is no child
