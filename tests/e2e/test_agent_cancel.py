"""Seed C.6 (session/cancel) and C.5's cancellation rule: cancel always works, at once.

"At once" is asserted as order, never as a wall time: the cancelled answer arrives
while the work it stops would still be running (a 40 s stream cut short, other
sessions still blocked). Latencies are measured in bench/control.py.
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from tests.e2e.agent_process import NO_REPLY, AgentProcess, running, scripted_env, turn_update
from tests.waiting import until

pytestmark = pytest.mark.timeout(90)
CHUNKS = 2000
SLOW = {"text": {"repeat": "x", "count": CHUNKS}, "delay": 0.02}  # 40 s if left alone


async def _cancel(agent, sid, prompt_task):
    await agent.notify("session/cancel", {"sessionId": sid})
    return await prompt_task


def _chunks(agent, sid):
    return sum(u["sessionUpdate"] == "agent_message_chunk" for u in agent.updates(sid))


async def test_c6_cancel_during_llm_stream(tmp_path, ws):
    env = scripted_env(tmp_path, [SLOW])
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        task = asyncio.create_task(agent.prompt(sid, "go"))
        await agent.wait_for(turn_update)
        reply = await _cancel(agent, sid, task)
    assert reply["result"]["stopReason"] == "cancelled"
    assert _chunks(agent, sid) < CHUNKS  # answered while the stream still had chunks to go
    index = agent.received.index(reply)
    assert not any(m.get("method") == "session/update" for m in agent.received[index + 1 :])


async def test_c6_cancel_with_an_id_is_answered_empty(tmp_path, ws):
    env = scripted_env(tmp_path, [SLOW])
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        task = asyncio.create_task(agent.prompt(sid, "go"))
        await agent.wait_for(turn_update)
        assert await agent.call("session/cancel", {"sessionId": sid}) == {}
        assert (await task)["result"]["stopReason"] == "cancelled"
        # Idle: a no-op, still {}.
        assert await agent.call("session/cancel", {"sessionId": sid}) == {}
        unknown = await agent.request("session/cancel", {"sessionId": "nope"})
        assert unknown["error"]["code"] == -32002
        await agent.notify("session/cancel", {"sessionId": "nope"})  # ignored, no reply
        assert "result" in await agent.request("session/list", {})


def _shell_script(command):
    call = {"id": "s1", "name": "run_shell_command", "arguments": {"command": command}}
    return [{"tool_calls": [call]}, {"text": "never"}]


async def test_c6_a_cancel_read_with_its_prompt_leaves_the_session_free(tmp_path, ws):
    """The prompt and its cancel in one write, so the agent reads both at once: the turn
    is cancelled before its first step. The session must go idle again; it stayed
    "cancelling" for good, and the next prompt waited forever (the gateway saw it as a
    conversation busy until it was restarted, after a turn it cancelled at once)."""
    env = scripted_env(tmp_path, [{"text": "Answered."}] * 3)
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
        both = [
            {"jsonrpc": "2.0", "id": "at-once", "method": "session/prompt", "params": prompt},
            {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}},
        ]
        await agent.send(b"".join(json.dumps(m).encode() + b"\n" for m in both))
        reply = await agent.wait_for(lambda m: m.get("id") == "at-once")
        assert reply["result"]["stopReason"] == "cancelled"
        after = await agent.prompt(sid, "and now")
        assert after["result"]["stopReason"] == "end_turn"
        assert any(u["sessionUpdate"] == "agent_message_chunk" for u in agent.updates(sid))


async def test_c5_c6_cancel_resolves_a_permission_request_the_client_never_answers(tmp_path, ws):
    env = scripted_env(tmp_path, _shell_script("touch never.txt"))

    async def silent(message):
        return NO_REPLY

    async with running(env) as agent:
        agent.handlers["session/request_permission"] = silent
        sid = await agent.new_session(ws)
        task = asyncio.create_task(agent.prompt(sid, "go"))
        asked = await agent.wait_request("session/request_permission")
        reply = await _cancel(agent, sid, task)  # the permission request is never answered
        withdrawn = await agent.wait_for(lambda m: m.get("method") == "$/cancel_request")
    assert reply["result"]["stopReason"] == "cancelled"
    assert withdrawn["params"]["requestId"] == asked["id"]
    final = [u for u in agent.updates(sid) if u["sessionUpdate"] == "tool_call_update"][-1]
    assert final["toolCallId"] == "s1" and final["status"] == "failed"
    assert not (ws / "never.txt").exists()


async def test_c6_cancel_kills_a_running_shell_command_and_its_children(tmp_path, ws):
    pid_file = ws / "pids"
    command = f"sleep 60 & echo $! > {pid_file}; echo $$ >> {pid_file}; wait"
    env = scripted_env(tmp_path, _shell_script(command))
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        await agent.call("session/set_mode", {"sessionId": sid, "modeId": "full-access"})
        task = asyncio.create_task(agent.prompt(sid, "go"))
        pids = await until(lambda: _pids(pid_file), "the shell and its child to run")
        assert all(_alive(p) for p in pids)
        reply = await _cancel(agent, sid, task)  # `sleep 60` would still be running
        assert reply["result"]["stopReason"] == "cancelled"
        await until(lambda: not any(_alive(p) for p in pids), "the shell and its child to die")


def _pids(pid_file) -> list[int] | None:
    """Both pids, once the shell has written the second (None before)."""
    pids = pid_file.read_text().split() if pid_file.exists() else []
    return [int(p) for p in pids] if len(pids) == 2 else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purpose
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


async def test_c6_cancel_resolves_a_pending_ask_user(tmp_path, ws):
    call = {"id": "q1", "name": "ask_user", "arguments": {"question": "Which one?"}}
    env = scripted_env(tmp_path, [{"tool_calls": [call]}, {"text": "never"}])

    async def silent(message):
        return NO_REPLY

    async with running(env) as agent:
        agent.handlers["_agentao.cn/ask_user"] = silent
        sid = await agent.new_session(ws)
        task = asyncio.create_task(agent.prompt(sid, "ask me"))
        asked = await agent.wait_request("_agentao.cn/ask_user")
        reply = await _cancel(agent, sid, task)  # the question is never answered
        withdrawn = await agent.wait_for(lambda m: m.get("method") == "$/cancel_request")
    assert asked["params"] == {"sessionId": sid, "question": "Which one?"}
    assert reply["result"]["stopReason"] == "cancelled"
    assert withdrawn["params"]["requestId"] == asked["id"]


async def test_c6_cancel_request_for_the_prompt_itself(tmp_path, ws):
    env = scripted_env(tmp_path, [SLOW, {"text": "after"}])
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        task = asyncio.create_task(agent.prompt(sid, "go"))
        await agent.wait_for(turn_update)
        prompt_id = max(k for k in agent._futures)
        await agent.notify("$/cancel_request", {"requestId": prompt_id})
        reply = await task
        assert reply["error"]["code"] == -32800
        # The turn was stopped too: the session takes a new prompt.
        again = await agent.prompt(sid, "again")
        assert again["result"]["stopReason"] == "end_turn"


async def test_c6_hundred_sessions_blocked_on_permission_do_not_delay_control(tmp_path, ws):
    calls = [{"name": "run_shell_command", "arguments": {"command": "touch blocked.txt"}}]
    env = scripted_env(tmp_path, [{"tool_calls": calls}] * 100)

    async def silent(message):
        return NO_REPLY

    async with running(env) as agent:
        agent.handlers["session/request_permission"] = silent
        sids = [await agent.new_session(ws) for _ in range(100)]
        tasks = [asyncio.create_task(agent.prompt(sid, "go", timeout=60)) for sid in sids]
        await agent.wait_request("session/request_permission", timeout=60, nth=100)
        listed = await agent.request("session/list", {})
        new_sid = await agent.new_session(ws)
        # Control was answered while all 100 turns still wait for a permission nobody gives.
        assert "result" in listed and new_sid
        assert not any(t.done() for t in tasks)
        reply = await _cancel(agent, sids[50], tasks[50])
        assert reply["result"]["stopReason"] == "cancelled"
        assert [t.done() for t in tasks].count(True) == 1  # the other 99 are still blocked
        for sid in sids:
            await agent.notify("session/cancel", {"sessionId": sid})
        replies = await asyncio.gather(*tasks)
    assert {r["result"]["stopReason"] for r in replies} == {"cancelled"}
    assert not (ws / "blocked.txt").exists()


async def test_eof_during_a_turn_stops_it_and_exits_zero(tmp_path, ws):
    env = scripted_env(tmp_path, [SLOW])
    agent = await AgentProcess.start(env)
    await agent.initialize()
    sid = await agent.new_session(ws)
    task = asyncio.create_task(agent.prompt(sid, "go"))
    await agent.wait_for(turn_update)
    code = await agent.close()  # EOF while the 40 s stream runs
    assert code == 0
    assert _chunks(agent, sid) < CHUNKS  # it exited with the stream cut, not at its end
    task.cancel()
    async with running(env) as again:
        await again.call("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
        kinds = [u["sessionUpdate"] for u in again.updates(sid)]
    assert kinds[0] == "user_message_chunk"  # the cut turn was kept, as far as it went
