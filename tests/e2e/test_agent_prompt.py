"""Seed C.3 (session/prompt) and C.4 (session/update variants), scripted provider."""

from __future__ import annotations

import asyncio

import pytest

from tests.e2e.agent_process import running, scripted_env, turn_update

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def ws(tmp_path):
    path = tmp_path / "ws"
    path.mkdir()
    (path / "hello.txt").write_text("hello from disk\n")
    return path


async def test_c3_prompt_streams_then_answers_end_turn(tmp_path, ws):
    env = scripted_env(tmp_path, [{"text": ["one ", "two ", "three"]}])
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        reply = await agent.prompt(sid, "count")
    assert reply["result"]["stopReason"] == "end_turn"
    texts = [u["content"]["text"] for u in agent.updates(sid)]
    assert texts == ["one ", "two ", "three"]
    last_update = max(
        i for i, m in enumerate(agent.received) if m.get("method") == "session/update"
    )
    assert last_update < agent.received.index(reply)


async def test_c3_max_tokens_stop_reason(tmp_path, ws):
    env = scripted_env(tmp_path, [{"text": "cut", "finish": "length"}])
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        assert (await agent.prompt(sid, "x"))["result"]["stopReason"] == "max_tokens"


async def test_c3_text_and_resource_link_blocks(tmp_path, ws):
    env = scripted_env(tmp_path, [{"match": "file:///a.txt", "text": "seen"}])
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        prompt = [
            {"type": "text", "text": "look at"},
            {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt"},
        ]
        reply = await agent.request("session/prompt", {"sessionId": sid, "prompt": prompt})
    assert reply["result"]["stopReason"] == "end_turn"
    assert agent.updates(sid)[0]["content"]["text"] == "seen"


async def test_c3_image_block_is_refused_32602(tmp_path, ws):
    env = scripted_env(tmp_path, [])
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        prompt = [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]
        reply = await agent.request("session/prompt", {"sessionId": sid, "prompt": prompt})
    assert reply["error"]["code"] == -32602


async def test_c3_second_prompt_while_busy_is_refused_then_works(tmp_path, ws):
    slow = {"text": {"repeat": "x", "count": 200}, "delay": 0.05}
    env = scripted_env(tmp_path, [slow, {"text": "second"}])
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        first = asyncio.create_task(agent.prompt(sid, "one"))
        await agent.wait_for(turn_update)
        busy = await agent.prompt(sid, "two")
        assert busy["error"]["code"] == -32600
        assert busy["error"]["data"] == {"sessionId": sid, "reason": "busy"}
        await agent.notify("session/cancel", {"sessionId": sid})
        assert (await first)["result"]["stopReason"] == "cancelled"
        assert (await agent.prompt(sid, "two"))["result"]["stopReason"] == "end_turn"


async def test_c3_cancel_then_prompt_at_once_waits_for_the_cancelled_turn(tmp_path, ws):
    slow = {"text": {"repeat": "x", "count": 200}, "delay": 0.05}
    env = scripted_env(tmp_path, [slow, {"text": "next"}])
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        first = asyncio.create_task(agent.prompt(sid, "one"))
        await agent.wait_for(turn_update)
        await agent.notify("session/cancel", {"sessionId": sid})
        second = await agent.prompt(sid, "two")
        assert (await first)["result"]["stopReason"] == "cancelled"
        assert second["result"]["stopReason"] == "end_turn"


def _tool_script(ws):
    return [
        {
            "thought": "Plan first.",
            "tool_calls": [
                {
                    "id": "plan1",
                    "name": "todo_write",
                    "arguments": {
                        "todos": [
                            {"content": "write new.txt", "status": "in_progress"},
                            {"content": "read hello.txt", "status": "pending", "priority": "high"},
                        ]
                    },
                }
            ],
        },
        {
            "text": "Writing and reading.",
            "tool_calls": [
                {
                    "id": "w1",
                    "name": "write_file",
                    "arguments": {"file_path": "new.txt", "content": "fresh\n"},
                },
                {"id": "r1", "name": "read_file", "arguments": {"file_path": "hello.txt"}},
                {
                    "id": "e1",
                    "name": "replace",
                    "arguments": {
                        "file_path": "hello.txt",
                        "old_string": "disk",
                        "new_string": "agent",
                    },
                },
            ],
        },
        {"text": "Done."},
    ]


async def test_c4_update_variants_for_a_turn_with_tools_and_a_plan(tmp_path, ws):
    env = scripted_env(tmp_path, _tool_script(ws))
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        reply = await agent.prompt(sid, "do the work")
    assert reply["result"]["stopReason"] == "end_turn"
    updates = agent.updates(sid)
    kinds = [u["sessionUpdate"] for u in updates]
    assert kinds[0] == "agent_thought_chunk"
    assert "plan" in kinds and "agent_message_chunk" in kinds
    plan = next(u for u in updates if u["sessionUpdate"] == "plan")
    assert plan["entries"] == [
        {"content": "write new.txt", "priority": "medium", "status": "in_progress"},
        {"content": "read hello.txt", "priority": "high", "status": "pending"},
    ]
    calls = {u["toolCallId"]: u for u in updates if u["sessionUpdate"] == "tool_call"}
    assert set(calls) == {"w1", "r1", "e1"}  # todo_write is shown as the plan only
    write = calls["w1"]
    assert write["status"] == "pending" and write["kind"] == "edit"
    assert write["title"] and "new.txt" in write["title"]
    assert write["rawInput"] == {"file_path": "new.txt", "content": "fresh\n"}
    assert write["locations"][0]["path"].endswith("new.txt")
    assert calls["r1"]["kind"] == "read"

    def finals(call_id):
        return [
            u
            for u in updates
            if u["sessionUpdate"] == "tool_call_update" and u["toolCallId"] == call_id
        ]

    for call_id in calls:
        statuses = [u.get("status") for u in finals(call_id)]
        assert statuses[0] == "in_progress" and statuses[-1] == "completed", statuses
    [new_diff] = [c for c in finals("w1")[-1]["content"] if c["type"] == "diff"]
    assert new_diff["oldText"] is None and new_diff["newText"] == "fresh\n"
    [edit_diff] = [c for c in finals("e1")[-1]["content"] if c["type"] == "diff"]
    assert (
        edit_diff["oldText"] == "hello from disk\n" and edit_diff["newText"] == "hello from agent\n"
    )
    read_text = finals("r1")[-1]["content"][0]["content"]["text"]
    assert "hello from disk" in read_text
    assert (ws / "new.txt").read_text() == "fresh\n"
    assert (ws / "hello.txt").read_text() == "hello from agent\n"


async def test_c4_failed_tool_is_failed_with_reason(tmp_path, ws):
    script = [
        {"tool_calls": [{"id": "r1", "name": "read_file", "arguments": {"file_path": "nope.txt"}}]},
        {"text": "it is missing"},
    ]
    env = scripted_env(tmp_path, script)
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        await agent.prompt(sid, "read")
    final = [u for u in agent.updates(sid) if u["sessionUpdate"] == "tool_call_update"][-1]
    assert final["status"] == "failed"
    assert final["content"][0]["content"]["text"]


async def test_c4_usage_in_prompt_response(tmp_path, ws):
    env = scripted_env(tmp_path, [{"text": "x", "usage": {"input_tokens": 7, "output_tokens": 3}}])
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        reply = await agent.prompt(sid, "x")
    # Under _meta: the stable schema's PromptResponse has no `usage`, nor room for one.
    assert "usage" not in reply["result"]
    usage = reply["result"]["_meta"]["agentao.cn/usage"]
    assert usage == {"totalTokens": 10, "inputTokens": 7, "outputTokens": 3}
