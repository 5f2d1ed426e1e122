"""Our agent's v2 session surface over a real `agentao --acp` and the fake LLM (server/v2.py):
session/new without mcpServers, a prompt answered at insertion with `{messageId}`, the
`state_update` life of a turn, keyed upserts (tool calls, plan), permissions in v2's shape
with `requires_action`, cancel, errors after insertion, resume with replay, close, list,
the mode as a config option, and `tool_call/cancel` stopping one running shell command
(its process group killed in the sandbox, the turn going on). Every message both ways is checked against the official v2
schema (tests/schema_check.py)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

from tests.e2e.agent_process import AgentProcess, agent_env, running
from tests.fakes.fake_llm import FakeToolCall
from tests.schema_check import check_all

pytestmark = pytest.mark.timeout(60)
V2_CLIENT = {"name": "v2-test-client", "version": "1.0.0"}
SHELL = "touch made.txt"


async def v2_initialize(
    agent: AgentProcess, capabilities: dict[str, Any] | None = None
) -> dict[str, Any]:
    params = {"protocolVersion": 2, "info": V2_CLIENT, "capabilities": capabilities or {}}
    return await agent.call("initialize", params)


def states(agent: AgentProcess, session: str) -> list[str]:
    return [
        u["state"]
        for u in agent.updates(session, every=True)
        if u["sessionUpdate"] == "state_update"
    ]


async def idle(agent: AgentProcess, session: str, nth: int = 1) -> dict[str, Any]:
    """The `nth` idle state_update of `session` (waited for)."""

    def seen(_: dict) -> bool:
        return len(_idles(agent, session)) >= nth

    await agent.wait_for(seen)
    return _idles(agent, session)[nth - 1]


def _idles(agent: AgentProcess, session: str) -> list[dict[str, Any]]:
    return [
        u
        for u in agent.updates(session, every=True)
        if u["sessionUpdate"] == "state_update" and u["state"] == "idle"
    ]


def choose(option_id: str):
    async def handler(message: dict[str, Any]) -> dict[str, Any]:
        return {"outcome": {"outcome": "selected", "optionId": option_id}}

    return handler


@pytest.fixture
def env(tmp_path, fake_llm):
    return agent_env(tmp_path / "home", **fake_llm.env())


async def test_a_v2_prompt_is_acknowledged_with_its_message_id_then_runs_to_idle(env, ws, fake_llm):
    fake_llm.reply(reasoning=["thinking"], text=["Hello", " there"])
    async with running(env, init=False) as agent:
        init = await v2_initialize(agent)
        new = await agent.call("session/new", {"cwd": str(ws)})  # no mcpServers: optional
        sid = new["sessionId"]
        ack = await agent.call(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
        )
        end = await idle(agent, sid)
    assert set(init["capabilities"]["session"]) >= {"prompt", "mcp"}
    assert [o["configId"] for o in new["configOptions"]] == ["mode", "model"]
    assert set(ack) == {"messageId"}
    updates = agent.updates(sid, every=True)
    [user] = [u for u in updates if u["sessionUpdate"] == "user_message_chunk"]
    assert user["messageId"] == ack["messageId"] and user["content"]["text"] == "hi"
    chunks = [u for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert "".join(c["content"]["text"] for c in chunks) == "Hello there"
    assert len({c["messageId"] for c in chunks}) == 1 != ack["messageId"]
    thoughts = [u for u in updates if u["sessionUpdate"] == "agent_thought_chunk"]
    assert thoughts and all(t["messageId"] for t in thoughts)
    assert states(agent, sid) == ["running", "idle"]
    assert end["stopReason"] == "end_turn"
    assert end["_meta"]["agentao.cn/usage"]["totalTokens"] == 15
    assert check_all(agent.received, agent.sent, version=2) == []


async def test_tool_calls_are_keyed_upserts_and_a_plan_is_a_plan_update(env, ws, fake_llm):
    todo = {"todos": [{"content": "write it", "status": "in_progress"}]}
    fake_llm.reply(
        tool_calls=[
            FakeToolCall("todo_write", todo, id="t1"),
            FakeToolCall("write_file", {"file_path": "a.txt", "content": "x\n"}, id="w1"),
        ]
    )
    fake_llm.reply(text=["done"])
    async with running(env, init=False) as agent:
        await v2_initialize(agent)
        sid = (await agent.call("session/new", {"cwd": str(ws)}))["sessionId"]
        await agent.call("session/prompt", {"sessionId": sid, "prompt": [_text("go")]})
        end = await idle(agent, sid)
    assert end["stopReason"] == "end_turn", agent.stderr.decode()[-2000:]
    updates = agent.updates(sid)
    kinds = {u["sessionUpdate"] for u in updates}
    assert "tool_call" not in kinds and "plan" not in kinds  # v1's kinds never on v2
    [plan] = [u for u in updates if u["sessionUpdate"] == "plan_update"]
    assert plan["plan"]["type"] == "items" and plan["plan"]["planId"]
    assert plan["plan"]["entries"][0]["content"] == "write it"
    writes = [u for u in updates if u.get("toolCallId") == "w1"]
    assert writes[0]["status"] == "pending" and writes[0]["name"] == "write_file"
    assert writes[-1]["status"] == "completed"
    [diff] = [c for c in writes[-1]["content"] if c["type"] == "diff"]
    assert diff["changes"] == [{"operation": "add", "path": str(ws / "a.txt")}]
    assert "+x" in diff["patch"]["text"]
    assert (ws / "a.txt").read_text() == "x\n"
    assert check_all(agent.received, agent.sent, version=2) == []


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


def _shell_turn(fake_llm: Any) -> None:
    fake_llm.reply(tool_calls=[FakeToolCall("run_shell_command", {"command": SHELL}, id="s1")])
    fake_llm.reply(text=["after"])


@pytest.mark.parametrize(
    ("option", "status", "made"), [("allow", "completed", True), ("reject", "failed", False)]
)
async def test_a_permission_is_asked_in_v2_shape_while_the_session_requires_action(
    env, ws, fake_llm, option, status, made
):
    _shell_turn(fake_llm)
    async with running(env, init=False) as agent:
        agent.handlers["session/request_permission"] = choose(option)
        await v2_initialize(agent)
        sid = (await agent.call("session/new", {"cwd": str(ws)}))["sessionId"]
        await agent.call("session/prompt", {"sessionId": sid, "prompt": [_text("run it")]})
        end = await idle(agent, sid)
    [request] = [m for m in agent.agent_requests if m["method"] == "session/request_permission"]
    params = request["params"]
    assert "toolCall" not in params  # v1's place for it
    assert params["subject"]["type"] == "tool_call"
    call = params["subject"]["toolCall"]
    assert call["toolCallId"] == "s1" and call["kind"] == "execute" and SHELL in params["title"]
    assert [o["optionId"] for o in params["options"]] == ["allow", "allow_always", "reject"]
    assert states(agent, sid) == ["running", "requires_action", "running", "idle"]
    asked = agent.received.index(request)
    before = [
        m for m in agent.received[:asked] if m.get("params", {}).get("update", {}).get("state")
    ]
    assert before[-1]["params"]["update"]["state"] == "requires_action"  # said before asking
    final = [u for u in agent.updates(sid) if u.get("toolCallId") == "s1"][-1]
    assert final["status"] == status and end["stopReason"] == "end_turn"
    assert (ws / "made.txt").exists() is made
    assert check_all(agent.received, agent.sent, version=2) == []


async def test_cancel_ends_the_turn_as_idle_cancelled(env, ws, fake_llm):
    fake_llm.hang("partial")
    async with running(env, init=False) as agent:
        await v2_initialize(agent)
        sid = (await agent.call("session/new", {"cwd": str(ws)}))["sessionId"]
        await agent.call("session/prompt", {"sessionId": sid, "prompt": [_text("go")]})
        await agent.wait_for(lambda m: _kind(m) == "agent_message_chunk")
        await agent.notify("session/cancel", {"sessionId": sid})
        end = await idle(agent, sid)
        fake_llm.reply(text=["again"])  # control: the session takes the next prompt
        await agent.call("session/prompt", {"sessionId": sid, "prompt": [_text("more")]})
        second = await idle(agent, sid, nth=2)
    assert end["stopReason"] == "cancelled"
    assert second["stopReason"] == "end_turn"
    assert check_all(agent.received, agent.sent, version=2) == []


async def test_a_second_prompt_while_one_runs_is_held_and_cancel_drops_it_uninserted(
    env, ws, fake_llm
):
    """A held prompt is not inserted until its turn (test_agent_v2_queue.py has the rest):
    cancelled before that, it is answered -32800 and nothing of it is shown."""
    fake_llm.hang("partial")
    async with running(env, init=False) as agent:
        await v2_initialize(agent)
        sid = (await agent.call("session/new", {"cwd": str(ws)}))["sessionId"]
        await agent.call("session/prompt", {"sessionId": sid, "prompt": [_text("go")]})
        await agent.wait_for(lambda m: _kind(m) == "agent_message_chunk")
        held = asyncio.create_task(
            agent.request("session/prompt", {"sessionId": sid, "prompt": [_text("x")]})
        )
        await agent.call("session/list", {})  # answered once the agent read the prompt
        assert not held.done()  # held, not refused
        await agent.notify("session/cancel", {"sessionId": sid})
        await idle(agent, sid)
        dropped = await held
    assert dropped["error"]["code"] == -32800
    users = [u for u in agent.updates(sid) if u["sessionUpdate"] == "user_message_chunk"]
    assert [u["content"]["text"] for u in users] == ["go"]  # the dropped one never inserted
    assert check_all(agent.received, agent.sent, version=2) == []


async def test_an_llm_failure_after_insertion_is_idle_with_stop_reason_error(env, ws, fake_llm):
    fake_llm.fail(400, "the fake refuses")
    async with running(env, init=False) as agent:
        await v2_initialize(agent)
        sid = (await agent.call("session/new", {"cwd": str(ws)}))["sessionId"]
        ack = await agent.call("session/prompt", {"sessionId": sid, "prompt": [_text("go")]})
        end = await idle(agent, sid)
    assert ack["messageId"]
    assert end["stopReason"] == "error"
    assert end["error"]["code"] == -32603 and "fake refuses" in end["error"]["message"]
    assert check_all(agent.received, agent.sent, version=2) == []


def _kind(message: dict[str, Any]) -> str | None:
    return message.get("params", {}).get("update", {}).get("sessionUpdate")


async def _one_turn(env: dict[str, str], ws: Any, text: str) -> str:
    """A v2 session with one finished turn, in its own agent process; its id."""
    async with running(env, init=False) as agent:
        await v2_initialize(agent)
        sid = (await agent.call("session/new", {"cwd": str(ws)}))["sessionId"]
        await agent.call("session/prompt", {"sessionId": sid, "prompt": [_text(text)]})
        await idle(agent, sid)
    return sid


async def test_resume_in_a_second_process_replays_the_history_before_its_reply(env, ws, fake_llm):
    fake_llm.reply(text=["first answer"])
    sid = await _one_turn(env, ws, "first question")
    fake_llm.reply(text=["second answer"])
    async with running(env, init=False) as agent:
        await v2_initialize(agent)
        listed = await agent.call("session/list", {})
        params = {"sessionId": sid, "cwd": str(ws), "replayFrom": {"type": "start"}}
        reply = await agent.request("session/resume", params)
        replayed = agent.updates(sid)
        await agent.call("session/prompt", {"sessionId": sid, "prompt": [_text("again")]})
        end = await idle(agent, sid)
    assert [s["sessionId"] for s in listed["sessions"]] == [sid]
    assert [o["configId"] for o in reply["result"]["configOptions"]] == ["mode", "model"]
    at_reply = agent.received.index(reply)
    assert [u for u in agent.updates(sid) if u in replayed] == replayed
    texts = [(u["sessionUpdate"], u["content"]["text"]) for u in replayed if "content" in u]
    assert texts == [
        ("user_message_chunk", "first question"),
        ("agent_message_chunk", "first answer"),
    ]
    assert all(u["messageId"] for u in replayed if "content" in u)
    assert all(
        agent.received.index(m) < at_reply
        for m in agent.received
        if m.get("method") == "session/update" and m["params"]["update"] in replayed
    )
    assert end["stopReason"] == "end_turn"
    assert "first question" in str(fake_llm.requests[-1].body)  # the model sees the history
    assert check_all(agent.received, agent.sent, version=2) == []


async def test_resume_without_replay_sends_no_history_and_an_unknown_cursor_is_32602(
    env, ws, fake_llm
):
    fake_llm.reply(text=["answer"])
    sid = await _one_turn(env, ws, "question")
    async with running(env, init=False) as agent:
        await v2_initialize(agent)
        odd = {"sessionId": sid, "cwd": str(ws), "replayFrom": {"type": "_from_the_middle"}}
        refused = await agent.request("session/resume", odd)
        await agent.call("session/resume", {"sessionId": sid, "cwd": str(ws)})
    assert refused["error"]["code"] == -32602
    assert refused["error"]["data"]["field"] == "replayFrom"
    assert not [u for u in agent.updates(sid) if "content" in u]
    assert check_all(agent.received, agent.sent, version=2) == []


async def test_close_ends_the_session(env, ws):
    async with running(env, init=False) as agent:
        await v2_initialize(agent)
        sid = (await agent.call("session/new", {"cwd": str(ws)}))["sessionId"]
        closed = await agent.call("session/close", {"sessionId": sid})
        after = await agent.request("session/prompt", {"sessionId": sid, "prompt": [_text("x")]})
    assert closed == {}
    assert after["error"]["code"] == -32002 and after["error"]["data"] == {"sessionId": sid}
    assert check_all(agent.received, agent.sent, version=2) == []


async def test_the_mode_is_a_config_option_held_to_the_ceiling(tmp_path, ws, fake_llm):
    env = agent_env(tmp_path / "home", AGENTAO_MODE_CEILING="workspace-write", **fake_llm.env())
    async with running(env, init=False) as agent:
        await v2_initialize(agent)
        new = await agent.call("session/new", {"cwd": str(ws)})
        sid = new["sessionId"]
        mode = {"sessionId": sid, "configId": "mode", "type": "id"}
        ok = await agent.call("session/set_config_option", {**mode, "value": "read-only"})
        above = await agent.request("session/set_config_option", {**mode, "value": "full-access"})
        unknown = await agent.request("session/set_config_option", {**mode, "value": "yolo"})
        model = new["configOptions"][1]["currentValue"]
        same = {"sessionId": sid, "configId": "model", "type": "id", "value": model}
        models = await agent.call("session/set_config_option", same)
    [start] = [o for o in new["configOptions"] if o["configId"] == "mode"]
    assert start["currentValue"] == "workspace-write"
    assert "full-access" not in {o["value"] for o in start["options"]}  # above the ceiling
    assert ok["configOptions"][0]["currentValue"] == "read-only"
    assert above["error"]["code"] == -32602 and unknown["error"]["code"] == -32602
    assert "yolo" in unknown["error"]["message"]
    assert models["configOptions"][0]["currentValue"] == "read-only"  # unchanged by refusals
    assert models["configOptions"][1]["currentValue"] == model
    [told] = [
        u for u in agent.updates(sid, every=True) if u["sessionUpdate"] == "config_option_update"
    ]
    assert [o["configId"] for o in told["configOptions"]] == ["mode", "model"]  # the whole config
    assert told["configOptions"][0]["currentValue"] == "read-only"  # the mode change, told
    assert check_all(agent.received, agent.sent, version=2) == []


async def test_auth_login_checks_the_provider_key_server_side(tmp_path, env):
    login = {"methodId": "provider-key"}
    async with running(env, init=False) as agent:
        init = await v2_initialize(agent)
        ok = await agent.call("auth/login", login)
        odd = await agent.request("auth/login", {"methodId": "oauth"})
        out = await agent.call("auth/logout", {})
    assert [m["methodId"] for m in init["authMethods"]] == ["provider-key"]
    assert init["authMethods"][0]["type"] == "agent"
    assert ok == {} and out == {}
    assert odd["error"]["code"] == -32602 and odd["error"]["data"] == {"field": "methodId"}
    assert check_all(agent.received, agent.sent, version=2) == []
    keyless = agent_env(tmp_path / "home2", LLM_PROVIDER="OPENAI")
    async with running(keyless, init=False) as agent:
        await v2_initialize(agent)
        missing = await agent.request("auth/login", login)
    assert missing["error"]["code"] == -32000
    assert missing["error"]["data"]["variables"] == ["OPENAI_API_KEY"]
    assert "OPENAI_API_KEY" in missing["error"]["message"]
    assert check_all(agent.received, agent.sent, version=2) == []


async def _ask_user_turn(
    env: dict[str, str],
    ws: Any,
    fake_llm: Any,
    capabilities: dict[str, Any],
    method: str,
    answer: Any,
) -> tuple[AgentProcess, dict[str, Any], str]:
    """A turn whose model calls ask_user, the question answered by `answer`; the agent,
    the question's request and what the tool told the model."""
    question = {"question": "Tabs or spaces?"}
    fake_llm.reply(tool_calls=[FakeToolCall("ask_user", question, id="q1")])
    fake_llm.reply(text=["ok"])

    async def reply(message: dict[str, Any]) -> Any:
        return answer

    async with running(env, init=False) as agent:
        agent.handlers[method] = reply
        await v2_initialize(agent, capabilities)
        sid = (await agent.call("session/new", {"cwd": str(ws)}))["sessionId"]
        await agent.call("session/prompt", {"sessionId": sid, "prompt": [_text("ask")]})
        await idle(agent, sid)
    [asked] = [m for m in agent.agent_requests if m["method"] == method]
    final = [u for u in agent.updates(sid) if u.get("toolCallId") == "q1"][-1]
    assert states(agent, sid) == ["running", "requires_action", "running", "idle"]
    return agent, asked, final["content"][0]["content"]["text"]


