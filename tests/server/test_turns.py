"""The server's turns and the client's turn, over in-memory pipes (no process, no OS pipe).

A real `AcpAgent` on a SQLite store in tmp, with the scripted provider, talks to a
real `agentao.client.Client` through `tests/protocol/memory.py` pipes: what one
writes, the other reads. So the turn machinery of both sides is tested as it runs,
in one event loop, without the timing noise of processes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentao.client import AgentError, Client, TurnEnd, Update
from agentao.protocol.endpoint import Endpoint
from agentao.server.agent import AcpAgent
from agentao.server.persistence import SessionArchive
from agentao.server.settings import ServerSettings
from agentao.store.sessions import open_session_store
from tests.protocol.memory import pipe

SLOW = {"match": "slow", "text": {"repeat": "tick ", "count": 400}, "delay": 0.005}
SCRIPT = [
    SLOW,
    {"match": "count", "text": "Counted.", "usage": {"input_tokens": 7, "output_tokens": 2}},
    {"text": "Answer one."},
    {"text": "Answer two."},
    {"text": "Answer three."},
]


class Wired:
    """An agent and a client joined by in-memory pipes."""

    def __init__(self, agent: AcpAgent, client: Client, archive: SessionArchive) -> None:
        self.agent, self.client, self.archive = agent, client, archive


@pytest.fixture
async def wired(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Wired]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": SCRIPT}))
    monkeypatch.setenv("LLM_PROVIDER", "SCRIPTED")
    monkeypatch.setenv("AGENTAO_SCRIPT", str(script))
    monkeypatch.setenv("AGENTAO_HOME", str(tmp_path / "home"))
    store = open_session_store(tmp_path / "agent.sqlite3")
    archive = SessionArchive(store)
    agent = AcpAgent(archive, ServerSettings())
    agent.endpoint = Endpoint(agent, role="agent")
    agent_in, to_agent = pipe()
    client_in, to_client = pipe()
    agent.endpoint.start(agent_in, to_client)
    client = Client()
    await client.start(streams=(client_in, to_agent))
    yield Wired(agent, client, archive)
    to_agent.close()  # EOF both ways, as when a client closes an agent's stdin and it exits
    await agent.shutdown()
    to_client.close()
    await client.close()
    store.db.close()


async def events_of(turn: Any) -> list[Any]:
    return [event async for event in turn]


async def test_every_update_before_the_end_and_the_turn_stored_before_the_reply(
    wired: Wired, tmp_path: Path
) -> None:
    session = await wired.client.new_session(str(tmp_path))
    events = await events_of(session.prompt("count, please"))
    assert isinstance(events[-1], TurnEnd) and events[-1].stop_reason == "end_turn"
    assert all(isinstance(e, Update) for e in events[:-1])
    assert session.view.text == "Counted."
    assert (events[-1].usage.input_tokens, events[-1].usage.output_tokens) == (7, 2)
    stored, _grants = await wired.archive.load(session.id)
    assert [t.prompt for t in stored.turns] == ["count, please"]  # committed before the answer


# Updates about the session rather than a turn: commands after session/new, the context's
# usage after each reply, the title after each turn.
SESSION_KINDS = {"available_commands_update", "usage_update", "session_info_update"}


async def first_of_turn(turn: Any) -> Any:
    """The turn's first event that is not about the session."""
    async for event in turn:
        if not isinstance(event, Update) or event.kind not in SESSION_KINDS:
            return event
    raise AssertionError("the turn ended without an event of its own")


async def test_a_second_prompt_while_one_runs_is_refused_as_busy(
    wired: Wired, tmp_path: Path
) -> None:
    session = await wired.client.new_session(str(tmp_path))
    first = session.prompt("slow")
    await anext(first)  # it runs
    params = {"sessionId": session.id, "prompt": [{"type": "text", "text": "again"}]}
    with pytest.raises(AgentError) as info:
        await wired.client.request("session/prompt", params)
    assert info.value.code == -32600 and info.value.data["reason"] == "busy"
    await session.cancel()
    assert (await first.run()).stop_reason == "cancelled"


async def test_cancel_ends_the_turn_and_stores_what_was_said(wired: Wired, tmp_path: Path) -> None:
    session = await wired.client.new_session(str(tmp_path))
    turn = session.prompt("slow")
    first = await first_of_turn(turn)
    assert first.text == "tick "
    await session.cancel()
    rest = await events_of(turn)
    assert rest[-1].stop_reason == "cancelled" and not rest[-1].forced
    shown = session.view.text
    assert shown.startswith("tick ") and shown.count("tick ") < SLOW["text"]["count"]
    stored, _ = await wired.archive.load(session.id)
    assert stored.turns[-1].stop_reason == "cancelled"
    assert stored.messages[-1].text == shown  # the partial reply is kept, as the user saw it


async def test_a_prompt_right_after_cancel_waits_for_the_turn_then_runs(
    wired: Wired, tmp_path: Path
) -> None:
    session = await wired.client.new_session(str(tmp_path))
    turn = session.prompt("slow")
    await first_of_turn(turn)
    await session.cancel()
    params = {"sessionId": session.id, "prompt": [{"type": "text", "text": "next"}]}
    answer = asyncio.ensure_future(wired.client.request("session/prompt", params))
    assert (await turn.run()).stop_reason == "cancelled"
    assert (await answer)["stopReason"] == "end_turn"  # not refused as busy


async def test_late_updates_wait_for_the_next_reader(wired: Wired, tmp_path: Path) -> None:
    """A mode change sent between turns is kept, in order, for whoever reads next."""
    session = await wired.client.new_session(str(tmp_path))
    await session.set_mode("read-only")
    kinds = [e.kind for e in session.drain() if isinstance(e, Update)]
    assert [k for k in kinds if k not in SESSION_KINDS] == ["current_mode_update"]
    assert session.current_mode == "read-only"
    events = await events_of(session.prompt("hello"))
    kinds = {e.kind for e in events if isinstance(e, Update)} - SESSION_KINDS
    assert kinds == {"agent_message_chunk"}


async def test_a_watcher_sees_every_update_in_order_in_and_out_of_turns(
    wired: Wired, tmp_path: Path
) -> None:
    session = await wired.client.new_session(str(tmp_path))
    session.drain()  # what came before the watcher is not its business
    seen: list[str] = []
    stop = session.watch(lambda update: seen.append(update.kind))
    await session.set_mode("read-only")  # outside a turn: nobody reads the stream
    await anext_update(session, "current_mode_update")
    assert seen == ["current_mode_update"]
    events = await events_of(session.prompt("hello"))
    in_turn = [e.kind for e in events if isinstance(e, Update)]
    assert "agent_message_chunk" in in_turn
    assert seen == ["current_mode_update", *in_turn]  # the same updates, in the same order
    stop()
    await events_of(session.prompt("again"))
    assert seen == ["current_mode_update", *in_turn]  # stopped means stopped


async def anext_update(session: Any, kind: str) -> None:
    """Wait until an update of `kind` is in the session's stream (it arrives on its own)."""
    while not any(isinstance(e, Update) and e.kind == kind for e in session.drain()):
        await session.state.stream.changed()
