"""Seed C.5 (session/request_permission): options, the toolCall shape, each outcome."""

from __future__ import annotations

import pytest

from tests.e2e.agent_process import ClientError, running, scripted_env

pytestmark = pytest.mark.timeout(60)

SHELL = "touch made.txt"


def _script(times: int = 1):
    calls = [
        {"id": f"c{i}", "name": "run_shell_command", "arguments": {"command": SHELL}}
        for i in range(times)
    ]
    return [{"tool_calls": calls}, {"text": "after"}]


def choose(option_id):
    async def handler(message):
        return {"outcome": {"outcome": "selected", "optionId": option_id}}

    return handler


async def test_c5_request_shape_and_allow(tmp_path, ws):
    env = scripted_env(tmp_path, _script())
    async with running(env) as agent:
        agent.handlers["session/request_permission"] = choose("allow")
        sid = await agent.new_session(ws)
        reply = await agent.prompt(sid, "run it")
    assert reply["result"]["stopReason"] == "end_turn"
    [request] = [m for m in agent.agent_requests if m["method"] == "session/request_permission"]
    params = request["params"]
    assert params["sessionId"] == sid
    assert params["options"] == [
        {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
        {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
        {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
    ]
    call = params["toolCall"]
    assert call["toolCallId"] == "c0" and call["kind"] == "execute"
    assert call["status"] == "pending" and SHELL in call["title"]
    assert call["rawInput"] == {"command": SHELL}
    # The tool_call update announced the same call before the question.
    announce = next(u for u in agent.updates(sid) if u["sessionUpdate"] == "tool_call")
    assert announce["toolCallId"] == "c0"
    final = [u for u in agent.updates(sid) if u["sessionUpdate"] == "tool_call_update"][-1]
    assert final["status"] == "completed"
    assert (ws / "made.txt").exists()


async def test_c5_reject_fails_the_call_and_runs_nothing(tmp_path, ws):
    env = scripted_env(tmp_path, _script())
    async with running(env) as agent:
        agent.handlers["session/request_permission"] = choose("reject")
        sid = await agent.new_session(ws)
        reply = await agent.prompt(sid, "run it")
    assert reply["result"]["stopReason"] == "end_turn"
    final = [u for u in agent.updates(sid) if u["sessionUpdate"] == "tool_call_update"][-1]
    assert final["status"] == "failed"
    assert "rejected" in final["content"][0]["content"]["text"]
    assert not (ws / "made.txt").exists()


async def test_c5_allow_always_is_remembered_for_this_command(tmp_path, ws):
    env = scripted_env(tmp_path, _script(times=2))
    async with running(env) as agent:
        agent.handlers["session/request_permission"] = choose("allow_always")
        sid = await agent.new_session(ws)
        await agent.prompt(sid, "run it twice")
    asked = [m for m in agent.agent_requests if m["method"] == "session/request_permission"]
    assert len(asked) == 1
    finals = [
        u
        for u in agent.updates(sid)
        if u["sessionUpdate"] == "tool_call_update" and u.get("status")
    ]
    assert [u["status"] for u in finals if u["status"] != "in_progress"] == ["completed"] * 2


async def test_c5_cancelled_outcome_ends_the_turn_cancelled(tmp_path, ws):
    env = scripted_env(tmp_path, _script())

    async def cancelled(message):
        return {"outcome": {"outcome": "cancelled"}}

    async with running(env) as agent:
        agent.handlers["session/request_permission"] = cancelled
        sid = await agent.new_session(ws)
        reply = await agent.prompt(sid, "run it")
    assert reply["result"]["stopReason"] == "cancelled"
    assert not (ws / "made.txt").exists()


async def test_c5_error_reply_counts_as_cancelled(tmp_path, ws):
    env = scripted_env(tmp_path, _script())

    async def error(message):
        raise ClientError(-32603, "no UI")

    async with running(env) as agent:
        agent.handlers["session/request_permission"] = error
        sid = await agent.new_session(ws)
        reply = await agent.prompt(sid, "run it")
    assert reply["result"]["stopReason"] == "cancelled"
    assert not (ws / "made.txt").exists()


async def test_c5_full_access_mode_does_not_ask(tmp_path, ws):
    env = scripted_env(tmp_path, _script())
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        await agent.call("session/set_mode", {"sessionId": sid, "modeId": "full-access"})
        reply = await agent.prompt(sid, "run it")
    assert reply["result"]["stopReason"] == "end_turn"
    assert not [m for m in agent.agent_requests if m["method"] == "session/request_permission"]
    assert (ws / "made.txt").exists()
