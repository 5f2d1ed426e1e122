"""todo_write (a plan update, not a tool call) and ask_user (the sentinel passes through)."""

from __future__ import annotations

from pathlib import Path

from agentao.agent.events import PlanChanged, PlanEntry, TextOutput, ToolCallFinished
from agentao.agent.providers import ToolResultMessage
from agentao.agent.tools.ask_user import AskUserTool
from agentao.agent.tools.base import ASK_USER_UNAVAILABLE
from agentao.agent.tools.todo import TodoWriteTool
from agentao.agent.turn import run_turn
from tests.agent.test_turn import Human, call, kinds, make_deps, new_session


async def test_todo_write_yields_a_plan_not_a_tool_call(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    todos = [
        {"content": "Write hello.txt", "status": "in_progress", "priority": "high"},
        {"content": "Report", "status": "pending"},
    ]
    deps = make_deps({"tool_calls": [call("todo_write", todos=todos)]}, {"text": "ok"},
                     tools=(TodoWriteTool(),))  # fmt: skip
    events = [e async for e in run_turn(session, "go", deps)]
    plan = (PlanEntry("Write hello.txt", "in_progress", "high"), PlanEntry("Report"))
    assert events[0] == PlanChanged(plan)
    assert kinds(events) == ["PlanChanged", "TextDelta", "TurnEnded"]
    assert session.plan == plan
    told = session.messages[2]
    assert told.text == "Plan updated: 2 items (1 pending, 1 in_progress)." and not told.is_error


async def test_todo_write_rejects_bad_statuses_and_tells_the_model(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    todos = [{"content": "x", "status": "done"}]
    deps = make_deps({"tool_calls": [call("todo_write", todos=todos)]}, {"text": "oops"},
                     tools=(TodoWriteTool(),))  # fmt: skip
    events = [e async for e in run_turn(session, "go", deps)]
    assert kinds(events) == ["TextDelta", "TurnEnded"] and session.plan == ()
    told = session.messages[2]
    assert (
        told.is_error
        and "todos[0].status must be one of pending, in_progress, completed" in told.text
    )


async def test_ask_user_passes_the_unavailable_sentinel_as_is(tmp_path: Path) -> None:
    session, human = new_session(tmp_path), Human(answer=ASK_USER_UNAVAILABLE)
    deps = make_deps({"tool_calls": [call("ask_user", question="Which file?")]}, {"text": "ok"},
                     tools=(AskUserTool(),), human=human)  # fmt: skip
    events = [e async for e in run_turn(session, "go", deps)]
    assert human.questions == ["Which file?"]
    assert events[0].kind == "other" and events[0].title == "Ask: Which file?"
    finished = next(e for e in events if isinstance(e, ToolCallFinished))
    assert finished.content == (TextOutput(ASK_USER_UNAVAILABLE),)
    assert session.messages[2] == ToolResultMessage(
        "c_ask_user_1", "ask_user", ASK_USER_UNAVAILABLE
    )
