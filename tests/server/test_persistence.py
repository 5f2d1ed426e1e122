"""AgentSession <-> store rows (server/persistence.py) on a real SQLite file."""

from __future__ import annotations

import pytest

from agentao.agent import events as ev
from agentao.agent.config import LlmConfig
from agentao.agent.permissions import Grant, PermissionEngine
from agentao.agent.providers.messages import AssistantMessage, UserMessage
from agentao.agent.session import AgentSession, TurnRecord
from agentao.server.persistence import CorruptSession, SessionArchive
from agentao.store.sessions import open_session_store


@pytest.fixture
def archive(tmp_path):
    store = open_session_store(tmp_path / "db")
    yield SessionArchive(store)
    store.db.close()


async def test_round_trip_with_turns_mode_and_grants(archive, tmp_path):
    agent = AgentSession.new(tmp_path, LlmConfig("OPENAI", "gpt-4o"), (tmp_path / "extra",))
    engine = PermissionEngine(
        "full-access", grants=[Grant("run_shell_command", command="npm test")]
    )
    await archive.create(agent, engine)
    agent.mode_id = "plan"
    record = TurnRecord(
        "write the plan",
        (UserMessage("write the plan"), AssistantMessage("ok", thought="hmm")),
        (ev.ThoughtDelta("hmm"), ev.TextDelta("ok"), ev.PlanChanged((ev.PlanEntry("a"),)),
         ev.TurnEnded("end_turn")),
        "end_turn",
    )  # fmt: skip
    agent.commit_turn(record, plan=(ev.PlanEntry("a"),))
    await archive.commit_turn(agent, engine)
    loaded, grants = await archive.load(agent.id)
    assert loaded.turns == agent.turns and loaded.messages == agent.messages
    assert loaded.mode_id == "plan" and loaded.plan == (ev.PlanEntry("a"),)
    assert loaded.additional_dirs == (tmp_path / "extra",)
    assert PermissionEngine.from_dict(grants).grants == engine.grants
    [summary], _ = await archive.page(None, None)
    assert summary.title == "write the plan"


async def test_missing_and_corrupt(archive, tmp_path):
    assert await archive.load("nope") is None
    agent = AgentSession.new(tmp_path, LlmConfig("OPENAI", "m"))
    await archive.create(agent, PermissionEngine())
    await archive.store.db.call(
        lambda c: c.execute("UPDATE sessions SET state = '{\"version\": 99}'")
    )
    with pytest.raises(CorruptSession):
        await archive.load(agent.id)
