"""Seed C.2 "Startup resume": `agentao --acp --resume [ID]` makes the first session/new
resume a persisted session (its history replayed, its id returned); any miss silently
gives a fresh session. The replay follows the session/new result (design §3: the result
is written before the session's first update)."""

from __future__ import annotations

import sqlite3

import pytest

from tests.e2e.agent_process import running, scripted_env, turn_update

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def env(tmp_path):
    return scripted_env(
        tmp_path,
        [{"match": "first", "text": "one"}, {"match": "again", "text": "two"}, {"text": "more"}],
    )


async def _session_with_a_turn(env, ws, prompt="first") -> str:
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        await agent.prompt(sid, prompt)
    return sid


async def test_c2_resume_latest(env, ws):
    await _session_with_a_turn(env, ws)
    sid = await _session_with_a_turn(env, ws, "again")  # the latest
    async with running(env, "--resume") as agent:
        reply = await agent.request("session/new", {"cwd": str(ws), "mcpServers": []})
        assert reply["result"]["sessionId"] == sid
        await agent.wait_for(
            lambda m: (
                m.get("method") == "session/update"
                and m["params"]["update"].get("content", {}).get("text") == "two"
            )
        )
        first_update = next(m for m in agent.received if m.get("method") == "session/update")
        assert agent.received.index(reply) < agent.received.index(first_update)
        texts = [u["content"]["text"] for u in agent.updates(sid)]
        assert texts == ["again", "two"]
        # It goes on as the same session; a second session/new is fresh.
        assert (await agent.prompt(sid, "next"))["result"]["stopReason"] == "end_turn"
        assert await agent.new_session(ws) != sid


async def test_c2_resume_named(env, ws):
    named = await _session_with_a_turn(env, ws)
    await _session_with_a_turn(env, ws, "again")
    async with running(env, "--resume", named) as agent:
        assert await agent.new_session(ws) == named
        await agent.wait_for(turn_update)
        assert agent.updates(named)[0]["content"]["text"] == "first"


@pytest.mark.parametrize("case", ["empty", "unknown", "corrupt", "active", "other_cwd"])
async def test_c2_resume_miss_is_a_fresh_session(env, ws, tmp_path, case):
    args = ["--resume"]
    sid = None
    if case != "empty":
        sid = await _session_with_a_turn(env, ws)
    if case == "unknown":
        args.append("no-such-session")
    if case == "corrupt":
        with sqlite3.connect(tmp_path / "home" / "agentao.sqlite3") as conn:
            conn.execute('UPDATE turns SET data = \'{"type": "Nonsense"}\'')
    cwd = ws
    if case == "other_cwd":
        cwd = tmp_path / "elsewhere"
        cwd.mkdir()
    async with running(env, *args) as agent:
        if case == "active":
            await agent.call("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
        before = len(agent.received)
        new_sid = await agent.new_session(cwd)
        assert new_sid != sid
        assert (await agent.prompt(new_sid, "hello"))["result"]["stopReason"] == "end_turn"
        user_chunks = [
            u
            for u in agent.updates(new_sid, since=before)
            if u["sessionUpdate"] == "user_message_chunk"
        ]
        assert user_chunks == []  # nothing was replayed into the fresh session
