"""Subagents (issue 25): our agent's `task` tool runs a child agent, shown as a child
session to clients that opted in (`clientCapabilities.subagents`) and as the parent's tool
call with progress to the others. Real agent processes over pipes, the scripted provider:
a response with `match` answers the child whose task names that word."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.agent_process import running, scripted_env
from tests.schema_check import check_all, drafted

pytestmark = pytest.mark.timeout(60)

OPTED_IN = {"subagents": {}}
FETCH = {"name": "web_fetch", "arguments": {"url": "http://127.0.0.1:9/"}}  # always asks


def task(word: str, title: str = "", **extra: Any) -> dict[str, Any]:
    arguments = {"description": title or f"look at {word}", "prompt": f"{word}: do it", **extra}
    return {"id": f"t-{word}", "name": "task", "arguments": arguments}


def children_of(agent, sid: str) -> list[dict[str, Any]]:
    return [u for u in agent.updates(sid) if u["sessionUpdate"] == "subagent_update"]


def schema_errors(agent, version: int) -> list[str]:
    """What breaks the schema: `subagent_update` against the unstable schema, where it is
    (in v1 and v2 alike), everything else as every e2e test checks it."""
    from jsonschema import Draft202012Validator

    def child_news(m: dict[str, Any]) -> bool:
        update = m.get("params", {}).get("update") if m.get("method") == "session/update" else None
        return isinstance(update, dict) and update.get("sessionUpdate") == "subagent_update"

    found = check_all([m for m in agent.received if not child_news(m)], agent.sent, version)
    schema = {"$defs": drafted(version), "$ref": "#/$defs/SessionUpdate"}
    for m in filter(child_news, agent.received):
        found += [
            e.message for e in Draft202012Validator(schema).iter_errors(m["params"]["update"])
        ]
    return found


def said(agent, sid: str) -> str:
    """The agent text of session `sid`, joined."""
    chunks = agent.updates(sid)
    return "".join(
        u["content"]["text"] for u in chunks if u["sessionUpdate"] == "agent_message_chunk"
    )


def reject(_message):
    async def handler(message):
        return {"outcome": {"outcome": "selected", "optionId": "reject"}}

    return handler


async def test_an_opted_in_client_sees_the_child_under_its_own_session_id(tmp_path, ws):
    env = scripted_env(
        tmp_path,
        [
            {"tool_calls": [task("alpha", "survey")]},
            {"match": "alpha", "text": "the child's answer"},
            {"text": "parent done"},
        ],
    )
    async with running(env, capabilities=OPTED_IN) as agent:
        sid = await agent.new_session(ws)
        reply = await agent.prompt(sid, "delegate it")
    assert reply["result"]["stopReason"] == "end_turn"
    announced, *_, last = children_of(agent, sid)
    child = announced["sessionId"]
    assert child != sid and announced["title"] == "survey"
    assert announced["state"] == {"state": "running"}
    assert last["sessionId"] == child
    assert last["state"] == {"state": "idle", "stopReason": "end_turn"}
    text = "".join(
        u["content"]["text"]
        for u in agent.updates(child)
        if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert text == "the child's answer"
    # the child's own traffic comes after its announcement, before its end
    order = [m["params"] for m in agent.received if m.get("method") == "session/update"]
    at = [i for i, p in enumerate(order) if p["sessionId"] == child]
    assert order.index(next(p for p in order if p["update"] is announced)) < at[0]
    assert at[-1] < order.index(next(p for p in order if p["update"] is last))
    final = [u for u in agent.updates(sid) if u["sessionUpdate"] == "tool_call_update"][-1]
    assert final["status"] == "completed"
    assert final["content"][0]["content"]["text"] == "the child's answer"
    assert final["rawOutput"] == {"sessionId": child, "stopReason": "end_turn"}
    assert schema_errors(agent, version=1) == []


async def test_a_client_that_did_not_opt_in_sees_the_child_as_tool_progress(tmp_path, ws):
    env = scripted_env(
        tmp_path,
        [
            {"tool_calls": [task("alpha", "survey")]},
            {
                "match": "alpha",
                "tool_calls": [{"name": "list_directory", "arguments": {"path": "."}}],
            },
            {"match": "alpha", "text": "nothing there"},
            {"text": "parent done"},
        ],
    )
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        await agent.prompt(sid, "delegate it")
    sessions = {
        m["params"]["sessionId"] for m in agent.received if m.get("method") == "session/update"
    }
    assert sessions == {sid}  # no child session, no subagent_update
    assert not children_of(agent, sid)
    progress = [
        u["content"][0]["content"]["text"]
        for u in agent.updates(sid)
        if u["sessionUpdate"] == "tool_call_update"
        and u.get("status") == "in_progress"
        and u.get("content")
    ]
    assert progress[0] == "survey: started"
    assert any("List" in p and "(completed)" in p for p in progress), progress
    final = [u for u in agent.updates(sid) if u["sessionUpdate"] == "tool_call_update"][-1]
    assert final["content"][0]["content"]["text"] == "nothing there"


async def test_a_childs_question_comes_under_its_session_after_requires_action(tmp_path, ws):
    env = scripted_env(
        tmp_path,
        [
            {"tool_calls": [task("alpha", "fetcher")]},
            {"match": "alpha", "tool_calls": [FETCH]},
            {"match": "alpha", "text": "could not fetch"},
            {"text": "parent done"},
        ],
    )
    async with running(env, capabilities=OPTED_IN) as agent:
        agent.handlers["session/request_permission"] = reject(None)
        sid = await agent.new_session(ws)
        await agent.prompt(sid, "delegate it")
    [asked] = [m for m in agent.agent_requests if m["method"] == "session/request_permission"]
    child = children_of(agent, sid)[0]["sessionId"]
    assert asked["params"]["sessionId"] == child
    # on the wire before the question: the child's call, then its requires_action state
    before = agent.received[: agent.received.index(asked)]
    call_id = asked["params"]["toolCall"]["toolCallId"]
    assert any(
        m["params"]["sessionId"] == child and m["params"]["update"].get("toolCallId") == call_id
        for m in before
        if m.get("method") == "session/update"
    )
    states = [u["state"]["state"] for u in children_of(agent, sid)]
    assert states == ["running", "requires_action", "running", "idle"]
    last_state_before = [
        m["params"]["update"]["state"]["state"]
        for m in before
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "subagent_update"
    ][-1]
    assert last_state_before == "requires_action"
    rejected = [u for u in agent.updates(child) if u.get("status") == "failed"]
    assert rejected and "rejected" in rejected[0]["content"][0]["content"]["text"]


async def test_a_childs_question_names_the_child_for_a_client_that_did_not_opt_in(tmp_path, ws):
    env = scripted_env(
        tmp_path,
        [
            {"tool_calls": [task("alpha", "fetcher")]},
            {"match": "alpha", "tool_calls": [FETCH]},
            {"match": "alpha", "text": "could not fetch"},
            {"text": "parent done"},
        ],
    )
    async with running(env) as agent:
        agent.handlers["session/request_permission"] = reject(None)
        sid = await agent.new_session(ws)
        reply = await agent.prompt(sid, "delegate it")
    assert reply["result"]["stopReason"] == "end_turn"
    [asked] = [m for m in agent.agent_requests if m["method"] == "session/request_permission"]
    params = asked["params"]
    assert params["sessionId"] == sid
    assert params["toolCall"]["toolCallId"] == "t-alpha"  # the parent's call, which it saw
    assert params["toolCall"]["title"].startswith("Subagent fetcher: ")
    assert params["toolCall"]["kind"] == "fetch"


async def test_cancelling_the_parent_ends_its_children(tmp_path, ws):
    env = scripted_env(
        tmp_path,
        [
            {"tool_calls": [task("alpha", "fetcher")]},
            {"match": "alpha", "tool_calls": [FETCH]},
        ],
    )
    async with running(env, capabilities=OPTED_IN) as agent:
        sid = await agent.new_session(ws)
        params = {"sessionId": sid, "prompt": [{"type": "text", "text": "delegate it"}]}
        prompt = agent.request("session/prompt", params)
        import asyncio

        pending = asyncio.ensure_future(prompt)
        await agent.wait_request("session/request_permission")  # the child waits on us
        await agent.notify("session/cancel", {"sessionId": sid})
        reply = await pending
    assert reply["result"]["stopReason"] == "cancelled"
    last = children_of(agent, sid)[-1]
    assert last["state"]["state"] == "idle"
    assert last["state"]["stopReason"] == "cancelled"


async def test_two_children_of_one_step_run_side_by_side(tmp_path, ws):
    env = scripted_env(
        tmp_path,
        [
            {"tool_calls": [task("alpha"), task("beta")]},
            {"match": "alpha", "tool_calls": [FETCH]},
            {"match": "beta", "tool_calls": [FETCH]},
            {"match": "alpha", "text": "alpha done"},
            {"match": "beta", "text": "beta done"},
            {"text": "parent done"},
        ],
    )
    async with running(env, capabilities=OPTED_IN) as agent:
        sid = await agent.new_session(ws)
        import asyncio

        params = {"sessionId": sid, "prompt": [{"type": "text", "text": "delegate both"}]}
        pending = asyncio.ensure_future(agent.request("session/prompt", params))
        # Both children ask before either is answered: one at a time would wait here forever.
        first = await agent.wait_request("session/request_permission")
        second = await agent.wait_request("session/request_permission", nth=2)
        for asked in (first, second):
            await agent.reply(asked, {"outcome": {"outcome": "selected", "optionId": "reject"}})
        reply = await pending
    assert reply["result"]["stopReason"] == "end_turn"
    assert first["params"]["sessionId"] != second["params"]["sessionId"]
    finals = {
        u["toolCallId"]: u["content"][0]["content"]["text"]
        for u in agent.updates(sid)
        if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "completed"
    }
    assert finals == {"t-alpha": "alpha done", "t-beta": "beta done"}


async def test_a_read_only_parents_child_cannot_write_whatever_it_asks(tmp_path, ws):
    """The attack: the model asks for a child in full-access to get past its own mode."""
    write = {"name": "write_file", "arguments": {"file_path": "owned.txt", "content": "x"}}
    env = scripted_env(
        tmp_path,
        [
            {"tool_calls": [task("alpha", mode="full-access")]},
            {"match": "alpha", "tool_calls": [write]},
            {"match": "alpha", "text": "tried"},
            {"text": "parent done"},
        ],
    )
    async with running(env, capabilities=OPTED_IN) as agent:
        sid = await agent.new_session(ws)
        await agent.call("session/set_mode", {"sessionId": sid, "modeId": "read-only"})
        await agent.prompt(sid, "delegate it")
    assert not (ws / "owned.txt").exists()
    child = children_of(agent, sid)[0]["sessionId"]
    [denied] = [u for u in agent.updates(child) if u.get("status") == "failed"]
    assert "denied" in denied["content"][0]["content"]["text"]


async def test_a_child_cannot_hand_work_on_past_the_depth_setting(tmp_path, ws):
    env = scripted_env(
        tmp_path,
        [
            {"tool_calls": [task("alpha")]},
            {"match": "alpha", "tool_calls": [task("gamma")]},
            {"match": "gamma", "text": "a grandchild ran"},
            {"match": "alpha", "text": "child done"},
            {"text": "parent done"},
        ],
    )
    async with running(env, capabilities=OPTED_IN) as agent:
        sid = await agent.new_session(ws)
        await agent.prompt(sid, "delegate it")
    child = children_of(agent, sid)[0]["sessionId"]
    assert not children_of(agent, child)  # no grandchild
    [refused] = [u for u in agent.updates(child) if u.get("status") == "failed"]
    assert "unknown tool 'task'" in refused["content"][0]["content"]["text"]


async def test_a_deeper_setting_lets_a_child_delegate_once_more(tmp_path, ws):
    env = scripted_env(
        tmp_path,
        [
            {"tool_calls": [task("alpha")]},
            {"match": "alpha", "tool_calls": [task("gamma")]},
            {"match": "gamma", "text": "a grandchild ran"},
            {"match": "alpha", "text": "child done"},
            {"text": "parent done"},
        ],
        AGENTAO_SUBAGENT_DEPTH="2",
    )
    async with running(env, capabilities=OPTED_IN) as agent:
        sid = await agent.new_session(ws)
        await agent.prompt(sid, "delegate it")
    child = children_of(agent, sid)[0]["sessionId"]
    [grandchild] = {u["sessionId"] for u in children_of(agent, child)}
    assert said(agent, grandchild) == "a grandchild ran"


async def test_load_replays_the_child_with_its_parent(tmp_path, ws):
    env = scripted_env(
        tmp_path,
        [
            {"tool_calls": [task("alpha", "survey")]},
            {"match": "alpha", "text": "the child's answer"},
            {"text": "parent done"},
        ],
    )
    async with running(env, capabilities=OPTED_IN) as agent:
        sid = await agent.new_session(ws)
        await agent.prompt(sid, "delegate it")
    live_child = children_of(agent, sid)[0]["sessionId"]
    async with running(env, capabilities=OPTED_IN) as again:
        await again.call("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
    replayed = children_of(again, sid)
    assert replayed[0]["sessionId"] == live_child and replayed[0]["title"] == "survey"
    assert replayed[-1]["state"] == {"state": "idle", "stopReason": "end_turn"}
    text = [u["content"]["text"] for u in again.updates(live_child) if "content" in u]
    assert text == ["the child's answer"]


async def test_a_v2_client_sees_children_natively_and_answers_their_questions(tmp_path, ws):
    from tests.e2e.test_agent_v2_session import idle, v2_initialize

    env = scripted_env(
        tmp_path,
        [
            {"tool_calls": [task("alpha", "fetcher")]},
            {"match": "alpha", "tool_calls": [FETCH]},
            {"match": "alpha", "text": "could not fetch"},
            {"text": "parent done"},
        ],
    )
    async with running(env, init=False) as agent:
        await v2_initialize(agent)  # no opt-in: v2 has child sessions natively
        agent.handlers["session/request_permission"] = reject(None)
        sid = (await agent.call("session/new", {"cwd": str(ws)}))["sessionId"]
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "delegate it"}]}
        await agent.call("session/prompt", prompt)
        await idle(agent, sid)
    announced, *_, last = children_of(agent, sid)
    child = announced["sessionId"]
    assert announced["title"] == "fetcher" and last["state"]["state"] == "idle"
    [asked] = [m for m in agent.agent_requests if m["method"] == "session/request_permission"]
    assert asked["params"]["sessionId"] == child
    assert asked["params"]["subject"]["toolCall"]["kind"] == "fetch"
    assert said(agent, child) == "could not fetch"
    assert schema_errors(agent, version=2) == []


async def test_the_parallel_setting_bounds_how_many_children_run_at_once(tmp_path, ws):
    env = scripted_env(
        tmp_path,
        [
            {"tool_calls": [task("alpha"), task("beta")]},
            {"match": "alpha", "tool_calls": [FETCH]},
            {"match": "beta", "tool_calls": [FETCH]},
            {"match": "alpha", "text": "alpha done"},
            {"match": "beta", "text": "beta done"},
            {"text": "parent done"},
        ],
        AGENTAO_SUBAGENT_PARALLEL="1",
    )
    async with running(env, capabilities=OPTED_IN) as agent:
        agent.handlers["session/request_permission"] = reject(None)
        sid = await agent.new_session(ws)
        reply = await agent.prompt(sid, "delegate both")
    assert reply["result"]["stopReason"] == "end_turn"
    news = [(u["sessionId"], u["state"]["state"]) for u in children_of(agent, sid)]
    first, second = dict.fromkeys(child for child, _ in news)
    # one at a time: the second starts only once the first is idle
    assert news.index((first, "idle")) < news.index((second, "running"))


async def test_side_by_side_each_childs_requires_action_comes_before_its_question(tmp_path, ws):
    """The flush before a child asks (agent/subagents.py `_ChildInteraction._asking`): side
    by side, a child's events pass through one more task (agent/parallel_calls.py), so its
    question, sent by a task of its own, would reach the wire before its `requires_action`
    without it; one child alone does not show it (its state is written first anyway)."""
    env = scripted_env(
        tmp_path,
        [
            {"tool_calls": [task("alpha"), task("beta")]},
            {"match": "alpha", "tool_calls": [FETCH]},
            {"match": "beta", "tool_calls": [FETCH]},
            {"match": "alpha", "text": "alpha done"},
            {"match": "beta", "text": "beta done"},
            {"text": "parent done"},
        ],
    )
    async with running(env, capabilities=OPTED_IN) as agent:
        agent.handlers["session/request_permission"] = reject(None)
        sid = await agent.new_session(ws)
        await agent.prompt(sid, "delegate both")
    asked = [m for m in agent.agent_requests if m["method"] == "session/request_permission"]
    assert len(asked) == 2
    for question in asked:
        child = question["params"]["sessionId"]
        before = agent.received[: agent.received.index(question)]
        states = [
            m["params"]["update"]["state"]["state"]
            for m in before
            if m.get("method") == "session/update"
            and m["params"]["update"]["sessionUpdate"] == "subagent_update"
            and m["params"]["update"]["sessionId"] == child
        ]
        assert states[-1:] == ["requires_action"], (child, states)
    assert schema_errors(agent, 1) == []
