"""`Session.steer`: our client sends `_session/steering` to agents that advertise it, in
real processes against the fake LLM whose replies the tests hold (`FakeLLM.hold`).

Our agent (over v1 and v2) and codex-acp 2.6.0 each get the words
in the running turn: they reach that turn's next model request, and the turn ends once.
An agent that does not advertise steering gets nothing: `SteeringUnsupported`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentao.client import AgentCommand, Client, ClientError, SteeringUnsupported, TurnEnd
from tests.fakes.fake_llm import FakeLLM, FakeReply, FakeToolCall
from tests.npm_peers import NpmPeers, codex_env

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    (path / "hello.txt").write_text("hi from file\n")
    return path


def ours(tmp_path: Path, fake: FakeLLM) -> AgentCommand:
    return AgentCommand.ours(env={"AGENTAO_HOME": str(tmp_path / "home"), **fake.env()})


async def ends(turn: Any) -> list[TurnEnd]:
    return [event async for event in turn if isinstance(event, TurnEnd)]


@pytest.mark.parametrize("protocol", [1, 2])
async def test_our_client_steers_our_agent_inside_the_turn(
    tmp_path: Path, ws: Path, fake_llm: FakeLLM, protocol: int
) -> None:
    gate = fake_llm.hold(tool_calls=[FakeToolCall("read_file", {"file_path": "hello.txt"})])
    fake_llm.reply("Done.")
    async with Client(ours(tmp_path, fake_llm), protocol=protocol) as client:
        assert client.supports_steering
        session = await client.new_session(str(ws))
        turn = session.prompt("read hello.txt")
        await fake_llm.wait_requests_async(1)
        assert await session.steer("and then say bye") == "injected"
        gate.set()
        (end,) = await ends(turn)
    assert end.stop_reason == "end_turn" and len(fake_llm.requests) == 2
    assert fake_llm.requests[1].body["messages"][-1] == {
        "role": "user",
        "content": "and then say bye",
    }
    said = [(i["role"], i["text"]) for i in session.view.items() if i["kind"] == "message"]
    assert ("user", "and then say bye") in said


async def test_steering_an_agent_that_does_not_advertise_it_is_refused_here(
    v2_peers: NpmPeers, tmp_path: Path
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [[{"say": ["hi"]}]]}))
    (tmp_path / "state").mkdir()
    command = v2_peers.agent_command("--script", str(script), "--state", str(tmp_path / "state"))
    record = tmp_path / "wire.jsonl"
    async with Client(AgentCommand(tuple(command)), record=str(record)) as client:
        assert not client.supports_steering  # the official SDK's v2 agent does not steer
        session = await client.new_session(str(tmp_path))
        with pytest.raises(SteeringUnsupported):
            await session.steer("anything")
    assert "_session/steering" not in record.read_text()  # nothing was sent


def codex(peers: NpmPeers, tmp_path: Path, fake: FakeLLM) -> AgentCommand:
    # codex asks another model for a session title: answered apart from the turn's queue
    fake.respond = lambda body: FakeReply(["A title"]) if body.get("model") != fake.model else None
    env = codex_env(tmp_path / "codex-home", fake)
    return AgentCommand((str(peers.codex_acp),), env=env, inherit_env=False)


def turn_requests(fake: FakeLLM) -> list[str]:
    """The input of each request of codex's turn (not its side requests), as JSON text."""
    return [
        json.dumps(r.body.get("input")) for r in fake.requests if r.body.get("model") == fake.model
    ]


@pytest.mark.parametrize("protocol", [None, 1])
async def test_our_client_steers_codex_acp(
    v2_peers: NpmPeers, tmp_path: Path, ws: Path, fake_llm: FakeLLM, protocol: int | None
) -> None:
    gate = fake_llm.hold("Working on it.")
    fake_llm.reply("Bye now.")
    async with Client(codex(v2_peers, tmp_path, fake_llm), protocol=protocol) as client:
        assert client.supports_steering
        session = await client.new_session(str(ws))
        turn = session.prompt("say hello")
        await fake_llm.wait_requests_async(1)
        while not turn_requests(fake_llm):  # a side request (the title) may come first
            await fake_llm.wait_requests_async(len(fake_llm.requests) + 1)
        assert await session.steer("and then say bye") == "injected"
        gate.set()
        (end,) = await ends(turn)
    assert end.stop_reason == "end_turn"
    first, *later = turn_requests(fake_llm)
    assert "and then say bye" not in first
    assert later and "and then say bye" in later[0]


async def test_prompts_queued_in_the_client_run_in_order_after_the_turn(
    tmp_path: Path, ws: Path, fake_llm: FakeLLM
) -> None:
    gate = fake_llm.hold("one")
    fake_llm.reply("two")
    fake_llm.reply("three")
    async with Client(ours(tmp_path, fake_llm)) as client:
        session = await client.new_session(str(ws))
        first = session.prompt("first")
        await fake_llm.wait_requests_async(1)
        later = [session.prompt(w, queue=True) for w in ("second", "third")]
        with pytest.raises(ClientError):
            session.prompt("not queued")
        gate.set()
        stops = [(await ends(t))[0].stop_reason for t in (first, *later)]
    assert stops == ["end_turn"] * 3
    asked = [r.body["messages"][-1]["content"] for r in fake_llm.requests]
    assert asked == ["first", "second", "third"]


async def test_cancel_drops_the_prompts_queued_in_the_client(
    tmp_path: Path, ws: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.hold("never sent")
    fake_llm.reply("after")
    async with Client(ours(tmp_path, fake_llm)) as client:
        session = await client.new_session(str(ws))
        first = session.prompt("first")
        await fake_llm.wait_requests_async(1)
        queued = session.prompt("second", queue=True)
        await session.cancel()
        stops = [(await ends(t))[0].stop_reason for t in (first, queued)]
        again = await ends(session.prompt("again"))
    assert stops == ["cancelled", "cancelled"] and again[0].stop_reason == "end_turn"
    asked = [r.body["messages"][-1]["content"] for r in fake_llm.requests]
    assert asked == ["first", "again"]  # the dropped prompt never went to the agent
