"""AgentSession: committed turns, replay, and the JSON round trip the store relies on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentao.agent.config import LlmConfig
from agentao.agent.events import (
    DiffOutput,
    Location,
    PlanChanged,
    PlanEntry,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
    Usage,
    UserText,
)
from agentao.agent.providers import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from agentao.agent.session import ROOT_KEY, AgentSession, TurnRecord
from agentao.agent.tools.todo import TodoWriteTool
from agentao.agent.turn import run_turn
from tests.agent.test_turn import Echo, call, make_deps, new_session


async def played_session(tmp_path: Path) -> AgentSession:
    session = new_session(tmp_path)
    session.additional_dirs = (tmp_path / "lib",)
    todos = [{"content": "echo", "status": "in_progress", "priority": "high"}]
    deps = make_deps(
        {"thought": "plan", "tool_calls": [call("todo_write", todos=todos)]},
        {"text": "now echo", "tool_calls": [call("echo", text="hi")]},
        {"text": "all done", "usage": {"input_tokens": 5, "output_tokens": 2}},
        tools=(Echo(), TodoWriteTool()),
    )
    [e async for e in run_turn(session, "first", deps)]
    session.tool_state["counter"] = 1
    session.tool_state["not json"] = object()  # stored as its string, never a failed save
    session.meta["mcp"] = "fingerprint"
    return session


async def test_round_trip_through_json(tmp_path: Path) -> None:
    session = await played_session(tmp_path)
    data = json.loads(json.dumps(session.to_dict()))
    loaded = AgentSession.from_dict(data)
    assert loaded.turns == session.turns
    assert loaded.messages == session.messages
    assert loaded.plan == session.plan == (PlanEntry("echo", "in_progress", "high"),)
    assert (loaded.id, loaded.cwd, loaded.additional_dirs) == (
        session.id,
        tmp_path,
        (tmp_path / "lib",),
    )
    assert loaded.tool_state["counter"] == 1 and isinstance(loaded.tool_state["not json"], str)
    pinned = {ROOT_KEY: str(session.pin_roots().cwd)}  # where the cwd resolved at open
    assert loaded.meta == {"mcp": "fingerprint", **pinned}
    assert loaded.model_value == "scripted/test"
    assert loaded.to_dict() == data


async def test_store_pieces_rebuild_the_session(tmp_path: Path) -> None:
    session = await played_session(tmp_path)
    turns = [json.loads(json.dumps(t.to_dict())) for t in session.turns]
    state = json.loads(json.dumps(session.state_dict()))
    loaded = AgentSession.from_dict({"id": "s1", "cwd": str(tmp_path), **state, "turns": turns})
    assert loaded.messages == session.messages and loaded.plan == session.plan


async def test_replay_is_what_the_user_saw(tmp_path: Path) -> None:
    session = await played_session(tmp_path)
    replay = list(session.replay())
    assert [type(e).__name__ for e in replay] == [
        "UserText", "ThoughtDelta", "PlanChanged", "TextDelta", "ToolCallStarted",
        "ToolCallFinished", "TextDelta",
    ]  # fmt: skip
    assert replay[0] == UserText("first") and replay[-1] == TextDelta(
        "\n\nall done"
    )  # a new paragraph
    assert session.turns[0].events[-1] == TurnEnded("end_turn", Usage(5, 2, 7))


def test_every_event_and_output_type_survives() -> None:
    events = (
        ToolCallStarted(
            "c", "write_file", "Write a", "edit", {"type": "raw"}, (Location("/a", 3),)
        ),
        ToolCallFinished("c", "completed", (DiffOutput("/a", None, "x"),), {"type": "x", "n": [1]}),
        PlanChanged((PlanEntry("p"),)),
    )
    messages = (
        UserMessage("u"),
        AssistantMessage("", (ToolCall("c", "write_file", {"type": "not a tag"}),)),
        ToolResultMessage("c", "write_file", "ok"),
    )
    record = TurnRecord("u", messages, events, "end_turn")
    assert TurnRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record


def test_a_records_fields_are_listed_once_per_class_not_per_commit(monkeypatch) -> None:
    """Every turn is encoded as it commits: its classes' fields are looked up once per
    process, and what is encoded is the same every time (a class, a path, tuples in the
    tool's own data kept as they are)."""
    from agentao.agent import session as session_module

    record = TurnRecord(
        "u",
        (UserMessage("u"), AssistantMessage("", (ToolCall("c", "x", {"t": (1, Path("/p"))}),))),
        (PlanChanged((PlanEntry("p"),)), TurnEnded("end_turn", Usage(5, 2, 7))),
        "end_turn",
    )
    first = record.to_dict()  # this process's lookups, if no test made them yet
    listed: list[object] = []
    real = session_module.fields
    monkeypatch.setattr(session_module, "fields", lambda cls: listed.append(cls) or real(cls))
    assert record.to_dict() == first and listed == []
    assert first["messages"][1]["tool_calls"][0]["arguments"] == {"t": [1, "/p"]}
    assert session_module.encode(AgentSession) == str(AgentSession)  # a class is no record


def test_a_newer_format_is_refused(tmp_path: Path) -> None:
    data = AgentSession.new(tmp_path, LlmConfig("OPENAI", "gpt-4o", "sk-secret")).to_dict()
    assert data["provider_id"] == "OPENAI" and "sk-secret" not in json.dumps(data)  # no key stored
    with pytest.raises(ValueError, match="newer"):
        AgentSession.from_dict(data | {"version": 99})