FORMS = {"elicitation": {"form": {}}}


async def test_ask_user_is_a_form_elicitation_where_the_client_takes_them(env, ws, fake_llm):
    accepted = {"action": "accept", "content": {"answer": "spaces"}}
    agent, asked, told = await _ask_user_turn(
        env, ws, fake_llm, FORMS, "elicitation/create", accepted
    )
    params = asked["params"]
    assert params["mode"] == "form" and params["message"] == "Tabs or spaces?"
    assert params["requestedSchema"]["required"] == ["answer"]
    assert told == "spaces"
    assert check_all(agent.received, agent.sent, version=2) == []


async def test_a_declined_elicitation_tells_the_model_the_user_is_unavailable(env, ws, fake_llm):
    agent, _, told = await _ask_user_turn(
        env, ws, fake_llm, FORMS, "elicitation/create", {"action": "decline"}
    )
    assert told == "(user unavailable)"
    assert check_all(agent.received, agent.sent, version=2) == []


async def test_without_elicitation_ask_user_is_the_vendor_request_as_in_v1(env, ws, fake_llm):
    agent, asked, told = await _ask_user_turn(
        env, ws, fake_llm, {}, "_agentao.cn/ask_user", {"answer": "tabs"}
    )
    assert asked["params"]["question"] == "Tabs or spaces?" and told == "tabs"
    assert not [m for m in agent.agent_requests if m["method"] == "elicitation/create"]


