"""agentao.client driving our own agent (`python -m agentao --acp`, scripted provider).

Real subprocesses over real pipes; the "LLM" is a script file, so every turn
is deterministic and offline. Over ACP v1 (`session/load`, `session/set_mode`, the
`_agentao.cn/set_model` extension, the client's terminal); the same agent over v2, into
the same view, is in tests/e2e/test_client_v2.py.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agentao.client import (
    AgentCommand,
    ClientPolicy,
    Handlers,
    PermissionDecision,
    TurnEnd,
    Update,
)
from agentao.client import Client as _Client
from tests.e2e.agent_process import SESSION_KINDS

ROOT = Path(__file__).resolve().parent.parent.parent
pytestmark = pytest.mark.timeout(60)


def Client(*args: Any, **kwargs: Any) -> _Client:
    """The client told to speak v1 (see the module docstring)."""
    return _Client(*args, protocol=1, **kwargs)


@pytest.fixture
def agent(tmp_path):
    """A factory: our agent playing the given script responses, state in tmp."""
    home = tmp_path / "home"
    home.mkdir()

    def make(responses: list[dict]) -> AgentCommand:
        script = tmp_path / f"script-{len(list(tmp_path.glob('script-*')))}.json"
        script.write_text(json.dumps({"responses": responses}))
        env = {"LLM_PROVIDER": "SCRIPTED", "AGENTAO_SCRIPT": str(script), "AGENTAO_HOME": str(home)}
        return AgentCommand.ours(env=env)

    return make


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return str(ws)


WRITE_AND_RUN = [
    {
        "thought": "Plan, write, run.",
        "text": "On it.",
        "tool_calls": [
            {
                "name": "todo_write",
                "arguments": {"todos": [{"content": "write", "status": "in_progress"}]},
            },
            {"name": "write_file", "arguments": {"file_path": "a.txt", "content": "one\n"}},
        ],
    },
    {
        "tool_calls": [
            {"name": "run_shell_command", "arguments": {"command": "cat a.txt | tr a-z A-Z"}}
        ]
    },
    {"text": "Done."},
]


async def test_a_tool_turn(agent, workspace):
    async with Client(agent(WRITE_AND_RUN), policy=ClientPolicy(approve="all")) as client:
        session = await client.new_session(workspace)
        events = [e async for e in session.prompt("go")]
    kinds = [e.kind for e in events if isinstance(e, Update) and e.kind not in SESSION_KINDS]
    assert kinds[0] == "agent_thought_chunk" and "plan" in kinds and "tool_call" in kinds
    assert (
        "".join(e.text for e in events if isinstance(e, Update) and e.kind == "agent_message_chunk")
        == "On it.\n\nDone."
    )
    write = next(s for s in session.tool_calls.values() if s.kind == "edit")
    assert write.status == "completed"
    assert write.content[0].new_text == "one\n"  # typed: a DiffToolCallContent
    shell = next(s for s in session.tool_calls.values() if s.kind == "execute")
    assert shell.status == "completed" and shell.raw["rawOutput"]["exitCode"] == 0
    # The agent's permission request, then its command in our terminal (put to the policy too).
    decision, command = [e for e in events if isinstance(e, PermissionDecision)]
    assert decision.approved and decision.request.kind == "execute"
    assert command.approved and command.request.title.startswith("Run: ")
    assert isinstance(events[-1], TurnEnd) and events[-1].stop_reason == "end_turn"
    assert read(workspace, "a.txt") == "one\n"


async def test_usage_is_a_typed_field_of_the_turn_end(agent, workspace):
    """Our agent sends usage under _meta; TurnEnd.usage reads it from there."""
    reply = {"text": "x", "usage": {"input_tokens": 7, "output_tokens": 3}}
    async with Client(agent([reply, {"text": "no usage"}])) as client:
        session = await client.new_session(workspace)
        end = await session.prompt("go").run()
        quiet = await session.prompt("again").run()
    assert (end.usage.input_tokens, end.usage.output_tokens, end.usage.total_tokens) == (7, 3, 10)
    assert "usage" not in end.raw and quiet.usage is None


async def test_default_policy_rejects_the_shell(agent, workspace):
    async with Client(agent(WRITE_AND_RUN)) as client:
        session = await client.new_session(workspace)
        events = [e async for e in session.prompt("go")]
    (decision,) = [e for e in events if isinstance(e, PermissionDecision)]
    assert not decision.approved and decision.option_id is not None
    assert session.denied_permissions == 1
    shell = next(s for s in session.tool_calls.values() if s.kind == "execute")
    assert shell.status == "failed"


async def test_cancel_mid_stream(agent, workspace):
    slow = [{"text": {"repeat": "tick ", "count": 500}, "delay": 0.01}]
    async with Client(agent(slow)) as client:
        session = await client.new_session(workspace)
        turn = session.prompt("go")
        seen = 0
        async for event in turn:
            if isinstance(event, Update):
                seen += 1
                if seen == 5:
                    await turn.cancel()
            elif isinstance(event, TurnEnd):
                end = event
    assert end.stop_reason == "cancelled" and not end.forced
    assert seen < 100


async def test_cancel_mid_permission(agent, workspace):
    asked = asyncio.Event()

    async def wait_forever(request):
        asked.set()
        await asyncio.sleep(3600)

    responses = [
        {"tool_calls": [{"name": "run_shell_command", "arguments": {"command": "echo hi > b.txt"}}]}
    ]
    async with Client(agent(responses), handlers=Handlers(permission=wait_forever)) as client:
        session = await client.new_session(workspace)
        turn = session.prompt("go")
        collected = asyncio.ensure_future(_collect(turn))
        await asyncio.wait_for(asked.wait(), 20)
        await turn.cancel()
        events = await asyncio.wait_for(collected, 20)
    (decision,) = [e for e in events if isinstance(e, PermissionDecision)]
    assert decision.cancelled_by_turn and decision.option_id is None
    assert events[-1].stop_reason == "cancelled"
    assert read(workspace, "b.txt") is None


async def test_ask_user_through_the_client(agent, workspace):
    responses = [
        {"tool_calls": [{"name": "ask_user", "arguments": {"question": "Which color?"}}]},
        {"text": "ok"},
    ]

    async def answer(session_id, question):
        return f"blue ({question})"

    async with Client(agent(responses), handlers=Handlers(ask_user=answer)) as client:
        session = await client.new_session(workspace)
        await session.prompt("go").run()
    ask = next(s for s in session.tool_calls.values() if s.title.startswith("Ask"))
    assert ask.raw["rawOutput"] == {"answer": "blue (Which color?)"}


async def test_load_in_a_second_process_replays_history(agent, workspace):
    responses = [
        {"match": "first", "text": "answer one"},
        {"match": "second", "text": "answer two"},
    ]
    command = agent(responses)
    async with Client(command) as client:
        session = await client.new_session(workspace)
        await session.prompt("first").run()
        session_id = session.id
        listed = await client.list_sessions(workspace)
        assert session_id in [s.session_id for s in listed.sessions]
    async with Client(command) as client:
        loaded = await client.load_session(session_id, workspace)
        history = [e for e in loaded.drain() if e.kind not in SESSION_KINDS]
        assert [(e.kind, e.text) for e in history] == [
            ("user_message_chunk", "first"),
            ("agent_message_chunk", "answer one"),
        ]
        events = [e async for e in loaded.prompt("second")]
        assert "".join(e.text or "" for e in events if isinstance(e, Update)) == "answer two"


async def test_resume_mode_and_model(agent, workspace):
    command = agent([{"text": "hi"}])
    async with Client(command) as client:
        session = await client.new_session(workspace)
        session_id = session.id
        await session.prompt("x").run()
    async with Client(command) as client:
        assert client.supports("resume") and client.supports("close")
        resumed = await client.resume_session(session_id, workspace)
        assert turn_updates(resumed.drain()) == []  # resume does not replay
        await resumed.set_mode("read-only")
        assert resumed.current_mode == "read-only"
        assert await resumed.set_model("another-model") == "another-model"
        await resumed.set_config_option("model", "scripted/other")
        await resumed.close()


async def test_close_and_reload_on_one_client(agent, workspace):
    """Closing a session and opening its id again on the same connection, twice: each
    turn after a reload ends (its end position counts the id's updates consistently)."""
    responses = [{"match": f"turn {i}", "text": f"answer {i}"} for i in range(4)]
    async with Client(agent(responses)) as client:
        session = await client.new_session(workspace)
        assert await _texts(session.prompt("turn 0")) == "answer 0"
        session_id = session.id
        for i in (1, 2):
            await session.close()
            session = await client.load_session(session_id, workspace)
            history = turn_updates(session.drain())
            assert [e.text for e in history][-2:] == [f"turn {i - 1}", f"answer {i - 1}"]
            assert await _texts(session.prompt(f"turn {i}")) == f"answer {i}"
        await session.close()
        resumed = await client.resume_session(session_id, workspace)
        assert turn_updates(resumed.drain()) == []
        assert await _texts(resumed.prompt("turn 3")) == "answer 3"


async def test_ten_thousand_updates_from_the_echo_agent(workspace):
    command = AgentCommand((sys.executable, str(ROOT / "examples" / "echo_agent.py")))
    async with Client(command) as client:
        session = await client.new_session(workspace)
        events = [e async for e in session.prompt("chunks 10000")]
    assert [e.text for e in events[:-1]] == [str(i) for i in range(10000)]
    assert events[-1].stop_reason == "end_turn"


def read(*path: str) -> str | None:
    file = Path(*path)
    return file.read_text() if file.exists() else None


async def _collect(turn) -> list:
    return [event async for event in turn]


def turn_updates(events: list) -> list:
    """`events` less the updates about the session (commands, usage, title)."""
    return [e for e in events if e.kind not in SESSION_KINDS]


async def _texts(turn) -> str:
    events = await asyncio.wait_for(_collect(turn), 10)
    assert isinstance(events[-1], TurnEnd) and events[-1].stop_reason == "end_turn"
    return "".join(e.text or "" for e in events if isinstance(e, Update))
