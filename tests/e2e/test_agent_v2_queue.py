"""A v2 `session/prompt` sent while a turn runs is held, as codex-acp 2.6.0 holds it: the
official TypeScript SDK's v2 client (tests/peers/v2_client.mjs `--together`) sends three
prompts at once to `agentao --acp` over real pipes, with the fake LLM holding the first
turn until the agent has read all three (the client's `session/list` barrier, then a FIFO).

What codex-acp 2.6.0 does, watched on its wire against the fake LLM: a held prompt's reply
`{messageId}` comes only at its insertion, after the previous turn's idle `state_update`
(then `running`, its `user_message_chunk`, the reply); `session/cancel` answers every held
prompt -32800 ("cancelled before the prompt was inserted") and ends the running turn idle
`cancelled`. Our agent does the same, bounded by AGENTAO_PROMPT_QUEUE_DEPTH (one more is
v1's -32600 "busy"). Our client too: while its turn runs, two raw `session/prompt`s are held
and run after it in order; its `session.cancel()` drops them."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from agentao.client import AgentCommand, Client, TurnEnd
from tests.e2e.agent_process import agent_env
from tests.e2e.test_v2_peers import run_client, states, updates
from tests.fakes.fake_llm import FakeLLM, FakeReply
from tests.npm_peers import NpmPeers, codex_env
from tests.schema_check import check_recording

pytestmark = pytest.mark.timeout(90)
OUR_AGENT = [sys.executable, "-m", "agentao", "--acp"]
PROMPTS = ("first", "second", "third")


def together(
    peers: NpmPeers, tmp_path: Path, fake: FakeLLM, *args: str, **env: str
) -> list[dict[str, Any]]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    prompts = [arg for prompt in PROMPTS for arg in ("--prompt", prompt)]
    agent = agent_env(tmp_path / "home", **fake.env(), **env)
    return run_client(peers, OUR_AGENT, "--cwd", str(ws), "--together", *prompts, *args, env=agent)


def release_at_barrier(tmp_path: Path, gate: threading.Event) -> tuple[str, threading.Thread]:
    """A FIFO the client writes once the agent has read every prompt; reading it lets the
    held first turn end (`gate`)."""
    fifo = tmp_path / "barrier.fifo"
    os.mkfifo(fifo)

    def wait_then_release() -> None:
        fifo.read_text()
        gate.set()

    thread = threading.Thread(target=wait_then_release, daemon=True)
    thread.start()
    return str(fifo), thread


def prompt_replies(lines: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """Each `session/prompt`'s reply (result or error), with its position on the wire."""
    ids = [m["msg"]["id"] for m in lines if m["msg"].get("method") == "session/prompt"]
    return [
        (n, m["msg"])
        for n, m in enumerate(lines)
        if m["dir"] == "recv" and m["msg"].get("id") in ids and "method" not in m["msg"]
    ]


def asked(fake: FakeLLM) -> list[str]:
    return [r.body["messages"][-1]["content"] for r in fake.requests]


