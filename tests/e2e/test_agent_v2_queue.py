"""A v2 `session/prompt` sent while a turn runs is held, as codex-acp 2.6.0 holds it: the
official TypeScript SDK's v2 client (tests/peers/v2_client.mjs `--together`) sends three
prompts at once to `agentao --acp` over real pipes, with the fake LLM holding the first
turn until the agent has read all three (the client's `session/list` barrier, then a FIFO).

What codex-acp 2.6.0 does, watched on its wire against the fake LLM: a held prompt's reply
`{messageId}` comes only at its insertion, after the previous turn's idle `state_update`
(then `running`, its `user_message_chunk`, the reply); `session/cancel` answers every held
prompt -32800 ("cancelled before the prompt was inserted") and ends the running turn idle
`cancelled`. Our agent does the same, bounded by AGENTAO_PROMPT_QUEUE_DEPTH (one more is
v1's -32600 "busy")."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.agent_process import agent_env
from tests.e2e.test_v2_peers import run_client, states, updates
from tests.fakes.fake_llm import FakeLLM
from tests.npm_peers import NpmPeers
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
