"""Seed C.7 (session/load) and the stable session methods: list, resume, close, delete.
Sessions persist across processes; a killed agent loses at most the turn in flight."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from tests.e2e.agent_process import running, scripted_env, turn_update

pytestmark = pytest.mark.timeout(90)


TURN_ONE = [
    {
        "thought": "Plan it.",
        "tool_calls": [
            {
                "id": "p1",
                "name": "todo_write",
                "arguments": {"todos": [{"content": "write a.txt", "status": "in_progress"}]},
            }
        ],
    },
    {
        "text": "Writing.",
        "tool_calls": [
            {
                "id": "w1",
                "name": "write_file",
                "arguments": {"file_path": "a.txt", "content": "A\n"},
            }
        ],
    },
    {"text": "Done one."},
]
TURN_TWO = [{"match": "second", "text": "Done two."}]


async def _two_turns(env, ws) -> tuple[str, list[dict]]:
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        await agent.prompt(sid, "first task")
        await agent.prompt(sid, "second task")
        live = agent.updates(sid)
        await agent.call("session/set_mode", {"sessionId": sid, "modeId": "read-only"})
    return sid, live


async def test_c7_load_replays_the_whole_history_before_answering(tmp_path, ws):
    env = scripted_env(tmp_path, TURN_ONE + TURN_TWO)
    sid, live = await _two_turns(env, ws)
    async with running(env) as agent:
        reply = await agent.request(
            "session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []}
        )
        replayed = agent.updates(sid)
    result = reply["result"]
    assert result["modes"]["currentModeId"] == "read-only"
    assert result["configOptions"][0]["currentValue"] == "scripted/script"
    index = agent.received.index(reply)
    assert all(agent.received.index(m) < index for m in agent.received if turn_update(m))
    # Nothing of the load comes after its reply, the commands included.
    before = [m["params"]["update"]["sessionUpdate"] for m in agent.received[:index] if _update(m)]
    assert "available_commands_update" in before
    kinds = [u["sessionUpdate"] for u in replayed]
    assert kinds[0] == "user_message_chunk"
    assert replayed[0]["content"]["text"] == "first task"
    users = [u["content"]["text"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    assert users == ["first task", "second task"]
    thoughts = "".join(
        u["content"]["text"] for u in replayed if u["sessionUpdate"] == "agent_thought_chunk"
    )
    assert thoughts == "Plan it."
    texts = "".join(
        u["content"]["text"] for u in replayed if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert texts == "Writing.\n\nDone one.Done two."
    [plan] = [u for u in replayed if u["sessionUpdate"] == "plan"]
    assert plan["entries"][0]["content"] == "write a.txt"
    call = next(u for u in replayed if u["sessionUpdate"] == "tool_call")
    assert call["toolCallId"] == "w1" and call["kind"] == "edit"
    final = [u for u in replayed if u["sessionUpdate"] == "tool_call_update"][-1]
    assert final["status"] == "completed"
    diff = final["content"][0]
    assert diff["type"] == "diff" and diff["path"] == str(ws / "a.txt")
    assert diff["oldText"] is None and diff["newText"] == "A\n"
    # The same story as live, minus the live-only progress.
    live_final = [u for u in live if u["sessionUpdate"] == "tool_call_update"][-1]
    assert live_final == final


def _update(message: dict) -> bool:
    return message.get("method") == "session/update"


async def test_c7_load_restores_mode_and_model_and_continues(tmp_path, ws):
    env = scripted_env(tmp_path, TURN_ONE + TURN_TWO + [{"match": "third", "text": "three"}])
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        await agent.call("session/set_mode", {"sessionId": sid, "modeId": "plan"})
        await agent.call("_agentao.cn/set_model", {"sessionId": sid, "model": "other-model"})
        await agent.prompt(sid, "first task")
    async with running(env) as agent:
        result = await agent.call(
            "session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []}
        )
        assert result["modes"]["currentModeId"] == "plan"
        assert result["configOptions"][0]["currentValue"] == "scripted/other-model"
        reply = await agent.prompt(sid, "third")
        assert reply["result"]["stopReason"] == "end_turn"


async def test_c7_load_errors(tmp_path, ws):
    env = scripted_env(tmp_path, [{"text": "x"}])
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        await agent.prompt(sid, "x")
    other = tmp_path / "other"
    other.mkdir()
    async with running(env) as agent:
        unknown = await agent.request(
            "session/load", {"sessionId": "nope", "cwd": str(ws), "mcpServers": []}
        )
        assert unknown["error"]["code"] == -32002
        assert unknown["error"]["data"] == {"sessionId": "nope"}
        moved = await agent.request(
            "session/load", {"sessionId": sid, "cwd": str(other), "mcpServers": []}
        )
        assert moved["error"]["code"] == -32602
        relative = await agent.request(
            "session/load", {"sessionId": sid, "cwd": "ws", "mcpServers": []}
        )
        assert relative["error"]["code"] == -32602


async def test_session_list_resume_close_delete(tmp_path, ws):
    env = scripted_env(tmp_path, [{"text": "a"}, {"text": "b"}])
    async with running(env) as agent:
        one = await agent.new_session(ws)
        await agent.prompt(one, "the first session")
        two = await agent.new_session(tmp_path)
        listed = await agent.call("session/list", {})
        assert [s["sessionId"] for s in listed["sessions"]] == [two, one]
        info = listed["sessions"][1]
        assert info["cwd"] == str(ws) and info["title"] == "the first session"
        assert info["updatedAt"].endswith("Z")
        only_ws = await agent.call("session/list", {"cwd": str(ws)})
        assert [s["sessionId"] for s in only_ws["sessions"]] == [one]

        assert await agent.call("session/close", {"sessionId": one}) == {}
        closed = await agent.prompt(one, "after close")
        assert closed["error"]["code"] == -32002
        again = await agent.request("session/close", {"sessionId": one})
        assert again["error"]["code"] == -32002

        before = len(agent.received)
        resumed = await agent.call(
            "session/resume", {"sessionId": one, "cwd": str(ws), "mcpServers": []}
        )
        assert resumed["modes"]["currentModeId"] == "workspace-write"
        assert (await agent.prompt(one, "more"))["result"]["stopReason"] == "end_turn"
        # Resume does not replay: what the agent wrote since is the new turn alone (its
        # answer comes after every update it wrote before, on the one pipe).
        since_resume = agent.updates(one, since=before)
        assert [u["sessionUpdate"] for u in since_resume] == ["agent_message_chunk"]

        assert await agent.call("session/delete", {"sessionId": one}) == {}
        gone = await agent.request(
            "session/load", {"sessionId": one, "cwd": str(ws), "mcpServers": []}
        )
        assert gone["error"]["code"] == -32002
        # Idempotent: deleting it again, or a session that never was, succeeds silently.
        assert await agent.call("session/delete", {"sessionId": one}) == {}
        assert await agent.call("session/delete", {"sessionId": "never-created"}) == {}
        listed = await agent.call("session/list", {})
        assert [s["sessionId"] for s in listed["sessions"]] == [two]


async def test_a_killed_agent_loses_at_most_the_turn_in_flight(tmp_path, ws):
    slow = {"match": "slow", "text": {"repeat": "y", "count": 1000}, "delay": 0.02}
    env = scripted_env(tmp_path, [{"text": "kept"}, slow])
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        await agent.prompt(sid, "first")
        in_flight = asyncio.create_task(agent.prompt(sid, "slow one"))
        await agent.wait_for(
            lambda m: (
                m.get("method") == "session/update"
                and m["params"]["update"].get("content", {}).get("text") == "y"
            )
        )
        agent.kill()
        with pytest.raises(EOFError):
            await in_flight
    db = tmp_path / "home" / "agentao.sqlite3"
    with sqlite3.connect(db) as conn:
        (count,) = conn.execute(
            "SELECT count(*) FROM turns WHERE session_id = ?", (sid,)
        ).fetchone()
    assert count == 1
    async with running(env) as agent:
        await agent.call("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
        texts = [u["content"]["text"] for u in agent.updates(sid)]
    assert texts == ["first", "kept"]


async def test_no_cap_on_stored_sessions(tmp_path, ws):
    env = scripted_env(tmp_path, [])
    async with running(env) as agent:
        sids = [await agent.new_session(ws) for _ in range(25)]
        listed = await agent.call("session/list", {})
    assert {s["sessionId"] for s in listed["sessions"]} == set(sids)
