"""agentao.client against scripted fake agents: real subprocesses over real pipes.

Each fake (tests/fakes/fake_agents/scenario.py) misbehaves the way real agents
do; the client must log, not crash, and deliver everything in order.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from agentao.client import (
    AgentCommand,
    AgentDisconnected,
    AgentError,
    AgentStartError,
    Client,
    ClientPolicy,
    ClientTimeout,
    Handlers,
    HandshakeError,
    PermissionDecision,
    ProtocolViolation,
    Timeouts,
    TurnEnd,
    Update,
)

FAKES = Path(__file__).resolve().parent.parent / "fakes" / "fake_agents"
pytestmark = pytest.mark.timeout(60)


def fake(*args: str) -> AgentCommand:
    return AgentCommand((sys.executable, str(FAKES / "scenario.py"), *args))


async def run(session, prompt: str) -> list:
    return [event async for event in session.prompt(prompt)]


def texts(events) -> list[str]:
    return [e.text for e in events if isinstance(e, Update) and e.text is not None]


def report(events):
    """The JSON the fake agent reported back in its last chunk."""
    return json.loads(texts(events)[-1])


@pytest.fixture
async def session(tmp_path):
    async with Client(fake()) as client:
        yield await client.new_session(str(tmp_path))


async def test_hello(session):
    events = await run(session, "hello")
    assert texts(events) == ["hello"]
    assert isinstance(events[-1], TurnEnd) and events[-1].stop_reason == "end_turn"


async def test_usage_at_the_root_from_other_agents_is_read(session):
    end = (await run(session, "usage"))[-1]
    assert isinstance(end, TurnEnd) and end.stop_reason == "end_turn"
    assert (end.usage.input_tokens, end.usage.output_tokens, end.usage.thought_tokens) == (12, 3, 1)
    assert (await run(session, "hello"))[-1].usage is None


async def test_ten_thousand_updates_arrive_in_order(session):
    events = await run(session, "flood 10000")
    assert texts(events) == [str(i) for i in range(10000)]
    assert isinstance(events[-1], TurnEnd)


async def test_duplicate_tool_call_is_an_upsert(session):
    events = await run(session, "dup-tool")
    kinds = [e.kind for e in events if isinstance(e, Update)]
    assert kinds == ["tool_call", "tool_call", "tool_call_update"]
    state = session.tool_calls["t1"]
    assert (state.title, state.kind, state.status) == ("read thing again", "read", "completed")
    assert state.raw["rawInput"] == {"a": 1}
    assert events[2].tool_call is state
    assert state.call is not None and state.call.tool_call_id == "t1"


async def test_late_update_goes_to_the_next_reader(session):
    arrived = asyncio.Event()  # set while the update is read, in the step that queues it
    session.watch(lambda u: arrived.set() if u.kind == "available_commands_update" else None)
    events = await run(session, "late")
    assert [e.kind for e in events[:-1]] == ["agent_message_chunk"]
    assert isinstance(events[-1], TurnEnd)
    await asyncio.wait_for(arrived.wait(), 10)
    (late,) = session.drain()
    assert late.kind == "available_commands_update"


async def test_late_update_leads_the_next_turn(session):
    await run(session, "late")
    events = await run(session, "hello")
    assert [getattr(e, "kind", None) for e in events] == [
        "available_commands_update",
        "agent_message_chunk",
        None,
    ]


async def test_update_before_the_session_new_answer(tmp_path):
    async with Client(fake("--early-update")) as client:
        session = await client.new_session(str(tmp_path))
        events = await run(session, "hello")
    assert texts(events) == ["early", "hello"]


async def test_unknown_kinds_and_fields_are_kept_raw(session):
    events = await run(session, "unknown")
    unknown, chunk = events[0], events[1]
    assert unknown.kind == "brand_new_kind" and unknown.value is None
    assert unknown.raw == {"sessionUpdate": "brand_new_kind", "payload": {"x": 1}}
    assert chunk.text == "after" and chunk.raw["futureField"] == [1, 2]
    assert chunk.value is not None


@pytest.mark.parametrize(
    ("approve", "kind", "option"),
    [
        ("none", "read", "no"),
        ("reads", "read", "yes"),
        ("reads", "edit", "no"),
        ("all", "execute", "yes"),
    ],
)
async def test_permission_policy(tmp_path, approve, kind, option):
    async with Client(fake(), policy=ClientPolicy(approve=approve)) as client:
        session = await client.new_session(str(tmp_path))
        events = await run(session, f"perm {kind}")
    decision = next(e for e in events if isinstance(e, PermissionDecision))
    assert decision.option_id == option
    answer = report(events)  # what the agent received, as it received it
    assert answer["outcome"] == {"outcome": "selected", "optionId": option}
    if option == "yes":
        assert "_meta" not in answer
    else:  # a rejection tells the agent why, in `_meta`
        assert answer["_meta"] == {"agentao.cn/reason": decision.reason} and decision.reason
    assert session.denied_permissions == (0 if option == "yes" else 1)


async def test_permission_for_an_unannounced_tool_call(tmp_path):
    async with Client(fake(), policy=ClientPolicy(approve="reads")) as client:
        session = await client.new_session(str(tmp_path))
        events = await run(session, "perm-unannounced")
    decision = next(e for e in events if isinstance(e, PermissionDecision))
    assert decision.approved and decision.request.kind == "read"
    assert session.tool_calls["ghost"].kind == "read"


async def test_request_ids_zero_and_strings(tmp_path):
    async with Client(fake(), policy=ClientPolicy(approve="all")) as client:
        session = await client.new_session(str(tmp_path))
        events = await run(session, "ids")
    assert report(events) == [{"outcome": {"outcome": "selected", "optionId": "yes"}}] * 2


async def test_crash_mid_turn_fails_the_turn_promptly(session):
    seen = []
    with pytest.raises(AgentDisconnected) as err:
        async for event in session.prompt("crash"):
            seen.append(event)
    assert texts(seen) == ["about to crash"]
    assert err.value.exit_code == 3
    assert "crashed on purpose" in err.value.stderr_tail


async def test_agent_error_keeps_its_code(session):
    seen = []
    with pytest.raises(AgentError) as err:
        async for event in session.prompt("error"):
            seen.append(event)
    assert texts(seen) == ["failing"]
    assert err.value.code == -32603 and "fell over" in err.value.message
    assert texts(await run(session, "hello")) == ["hello"]  # the session lives on


async def test_a_prompt_answer_without_stop_reason_is_a_violation(session):
    with pytest.raises(ProtocolViolation, match="stopReason"):
        await session.prompt("no-stop").run()
    assert texts(await run(session, "hello")) == ["hello"]


async def test_silent_agent_times_out_the_handshake():
    silent = AgentCommand((sys.executable, "-c", "import time; time.sleep(30)"))
    client = Client(silent, timeouts=Timeouts(handshake=0.3, eof_grace=0.1, term_grace=0.5))
    with pytest.raises(ClientTimeout) as err:
        await client.start()
    assert err.value.name == "handshake" and err.value.seconds == 0.3
    assert client.exit_code is not None  # start() shut it down


async def test_cancel_mid_stream(session):
    turn = session.prompt("hang")
    events = []
    async for event in turn:
        events.append(event)
        if getattr(event, "text", None) == "working":
            await turn.cancel()
    assert texts(events) == ["working", "stopping"]  # updates after cancel still arrive
    assert events[-1].stop_reason == "cancelled" and not events[-1].forced


async def test_cancel_mid_permission_answers_cancelled(tmp_path):
    asked = asyncio.Event()

    async def never(request):
        asked.set()
        await asyncio.sleep(3600)

    handlers = Handlers(permission=never)
    async with Client(fake(), handlers=handlers) as client:
        session = await client.new_session(str(tmp_path))
        turn = session.prompt("perm-hang")
        collector = asyncio.ensure_future(_collect(turn))
        await asyncio.wait_for(asked.wait(), 10)
        await turn.cancel()
        events = await asyncio.wait_for(collector, 10)
    decision = next(e for e in events if isinstance(e, PermissionDecision))
    assert decision.option_id is None and decision.cancelled_by_turn
    assert report(events) == {"outcome": {"outcome": "cancelled"}}
    assert events[-1].stop_reason == "cancelled"
    assert session.denied_permissions == 0


async def test_agent_that_ignores_cancel_is_cut_off(tmp_path):
    async with Client(fake(), timeouts=Timeouts(cancel_grace=0.3)) as client:
        session = await client.new_session(str(tmp_path))
        turn = session.prompt("ignore-cancel")
        events = []
        async for event in turn:
            events.append(event)
            if getattr(event, "text", None) == "working":
                await turn.cancel()
    assert events[-1].stop_reason == "cancelled" and events[-1].forced


async def test_fs_read_write_through_the_agent(tmp_path):
    (tmp_path / "hello.txt").write_text("one\ntwo\nthree\n")
    async with Client(fake()) as client:
        session = await client.new_session(str(tmp_path))
        read = report(await run(session, f"fs-read {tmp_path}/hello.txt 2 1"))
        missing = report(await run(session, f"fs-read {tmp_path}/new.txt"))
        outside = report(await run(session, "fs-read /etc/hostname"))
        written = report(await run(session, f"fs-write {tmp_path}/sub/out.txt written by agent"))
    assert read == {"content": "two\n"}
    assert missing == {"content": ""}
    assert outside["code"] == -32602 and "outside the session" in outside["message"]
    assert written == {}
    assert (tmp_path / "sub" / "out.txt").read_text() == "written by agent"


async def test_missing_file_as_error(tmp_path):
    async with Client(fake(), policy=ClientPolicy(missing_file="error")) as client:
        session = await client.new_session(str(tmp_path))
        missing = report(await run(session, f"fs-read {tmp_path}/new.txt"))
    assert missing["code"] == -32002 and missing["data"] == {"path": f"{tmp_path}/new.txt"}


async def test_terminal_through_the_agent(tmp_path):
    # Every command is put to the permission policy (tests/e2e/test_client_honest.py).
    async with Client(fake(), policy=ClientPolicy(approve="all")) as client:
        session = await client.new_session(str(tmp_path))
        result = report(await run(session, "term echo terminal-ok"))
    assert result["exit"] == {"exitCode": 0, "signal": None}
    assert result["output"]["output"] == "terminal-ok\n"


async def test_ask_user_callback_and_sentinel(tmp_path):
    async def answer(session_id, question):
        return f"you asked: {question}"

    async with Client(fake(), handlers=Handlers(ask_user=answer)) as client:
        session = await client.new_session(str(tmp_path))
        assert report(await run(session, "ask why?")) == {"answer": "you asked: why?"}
    async with Client(fake()) as client:
        session = await client.new_session(str(tmp_path))
        assert report(await run(session, "ask why?")) == {"answer": "(user unavailable)"}


async def test_authentication_when_required(tmp_path):
    async with Client(fake("--auth")) as client:
        with pytest.raises(HandshakeError, match=r"requires authentication.*key"):
            await client.new_session(str(tmp_path))
    async with Client(fake("--auth"), policy=ClientPolicy(auth_method="key")) as client:
        session = await client.new_session(str(tmp_path))
        assert texts(await run(session, "hello")) == ["hello"]


async def test_load_replays_into_the_backlog(tmp_path):
    async with Client(fake()) as client:
        session = await client.load_session("old-session", str(tmp_path))
        assert [e.text for e in session.drain()] == ["replayed"]
        await session.set_mode("plan")
        assert session.current_mode == "plan"
        await session.set_config_option("model", "openai/gpt-4o")
        await session.close()


async def test_one_turn_at_a_time(session):
    turn = session.prompt("hang")
    with pytest.raises(Exception, match="already has a turn"):
        session.prompt("hello")
    await turn.cancel()
    await turn.run()


async def test_start_failures(tmp_path):
    with pytest.raises(AgentStartError, match="cannot start"):
        await Client(AgentCommand(("/no/such/agent",))).start()
    crash = AgentCommand(
        (sys.executable, "-c", "import sys; sys.stderr.write('no key\\n'); sys.exit(2)")
    )
    with pytest.raises(AgentStartError) as err:
        await Client(crash).start()
    assert err.value.exit_code == 2 and "no key" in err.value.stderr_tail


async def test_record_writes_both_directions(tmp_path):
    record = tmp_path / "wire.jsonl"
    async with Client(fake(), record=str(record)) as client:
        session = await client.new_session(str(tmp_path))
        await run(session, "hello")
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [(e["dir"], e["msg"].get("method")) for e in lines][:2] == [
        ("send", "initialize"),
        ("recv", None),
    ]
    assert {"send", "recv"} == {e["dir"] for e in lines}
    assert any(e["msg"].get("method") == "session/update" for e in lines)
    assert all(isinstance(e["t"], float | int) for e in lines)


async def _collect(turn) -> list:
    return [event async for event in turn]


def test_fakes_exist():
    assert os.path.exists(FAKES / "scenario.py")
