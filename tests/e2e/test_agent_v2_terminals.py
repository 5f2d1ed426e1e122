"""A shell command of our agent shown as a v2 agent-owned terminal (server/v2_updates.py,
agent/tools/shell.py): `terminal_update` (command, cwd, cancel), the terminal in the tool
call's content, the output live as `terminal_output_chunk`s before the command ends (a FIFO
holds it: no sleeps), the exit status at the end; `terminal/cancel` kills the command alone
and the turn goes on. A v1 client sees none of it. Every message both ways is checked
against its version's schema (tests/schema_check.py)."""

from __future__ import annotations

import asyncio
import base64
import os
from typing import Any

import pytest

from tests.e2e.agent_process import AgentProcess, running
from tests.e2e.test_agent_v2_session import (
    _read_to_eof,
    _text,
    choose,
    env,  # noqa: F401 (a fixture)
    idle,
    v2_initialize,
)
from tests.fakes.fake_llm import FakeToolCall
from tests.schema_check import check_all

pytestmark = pytest.mark.timeout(60)
GATED = 'echo live-output; read line < gate.fifo; echo "after $line"'
ONCE = "printf 'printed-%s\\n' once"
HOLD = "exec 3>held.fifo; echo started >&3; sleep 60"  # holds the FIFO open while it runs


def _terminal_updates(agent: AgentProcess, sid: str) -> list[dict[str, Any]]:
    return [u for u in agent.updates(sid, every=True) if u["sessionUpdate"] == "terminal_update"]


def _output(agent: AgentProcess, sid: str) -> bytes:
    chunks = agent.updates(sid, every=True)
    return b"".join(
        base64.b64decode(u["data"]) for u in chunks if u["sessionUpdate"] == "terminal_output_chunk"
    )


async def _start(agent: AgentProcess, ws, command: str) -> str:
    agent.handlers["session/request_permission"] = choose("allow")
    await v2_initialize(agent)
    sid = (await agent.call("session/new", {"cwd": str(ws)}))["sessionId"]
    await agent.call("session/prompt", {"sessionId": sid, "prompt": [_text("run")]})
    return sid


async def test_the_output_streams_live_into_a_terminal_before_the_command_ends(
    env,  # noqa: F811
    ws,
    fake_llm,
    sandbox,
):
    os.mkfifo(ws / "gate.fifo")
    fake_llm.reply(tool_calls=[FakeToolCall("run_shell_command", {"command": GATED}, id="s1")])
    fake_llm.reply(text=["done"])
    async with running(env, init=False) as agent:
        sid = await _start(agent, ws, GATED)
        await agent.wait_for(lambda _: b"live-output" in _output(agent, sid))
        before_end = [u.get("exitStatus") for u in _terminal_updates(agent, sid)]
        calls = [u for u in agent.updates(sid) if u.get("toolCallId") == "s1"]
        gate = await asyncio.to_thread(os.open, ws / "gate.fifo", os.O_WRONLY)
        os.write(gate, b"go\n")
        os.close(gate)
        end = await idle(agent, sid)
    assert before_end == [None]  # live: seen while the command waited on the FIFO
    started, *_, exited = _terminal_updates(agent, sid)
    tid = started["terminalId"]
    assert started["command"] == GATED and started["cwd"] == str(ws)
    assert started["capabilities"] == {"cancel": {}}
    content = {"type": "terminal", "terminalId": tid}
    assert any(c.get("content") == [content] for c in calls)  # in the call while it runs
    assert exited == {
        "sessionUpdate": "terminal_update",
        "terminalId": tid,
        "exitStatus": {"exitCode": 0},
        "capabilities": None,
    }
    assert _output(agent, sid) == b"live-output\nafter go\n"
    final = [u for u in agent.updates(sid) if u.get("toolCallId") == "s1"][-1]
    assert final["status"] == "completed" and final["content"][0] == content
    assert end["stopReason"] == "end_turn"
    assert check_all(agent.received, agent.sent, version=2) == []