async def test_a_prompt_refused_before_insertion_is_an_error_reply_and_inserts_nothing(env, ws):
    image = {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}
    async with running(env, init=False) as agent:
        await v2_initialize(agent)
        sid = (await agent.call("session/new", {"cwd": str(ws)}))["sessionId"]
        refused = await agent.request("session/prompt", {"sessionId": sid, "prompt": [image]})
        unknown = await agent.request(
            "session/prompt", {"sessionId": "nope", "prompt": [_text("x")]}
        )
    assert refused["error"]["code"] == -32602
    assert refused["error"]["data"]["reason"] == "images_unsupported"
    assert unknown["error"]["code"] == -32002
    assert states(agent, sid) == []  # nothing started, nothing inserted
    assert not [u for u in agent.updates(sid) if u["sessionUpdate"] == "user_message_chunk"]
    assert check_all(agent.received, agent.sent, version=2) == []


# ---- tool_call/cancel: one tool stopped, the turn going on (agent/stoppable.py) ----------

HOLD = "exec 3>held.fifo; echo started >&3; sleep 60"  # holds the FIFO open while it runs


def _final(agent: AgentProcess, sid: str, call_id: str) -> dict[str, Any]:
    return [u for u in agent.updates(sid) if u.get("toolCallId") == call_id][-1]


