"""Seed C.6 (session/cancel) and C.5's cancellation rule: cancel always works, fast.

Latencies are printed (pytest -s) and bounded loosely; the 100 ms figure is measured
in bench/agent.py, not asserted here.
"""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from tests.e2e.agent_process import NO_REPLY, AgentProcess, running, scripted_env

pytestmark = pytest.mark.timeout(90)
SLOW = {"text": {"repeat": "x", "count": 2000}, "delay": 0.02}
LOOSE = 2.0  # seconds: far above the ~100 ms target, below any hang


@pytest.fixture
def ws(tmp_path):
    path = tmp_path / "ws"
    path.mkdir()
    return path


async def _cancel_and_time(agent, sid, prompt_task):
    start = time.perf_counter()
    await agent.notify("session/cancel", {"sessionId": sid})
    reply = await prompt_task
    return reply, time.perf_counter() - start


async def test_c6_cancel_during_llm_stream(tmp_path, ws):
    env = scripted_env(tmp_path, [SLOW])
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        task = asyncio.create_task(agent.prompt(sid, "go"))
        await agent.wait_for(lambda m: m.get("method") == "session/update")
        reply, took = await _cancel_and_time(agent, sid, task)
    print(f"cancel during stream answered in {took * 1000:.1f} ms")
    assert reply["result"]["stopReason"] == "cancelled"
    assert took < LOOSE
    index = agent.received.index(reply)
    assert not any(m.get("method") == "session/update" for m in agent.received[index + 1 :])


async def test_c6_cancel_with_an_id_is_answered_empty(tmp_path, ws):
    env = scripted_env(tmp_path, [SLOW])
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        task = asyncio.create_task(agent.prompt(sid, "go"))
        await agent.wait_for(lambda m: m.get("method") == "session/update")
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


async def test_c5_c6_cancel_resolves_a_permission_request_the_client_never_answers(tmp_path, ws):
    env = scripted_env(tmp_path, _shell_script("touch never.txt"))

    async def silent(message):
        return NO_REPLY

    async with running(env) as agent:
        agent.handlers["session/request_permission"] = silent
        sid = await agent.new_session(ws)
        task = asyncio.create_task(agent.prompt(sid, "go"))
        asked = await agent.wait_request("session/request_permission")
        reply, took = await _cancel_and_time(agent, sid, task)
        withdrawn = await agent.wait_for(lambda m: m.get("method") == "$/cancel_request")
    print(f"cancel with a pending permission answered in {took * 1000:.1f} ms")
    assert reply["result"]["stopReason"] == "cancelled"
    assert took < LOOSE
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
        for _ in range(200):
            if pid_file.exists() and len(pid_file.read_text().split()) == 2:
                break
            await asyncio.sleep(0.02)
        pids = [int(p) for p in pid_file.read_text().split()]
        reply, took = await _cancel_and_time(agent, sid, task)
        await asyncio.sleep(0.2)
        alive = [p for p in pids if _alive(p)]
    print(f"cancel with a running shell answered in {took * 1000:.1f} ms")
    assert reply["result"]["stopReason"] == "cancelled"
    assert took < LOOSE
    assert alive == []


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
        reply, took = await _cancel_and_time(agent, sid, task)
        withdrawn = await agent.wait_for(lambda m: m.get("method") == "$/cancel_request")
    assert asked["params"] == {"sessionId": sid, "question": "Which one?"}
    assert reply["result"]["stopReason"] == "cancelled"
    assert withdrawn["params"]["requestId"] == asked["id"]
    assert took < LOOSE


async def test_c6_cancel_request_for_the_prompt_itself(tmp_path, ws):
    env = scripted_env(tmp_path, [SLOW, {"text": "after"}])
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        task = asyncio.create_task(agent.prompt(sid, "go"))
        await agent.wait_for(lambda m: m.get("method") == "session/update")
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
        start = time.perf_counter()
        listed = await agent.request("session/list", {})
        list_took = time.perf_counter() - start
        new_sid = await agent.new_session(ws)
        reply, cancel_took = await _cancel_and_time(agent, sids[50], tasks[50])
        print(
            f"100 blocked sessions: session/list {list_took * 1000:.1f} ms, "
            f"cancel {cancel_took * 1000:.1f} ms"
        )
        assert "result" in listed and new_sid
        assert reply["result"]["stopReason"] == "cancelled"
        assert cancel_took < LOOSE and list_took < LOOSE
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
    await agent.wait_for(lambda m: m.get("method") == "session/update")
    start = time.perf_counter()
    code = await agent.close()
    took = time.perf_counter() - start
    print(f"exit after EOF mid-turn in {took * 1000:.1f} ms")
    assert code == 0 and took < LOOSE
    task.cancel()
    async with running(env) as again:
        await again.call("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
        kinds = [u["sessionUpdate"] for u in again.updates(sid)]
    assert kinds[0] == "user_message_chunk"  # the cut turn was kept, as far as it went