async def test_terminal_cancel_kills_the_command_alone_and_the_turn_goes_on(
    env,  # noqa: F811
    ws,
    fake_llm,
    sandbox,
):
    fifo = ws / "held.fifo"
    os.mkfifo(fifo)
    fake_llm.reply(tool_calls=[FakeToolCall("run_shell_command", {"command": HOLD}, id="s1")])
    fake_llm.reply(text=["stopped"])
    async with running(env, init=False) as agent:
        sid = await _start(agent, ws, HOLD)
        held = await asyncio.to_thread(os.open, fifo, os.O_RDONLY)
        try:
            started = await asyncio.to_thread(os.read, held, 64)  # the command runs
            tid = (await agent.wait_for(_cancellable))["params"]["update"]["terminalId"]
            unknown = await agent.request("terminal/cancel", {"sessionId": sid, "terminalId": "x"})
            accepted = await agent.call("terminal/cancel", {"sessionId": sid, "terminalId": tid})
            rest = await asyncio.to_thread(_read_to_eof, held)  # EOF: every writer killed
        finally:
            os.close(held)
        end = await idle(agent, sid)
        again = await agent.request("terminal/cancel", {"sessionId": sid, "terminalId": tid})
    assert started == b"started\n" and rest == b"" and accepted == {}
    assert [r["error"]["data"]["reason"] for r in (unknown, again)] == ["unknown", "final"]
    assert [r["error"]["code"] for r in (unknown, again)] == [-32602, -32602]
    exited = _terminal_updates(agent, sid)[-1]
    assert exited["exitStatus"] == {"signal": "SIGTERM"} and exited["capabilities"] is None
    final = [u for u in agent.updates(sid) if u.get("toolCallId") == "s1"][-1]
    assert final["status"] == "failed"  # a command killed by a signal; not the call cancelled
    assert end["stopReason"] == "end_turn"  # the turn went on: the model answered after
    assert "stopped by the user" in str(fake_llm.requests[-1].body["messages"])
    assert check_all(agent.received, agent.sent, version=2) == []


def _cancellable(message: dict[str, Any]) -> bool:
    update = message.get("params", {}).get("update", {})
    return update.get("sessionUpdate") == "terminal_update" and bool(update.get("capabilities"))


async def test_a_v1_client_sees_the_command_as_before(env, ws, fake_llm):  # noqa: F811
    fake_llm.reply(tool_calls=[FakeToolCall("run_shell_command", {"command": "echo hi"}, id="s1")])
    fake_llm.reply(text=["done"])
    async with running(env) as agent:
        agent.handlers["session/request_permission"] = choose("allow")
        sid = await agent.new_session(ws)
        await agent.prompt(sid, "run")
    calls = [u for u in agent.updates(sid, every=True) if u.get("toolCallId") == "s1"]
    kinds = {u["sessionUpdate"] for u in agent.updates(sid, every=True)}
    assert not kinds & {"terminal_update", "terminal_output_chunk", "tool_call_content_chunk"}
    assert calls[-1]["content"] == [
        {"type": "content", "content": {"type": "text", "text": "hi\n"}}
    ]
    assert check_all(agent.received, agent.sent, version=1) == []


async def test_resume_replays_a_commands_final_output_not_a_gone_terminal(
    env,  # noqa: F811
    ws,
    fake_llm,
    sandbox,
):
    """Replay (`session/resume`, `replayFrom: start`, in a second process) shows the
    command's final output as the call's text; no terminal the client never saw named."""
    fake_llm.reply(tool_calls=[FakeToolCall("run_shell_command", {"command": ONCE}, id="s1")])
    fake_llm.reply(text=["done"])
    async with running(env, init=False) as agent:
        sid = await _start(agent, ws, ONCE)
        await idle(agent, sid)
    async with running(env, init=False) as agent:
        await v2_initialize(agent)
        params = {"sessionId": sid, "cwd": str(ws), "replayFrom": {"type": "start"}}
        await agent.call("session/resume", params)
        replayed = agent.updates(sid, every=True)
    final = [u for u in replayed if u.get("toolCallId") == "s1"][-1]
    assert final["status"] == "completed"
    assert "printed-once" in str(final["content"]), final
    assert not any(c.get("type") == "terminal" for c in final["content"]), final
    assert not any(u["sessionUpdate"].startswith("terminal_") for u in replayed)
    assert check_all(agent.received, agent.sent, version=2) == []
