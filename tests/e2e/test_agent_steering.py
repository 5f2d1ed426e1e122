"""Steering and queued prompts: `agentao --acp` in a real process against the fake LLM,
whose replies the tests hold until they let them go (`FakeLLM.hold`).

`_session/steering` mid-turn reaches the turn's next model request (after the tool output)
and the turn ends once; when idle it answers per `idleBehavior` as codex-acp 2.6.0 does.
Prompts that ask to wait (`_meta["agentao.cn/queue"]`) run in order after the turn, each
with its own reply; a cancel drops the ones not started; one past the line's depth, or one
that did not ask, is "busy" as before (server/prompt_queue.py, server/steering.py).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.e2e.agent_process import AgentProcess, agent_env, running
from tests.fakes.fake_llm import FakeToolCall

pytestmark = pytest.mark.timeout(60)

QUEUE = {"agentao.cn/queue": True}


@pytest.fixture
def ws(tmp_path):
    path = tmp_path / "ws"
    path.mkdir()
    (path / "hello.txt").write_text("hi from file\n")
    return path


@pytest.fixture
def env(tmp_path, fake_llm):
    return agent_env(
        tmp_path / "home",
        AGENTAO_PROMPT_QUEUE_DEPTH="3",
        AGENTAO_STEERING_MAX_PENDING="2",
        **fake_llm.env(),
    )


def text(words: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": words}]


async def steer(agent: AgentProcess, sid: str, words: str, **meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"sessionId": sid, "prompt": text(words)}
    if meta:
        params["_meta"] = {"steering": meta}
    return await agent.request("_session/steering", params)


def prompt(agent: AgentProcess, sid: str, words: str, meta: dict | None = None) -> Any:
    params: dict[str, Any] = {"sessionId": sid, "prompt": text(words)}
    if meta is not None:
        params["_meta"] = meta
    return asyncio.ensure_future(agent.request("session/prompt", params))


def user_messages(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


async def test_initialize_advertises_steering(env):
    async with running(env, init=False) as agent:
        result = await agent.initialize()
    assert result["_meta"]["steering"] == {"supported": True}


async def test_steering_reaches_the_next_request_of_the_same_turn(env, ws, fake_llm):
    gate = fake_llm.hold(tool_calls=[FakeToolCall("read_file", {"file_path": "hello.txt"})])
    fake_llm.reply("Done.")
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        turn = prompt(agent, sid, "read hello.txt")
        await fake_llm.wait_requests_async(1)
        assert (await steer(agent, sid, "and then say bye"))["result"] == {"outcome": "injected"}
        gate.set()
        reply = await turn
    assert reply["result"]["stopReason"] == "end_turn"
    assert len(fake_llm.requests) == 2  # one turn, one more step: no second turn
    messages = fake_llm.requests[1].body["messages"]
    assert messages[-2]["role"] == "tool" and "hi from file" in messages[-2]["content"]
    assert messages[-1] == {"role": "user", "content": "and then say bye"}
    kinds = [(u["sessionUpdate"], u.get("status")) for u in agent.updates(sid)]
    landed = kinds.index(("user_message_chunk", None))
    assert kinds[landed - 1] == ("tool_call_update", "completed")
    assert kinds[landed + 1][0] == "agent_message_chunk"
    steered = agent.updates(sid)[landed]
    assert steered["content"] == {"type": "text", "text": "and then say bye"}
    replies = [m for m in agent.received if m.get("id") == reply["id"]]
    assert len(replies) == 1


async def test_steering_messages_waiting_for_one_step_are_bounded(env, ws, fake_llm):
    gate = fake_llm.hold("First answer.")
    fake_llm.reply("Second answer.")
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        turn = prompt(agent, sid, "hello")
        await fake_llm.wait_requests_async(1)
        for words in ("one", "two"):
            assert (await steer(agent, sid, words))["result"]["outcome"] == "injected"
        full = await steer(agent, sid, "three")
        gate.set()
        assert (await turn)["result"]["stopReason"] == "end_turn"
    assert full["error"]["code"] == -32600 and full["error"]["data"]["reason"] == "steering_full"
    assert user_messages(fake_llm.requests[1].body)[-2:] == ["one", "two"]


async def test_steering_as_the_model_finishes_gets_one_more_step(env, ws, fake_llm):
    gate = fake_llm.hold("First answer.")
    fake_llm.reply("Second answer.")
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        turn = prompt(agent, sid, "hello")
        await fake_llm.wait_requests_async(1)
        assert (await steer(agent, sid, "one more thing"))["result"]["outcome"] == "injected"
        gate.set()
        assert (await turn)["result"]["stopReason"] == "end_turn"
    last = fake_llm.requests[1].body["messages"]
    assert last[-2] == {"role": "assistant", "content": "First answer."}
    assert last[-1] == {"role": "user", "content": "one more thing"}


async def test_steering_an_idle_session_follows_idle_behavior(env, ws, fake_llm):
    fake_llm.reply("Started from steering.")
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        held = await steer(agent, sid, "keep it", idleBehavior="promptRequired")
        assert held["result"] == {"outcome": "promptRequired", "reason": "noRunningTurn"}
        assert fake_llm.requests == []
        bad = await steer(agent, sid, "x", idleBehavior="whenever")
        assert bad["error"]["code"] == -32602
        assert bad["error"]["data"]["reason"] == "unsupported_idle_behavior"
        started = await steer(agent, sid, "start a turn", idleBehavior="startNewTurn")
        assert started["result"] == {"outcome": "startedNewTurn"}
        await agent.wait_for(
            lambda m: (
                m.get("method") == "session/update"
                and m["params"]["update"].get("content", {}).get("text") == "Started from steering."
            )
        )
    assert user_messages(fake_llm.requests[0].body)[-1] == "start a turn"


async def test_queued_prompts_run_in_order_after_the_turn(env, ws, fake_llm):
    gate = fake_llm.hold("one")
    for word in ("two", "three", "four"):
        fake_llm.reply(word)
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        first = prompt(agent, sid, "first")
        await fake_llm.wait_requests_async(1)
        queued = [prompt(agent, sid, w, QUEUE) for w in ("second", "third", "fourth")]
        too_many = await prompt(agent, sid, "fifth", QUEUE)  # the line holds three
        not_asked = await prompt(agent, sid, "sixth")
        gate.set()
        replies = [await first, *[await q for q in queued]]
    for refused in (too_many, not_asked):
        assert refused["error"]["code"] == -32600 and refused["error"]["data"]["reason"] == "busy"
    assert [r["result"]["stopReason"] for r in replies] == ["end_turn"] * 4
    answered = [m["id"] for m in agent.received if "result" in m and m.get("id") in
                {r["id"] for r in replies}]  # fmt: skip
    assert answered == [r["id"] for r in replies]
    asked = [user_messages(r.body)[-1] for r in fake_llm.requests]
    assert asked == ["first", "second", "third", "fourth"]


async def test_cancel_drops_the_prompts_that_wait(env, ws, fake_llm):
    fake_llm.hold("never sent")
    fake_llm.reply("after the cancel")
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        first = prompt(agent, sid, "first")
        await fake_llm.wait_requests_async(1)
        queued = [prompt(agent, sid, w, QUEUE) for w in ("second", "third")]
        busy = await prompt(agent, sid, "not queued")  # answered once the two wait
        assert busy["error"]["data"]["reason"] == "busy"
        await agent.notify("session/cancel", {"sessionId": sid})
        stops = [(await t)["result"]["stopReason"] for t in (first, *queued)]
        after = await prompt(agent, sid, "again")
    assert stops == ["cancelled"] * 3
    assert after["result"]["stopReason"] == "end_turn"
    asked = [user_messages(r.body)[-1] for r in fake_llm.requests]
    assert asked == ["first", "again"]  # the dropped prompts never reached the model


async def test_session_load_replays_the_steering_where_it_landed(env, ws, fake_llm):
    gate = fake_llm.hold(tool_calls=[FakeToolCall("read_file", {"file_path": "hello.txt"})])
    fake_llm.reply("Done.")
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        turn = prompt(agent, sid, "read hello.txt")
        await fake_llm.wait_requests_async(1)
        assert (await steer(agent, sid, "and then say bye"))["result"]["outcome"] == "injected"
        gate.set()
        await turn
    async with running(env) as again:
        await again.call("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
    shown = [
        (u["sessionUpdate"], u.get("content", {}).get("text"))
        for u in again.updates(sid)
        if u["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk", "tool_call")
    ]
    assert shown == [
        ("user_message_chunk", "read hello.txt"),
        ("tool_call", None),
        ("user_message_chunk", "and then say bye"),
        ("agent_message_chunk", "Done."),
    ]


async def test_steering_during_a_subagent_reaches_the_parent_not_the_child(env, ws, fake_llm):
    """Words steered in while a child works (agent/subagents.py) are the parent turn's: the
    child neither drains them into its own request nor closes the parent's inbox when it
    ends; the parent's next request, after the child's result, holds them."""
    task = {"description": "look", "prompt": "child job"}
    fake_llm.reply(tool_calls=[FakeToolCall("task", task)])
    gate = fake_llm.hold("Child done.")
    fake_llm.reply("All done.")
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        turn = prompt(agent, sid, "delegate it")
        await fake_llm.wait_requests_async(2)  # the child's first request, held
        assert (await steer(agent, sid, "parent words"))["result"] == {"outcome": "injected"}
        gate.set()
        reply = await turn
    assert reply["result"]["stopReason"] == "end_turn"
    child, parent = fake_llm.requests[1].body, fake_llm.requests[2].body
    assert user_messages(child) == ["child job"]
    assert user_messages(parent) == ["delegate it", "parent words"]
    assert len(fake_llm.requests) == 3