def _cancel_offered(message: dict[str, Any]) -> bool:
    update = message.get("params", {}).get("update", {})
    return bool(update.get("capabilities", {}) or {}) and update.get("toolCallId") == "s1"


def _read_to_eof(fd: int) -> bytes:
    """Everything written to the FIFO until its last writer is gone (blocking)."""
    seen = b""
    while chunk := os.read(fd, 4096):
        seen += chunk
    return seen


async def test_tool_call_cancel_stops_a_running_shell_command_and_the_turn_goes_on(
    env, ws, fake_llm, sandbox
):
    fifo = ws / "held.fifo"
    os.mkfifo(fifo)
    fake_llm.reply(tool_calls=[FakeToolCall("run_shell_command", {"command": HOLD}, id="s1")])
    fake_llm.reply(text=["stopped"])
    async with running(env, init=False) as agent:
        agent.handlers["session/request_permission"] = choose("allow")
        await v2_initialize(agent)
        sid = (await agent.call("session/new", {"cwd": str(ws)}))["sessionId"]
        await agent.call("session/prompt", {"sessionId": sid, "prompt": [_text("hold it")]})
        held = await asyncio.to_thread(os.open, fifo, os.O_RDONLY)  # meets the command's end
        try:
            started = await asyncio.to_thread(os.read, held, 64)  # the command runs
            offered = await agent.wait_for(_cancel_offered)
            accepted = await agent.call("tool_call/cancel", {"sessionId": sid, "toolCallId": "s1"})
            rest = await asyncio.to_thread(_read_to_eof, held)  # EOF: every writer killed
        finally:
            os.close(held)
        end = await idle(agent, sid)
    assert started == b"started\n" and rest == b""
    assert offered["params"]["update"]["status"] == "in_progress"
    assert offered["params"]["update"]["capabilities"] == {"cancel": {}}
    assert accepted == {}
    final = _final(agent, sid, "s1")
    assert final["status"] == "cancelled" and final["capabilities"] is None
    assert end["stopReason"] == "end_turn"  # the turn went on: the model answered after
    told = str(fake_llm.requests[-1].body["messages"])
    assert "the user stopped this tool call" in told
    assert states(agent, sid) == ["running", "requires_action", "running", "idle"]
    assert check_all(agent.received, agent.sent, version=2) == []
    async with running(env) as v1:  # v1 has no "cancelled": its replay says "failed"
        await v1.call("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
    assert [u for u in v1.updates(sid) if u.get("toolCallId") == "s1"][-1]["status"] == "failed"
    assert check_all(v1.received, v1.sent, version=1) == []


async def test_tool_call_cancel_refuses_an_unknown_a_waiting_and_a_final_call(env, ws, fake_llm):
    fake_llm.reply(tool_calls=[FakeToolCall("run_shell_command", {"command": SHELL}, id="s1")])
    fake_llm.reply(text=["after"])
    asked, answer, held_permission = held_permission_answer()

    async with running(env, init=False) as agent:
        agent.handlers["session/request_permission"] = held_permission
        await v2_initialize(agent)
        sid = (await agent.call("session/new", {"cwd": str(ws)}))["sessionId"]
        cancel = {"sessionId": sid, "toolCallId": "s1"}
        await agent.call("session/prompt", {"sessionId": sid, "prompt": [_text("run")]})
        await asked.wait()
        waiting = await agent.request("tool_call/cancel", cancel)
        unknown = await agent.request("tool_call/cancel", {**cancel, "toolCallId": "nope"})
        answer.set()
        end = await idle(agent, sid)
        final = await agent.request("tool_call/cancel", cancel)
    assert [r["error"]["code"] for r in (waiting, unknown, final)] == [-32602] * 3
    reasons = [r["error"]["data"]["reason"] for r in (waiting, unknown, final)]
    assert reasons == ["not_cancellable", "unknown", "final"]
    assert _final(agent, sid, "s1")["status"] == "completed"  # control: refusals stop nothing
    assert end["stopReason"] == "end_turn" and (ws / "made.txt").exists()
    assert check_all(agent.received, agent.sent, version=2) == []


async def test_a_tool_that_cannot_stop_never_advertises_cancel(env, ws, fake_llm):
    write = {"file_path": "a.txt", "content": "x\n"}
    fake_llm.reply(tool_calls=[FakeToolCall("write_file", write, id="w1")])
    fake_llm.reply(text=["done"])
    async with running(env, init=False) as agent:
        await v2_initialize(agent)
        sid = (await agent.call("session/new", {"cwd": str(ws)}))["sessionId"]
        await agent.call("session/prompt", {"sessionId": sid, "prompt": [_text("write")]})
        await idle(agent, sid)
    writes = [u for u in agent.updates(sid) if u.get("toolCallId") == "w1"]
    assert writes[-1]["status"] == "completed"
    assert not [u for u in writes if "capabilities" in u]


# ---- unstable methods served: session/fork, auth/status -------------------------------------


async def test_fork_is_a_new_session_with_the_stored_history_and_the_source_untouched(
    env, ws, fake_llm
):
    fake_llm.reply(text=["first answer"])
    source = await _one_turn(env, ws, "first question")
    fake_llm.reply(text=["fork answer"])
    async with running(env, init=False) as agent:
        init = await v2_initialize(agent)
        fork = await agent.call("session/fork", {"sessionId": source, "cwd": str(ws)})
        fid = fork["sessionId"]
        await agent.call("session/prompt", {"sessionId": fid, "prompt": [_text("on the fork")]})
        await idle(agent, fid)
        told = str(fake_llm.requests[-1].body["messages"])
        elsewhere = await agent.request("session/fork", {"sessionId": source, "cwd": "/"})
        unknown = await agent.request("session/fork", {"sessionId": "nope", "cwd": str(ws)})
        listed = await agent.call("session/list", {})
        back = {"sessionId": source, "cwd": str(ws), "replayFrom": {"type": "start"}}
        await agent.call("session/resume", back)
    assert init["capabilities"]["session"]["fork"]["_meta"]
    assert fid != source and [o["configId"] for o in fork["configOptions"]] == ["mode", "model"]
    assert "first question" in told and "first answer" in told  # the model sees the history
    assert {s["sessionId"] for s in listed["sessions"]} == {source, fid}
    replayed = [u["content"]["text"] for u in agent.updates(source) if "content" in u]
    assert replayed == ["first question", "first answer"]  # the source: only its own turn
    assert elsewhere["error"]["code"] == -32602 and elsewhere["error"]["data"]["field"] == "cwd"
    assert unknown["error"]["code"] == -32002
    assert check_all(agent.received, agent.sent, version=2) == []


async def test_auth_status_says_whether_the_provider_key_resolves(tmp_path, env):
    async with running(env, init=False) as agent:
        init = await v2_initialize(agent)
        configured = await agent.call("auth/status", {})
    assert init["capabilities"]["auth"] == {"status": {}}
    assert configured["state"] == "authenticated"
    assert [a["label"] for a in configured["accounts"]] == [
        "OPENAI API key (from the agent's environment)"
    ]
    assert "test-key" not in str(agent.received)  # the key itself never travels
    assert check_all(agent.received, agent.sent, version=2) == []
    keyless = agent_env(tmp_path / "home2", LLM_PROVIDER="OPENAI")
    async with running(keyless, init=False) as agent:
        await v2_initialize(agent)
        missing = await agent.call("auth/status", {})
    assert missing == {"state": "unauthenticated"}
    scripted = agent_env(tmp_path / "home3", LLM_PROVIDER="SCRIPTED", AGENTAO_SCRIPT="/dev/null")
    async with running(scripted, init=False) as agent:
        await v2_initialize(agent)
        needless = await agent.call("auth/status", {})
    assert needless == {"state": "not_required"}


async def test_session_status_is_open_with_its_state_now_or_saved(env, ws, fake_llm):
    fake_llm.reply(text=["answer"])
    stored = await _one_turn(env, ws, "question")
    _shell_turn(fake_llm)
    asked, answer, held_permission = held_permission_answer()

    async with running(env, init=False) as agent:
        agent.handlers["session/request_permission"] = held_permission
        init = await v2_initialize(agent)
        saved = await agent.call("session/status", {"sessionId": stored})
        sid = (await agent.call("session/new", {"cwd": str(ws)}))["sessionId"]
        fresh = await agent.call("session/status", {"sessionId": sid})
        await agent.call("session/prompt", {"sessionId": sid, "prompt": [_text("run it")]})
        await asked.wait()
        waiting = await agent.call("session/status", {"sessionId": sid})
        answer.set()
        await idle(agent, sid)
        done = await agent.call("session/status", {"sessionId": sid})
        unknown = await agent.request("session/status", {"sessionId": "nope"})
    assert init["capabilities"]["session"]["status"] == {}
    assert saved == {"status": "saved"}
    assert fresh == {"status": "open"}  # no finished turn: no state to name
    assert waiting == {"status": "open", "state": {"state": "requires_action"}}
    assert done == {"status": "open", "state": {"state": "idle", "stopReason": "end_turn"}}
    assert unknown["error"]["code"] == -32002
    assert check_all(agent.received, agent.sent, version=2) == []


def held_permission_answer() -> tuple[asyncio.Event, asyncio.Event, Any]:
    """A permission handler that allows once `answer` is set: (asked, answer, handler)."""
    asked, answer = asyncio.Event(), asyncio.Event()

    async def held_permission(message: dict[str, Any]) -> dict[str, Any]:
        asked.set()
        await answer.wait()
        return {"outcome": {"outcome": "selected", "optionId": "allow"}}

    return asked, answer, held_permission
