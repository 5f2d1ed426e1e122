"""commands.py: which prompts are commands, and /clear."""

from __future__ import annotations

from pathlib import Path

from agentao.agent.commands import COMMANDS, clear_context, parse_command, say
from agentao.agent.events import PlanChanged, PlanEntry, TurnEnded
from agentao.agent.session import AgentSession
from tests.agent.test_turn import make_deps, new_session, run


def test_commands_are_parsed_others_are_prompts() -> None:
    assert {c.name for c in COMMANDS} >= {"compact", "model", "mode", "init", "clear"}
    model = parse_command("  /model openai/gpt-4o ")
    assert model is not None and (model.name, model.argument) == ("model", "openai/gpt-4o")
    assert parse_command("/COMPACT").name == "compact"
    assert parse_command("/usr/bin/env is what?") is None  # a path, not a command
    assert parse_command("please /compact") is None


async def test_clear_starts_a_fresh_context_and_keeps_the_history(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    await run(session, make_deps({"text": "one"}), "first")
    session.plan = (PlanEntry("x"),)
    events = clear_context(session, "/clear")
    assert isinstance(events[-1], TurnEnded) and PlanChanged(()) in events
    assert session.messages == [] and session.plan == ()
    assert [t.prompt for t in session.turns] == ["first", "/clear"]
    await run(session, make_deps({"text": "two"}), "second")
    assert [m.text for m in session.messages][:1] == ["second"]
    loaded = AgentSession.from_dict(session.to_dict())
    assert loaded.messages == session.messages


def test_say_is_a_turn_the_model_never_sees(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    say(session, "/mode plan", "Mode: plan")
    assert session.messages == [] and session.turns[-1].prompt == "/mode plan"
    assert session.title is None  # a command is no title