def test_three_prompts_at_once_run_in_order_one_turn_each(
    v2_peers: NpmPeers, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    gate = fake_llm.hold("one")
    fake_llm.reply("two")
    fake_llm.reply("three")
    fifo, _ = release_at_barrier(tmp_path, gate)
    lines = together(v2_peers, tmp_path, fake_llm, "--barrier", fifo)

    assert check_recording(lines, 2) == []
    replies = prompt_replies(lines)
    assert [("result" in reply) for _, reply in replies] == [True, True, True], replies
    assert asked(fake_llm) == list(PROMPTS)
    assert states(lines) == ["running", "idle"] * 3
    echoed = [u for u in updates(lines) if u["sessionUpdate"] == "user_message_chunk"]
    assert [u["content"]["text"] for u in echoed] == list(PROMPTS)
    assert [u["messageId"] for u in echoed] == [r["result"]["messageId"] for _, r in replies]
    # a held prompt is answered at its insertion: after the turn before it went idle
    idles = [n for n, m in enumerate(lines) if _is_idle(m)]
    assert replies[1][0] > idles[0] and replies[2][0] > idles[1]


def test_cancel_answers_the_held_prompts_and_ends_the_running_turn(
    v2_peers: NpmPeers, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.hold("never sent")
    lines = together(v2_peers, tmp_path, fake_llm, "--cancel-at-barrier")

    assert check_recording(lines, 2) == []
    (_, first), *held = prompt_replies(lines)
    assert "result" in first
    assert [reply["error"]["code"] for _, reply in held] == [-32800, -32800], held
    assert held[0][1]["error"]["data"]["reason"] == "cancelled_before_insertion"
    assert states(lines) == ["running", "idle"] and updates(lines)[-1]["stopReason"] == "cancelled"
    assert asked(fake_llm) == ["first"]  # the held prompts never reached the model


def test_a_prompt_beyond_the_queue_depth_is_busy(
    v2_peers: NpmPeers, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    gate = fake_llm.hold("one")
    fake_llm.reply("two")
    fifo, _ = release_at_barrier(tmp_path, gate)
    lines = together(
        v2_peers, tmp_path, fake_llm, "--barrier", fifo, AGENTAO_PROMPT_QUEUE_DEPTH="1"
    )

    assert check_recording(lines, 2) == []
    replies = [reply for _, reply in prompt_replies(lines)]
    refused = [r for r in replies if "error" in r]
    assert len(replies) == 3 and len(refused) == 1
    assert refused[0]["error"]["code"] == -32600 and refused[0]["error"]["data"]["reason"] == "busy"
    assert asked(fake_llm) == ["first", "second"]
    assert states(lines) == ["running", "idle"] * 2


def _is_idle(line: dict[str, Any]) -> bool:
    msg = line["msg"]
    if line["dir"] != "recv" or msg.get("method") != "session/update":
        return False
    update = msg["params"]["update"]
    return update["sessionUpdate"] == "state_update" and update["state"] == "idle"


# --- our client (agentao.client) over v2 ------------------------------------------------
# Its own `session.prompt(p, queue=True)` keeps a line in the client (queued.py: it works
# with any agent); here the held prompts are sent as raw requests while its turn runs, so
# the agent's holding is what is tested.


def _ours(tmp_path: Path, fake: FakeLLM) -> AgentCommand:
    return AgentCommand.ours(env={"AGENTAO_HOME": str(tmp_path / "home"), **fake.env()})


def _raw_prompt(client: Client, session_id: str, words: str) -> asyncio.Future[Any]:
    params = {"sessionId": session_id, "prompt": [{"type": "text", "text": words}]}
    return asyncio.ensure_future(client.request("session/prompt", params))


async def _ends(turn: Any) -> list[TurnEnd]:
    return [event async for event in turn if isinstance(event, TurnEnd)]


async def test_our_client_three_prompts_at_once_run_in_order_one_turn_each(
    tmp_path: Path, ws: Path, fake_llm: FakeLLM
) -> None:
    gate = fake_llm.hold("one")
    fake_llm.reply("two")
    fake_llm.reply("three")
    async with Client(_ours(tmp_path, fake_llm), protocol=2) as client:
        session = await client.new_session(str(ws))
        last_said = asyncio.Event()
        session.watch(lambda u: last_said.set() if u.text == "three" else None)
        first = asyncio.ensure_future(_ends(session.prompt("first")))
        await fake_llm.wait_requests_async(1)
        held = [_raw_prompt(client, session.id, w) for w in ("second", "third")]
        await client.request("session/list", {})  # answered once the agent read them
        assert not any(h.done() for h in held)  # held while the first turn runs
        gate.set()
        (end,) = await first
        acks = [await h for h in held]
        await last_said.wait()
    assert end.stop_reason == "end_turn" and all(a["messageId"] for a in acks)
    assert asked(fake_llm) == list(PROMPTS)
    said = [(i["role"], i["text"]) for i in session.view.items() if i["kind"] == "message"]
    assert said == [
        ("user", "first"), ("agent", "one"), ("user", "second"), ("agent", "two"),
        ("user", "third"), ("agent", "three"),
    ]  # fmt: skip


async def test_our_client_cancel_drops_the_held_prompts(
    tmp_path: Path, ws: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.hold("never sent")
    fake_llm.reply("after")
    async with Client(_ours(tmp_path, fake_llm), protocol=2) as client:
        session = await client.new_session(str(ws))
        first = asyncio.ensure_future(_ends(session.prompt("first")))
        await fake_llm.wait_requests_async(1)
        held = [_raw_prompt(client, session.id, w) for w in ("second", "third")]
        await client.request("session/list", {})
        await session.cancel()
        (end,) = await first
        dropped = await asyncio.gather(*held, return_exceptions=True)
        (again,) = await _ends(session.prompt("again"))  # a prompt after the cancel runs
    assert end.stop_reason == "cancelled" and again.stop_reason == "end_turn"
    assert [getattr(e, "code", e) for e in dropped] == [-32800, -32800]
    assert asked(fake_llm) == ["first", "again"]


# --- the reference: codex-acp 2.6.0 over v2, the same client, the same assertions ---------


def _codex_together(peers: NpmPeers, tmp_path: Path, fake: FakeLLM, *args: str) -> list[Any]:
    # codex asks another model for a session title: answered apart from the turn's queue
    fake.respond = lambda body: FakeReply(["A title"]) if body.get("model") != fake.model else None
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    prompts = [arg for prompt in PROMPTS for arg in ("--prompt", prompt)]
    command = [str(peers.codex_acp)]
    env = codex_env(tmp_path / "codex-home", fake)
    return run_client(peers, command, "--cwd", str(ws), "--together", *prompts, *args, env=env)


def _codex_asked(fake: FakeLLM) -> list[str]:
    """The last user words of each request of codex's turns (not its side requests)."""
    inputs = [r.body["input"] for r in fake.requests if r.body.get("model") == fake.model]
    users = [[i for i in items if i.get("role") == "user"][-1] for items in inputs]
    return [u["content"][-1]["text"] for u in users]


def test_codex_acp_holds_them_the_same_way(
    v2_peers: NpmPeers, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    gate = fake_llm.hold("one")
    fake_llm.reply("two")
    fake_llm.reply("three")
    fifo, _ = release_at_barrier(tmp_path, gate)
    lines = _codex_together(v2_peers, tmp_path, fake_llm, "--barrier", fifo)

    replies = prompt_replies(lines)
    assert [("result" in reply) for _, reply in replies] == [True, True, True], replies
    assert _codex_asked(fake_llm) == list(PROMPTS)
    assert states(lines) == ["running", "idle"] * 3
    idles = [n for n, m in enumerate(lines) if _is_idle(m)]
    assert replies[1][0] > idles[0] and replies[2][0] > idles[1]


def test_codex_acp_answers_held_prompts_minus_32800_on_cancel(
    v2_peers: NpmPeers, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.hold("never sent")
    lines = _codex_together(v2_peers, tmp_path, fake_llm, "--cancel-at-barrier")

    (_, first), *held = prompt_replies(lines)
    assert "result" in first
    assert [reply["error"]["code"] for _, reply in held] == [-32800, -32800], held
    assert states(lines) == ["running", "idle"] and updates(lines)[-1]["stopReason"] == "cancelled"
