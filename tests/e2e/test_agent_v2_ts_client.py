"""The official TypeScript SDK's v2 client (tests/peers/v2_client.mjs) drives our agent,
`agentao --acp` over real pipes with the fake LLM, end to end: a prompt, a permission allowed,
one rejected, a cancel at a permission, a resume with replay in a second agent process, and
a shell command's output live in the client as an agent-owned terminal.
Every line either side wrote validates against the official v2 schema."""

from __future__ import annotations

import base64
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.agent_process import agent_env
from tests.e2e.test_v2_peers import result_of, run_client, states, updates
from tests.fakes.fake_llm import FakeLLM, FakeToolCall
from tests.npm_peers import NpmPeers
from tests.schema_check import check_recording

pytestmark = pytest.mark.timeout(90)
OUR_AGENT = [sys.executable, "-m", "agentao", "--acp"]
SHELL = "touch made.txt"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def drive(peers: NpmPeers, tmp_path: Path, fake: FakeLLM, ws: Path, *args: str) -> list[dict]:
    env = agent_env(tmp_path / "home", **fake.env())
    return run_client(peers, OUR_AGENT, "--cwd", str(ws), *args, env=env)


def shell_turn(fake: FakeLLM) -> None:
    fake.reply(tool_calls=[FakeToolCall("run_shell_command", {"command": SHELL}, id="s1")])
    fake.reply(text=["after"])


def tool_statuses(lines: list[dict[str, Any]]) -> list[str]:
    return [u["status"] for u in updates(lines) if u.get("toolCallId") == "s1"]


def test_a_prompt_and_an_allowed_permission_then_resume_in_a_second_process(
    v2_peers: NpmPeers, tmp_path: Path, fake_llm: FakeLLM, ws: Path
) -> None:
    fake_llm.reply(text=["Hel", "lo"])
    shell_turn(fake_llm)
    lines = drive(v2_peers, tmp_path, fake_llm, ws, "--prompt", "hi", "--prompt", "run it",
                  "--permission", "allow", "--resume")  # fmt: skip

    assert check_recording(lines, 2) == []
    init, _again = result_of(lines, "initialize")
    assert init["info"]["name"] == "agentao" and "session" in init["capabilities"]
    first, second = result_of(lines, "session/prompt")
    echoed = [u for u in updates(lines) if u["sessionUpdate"] == "user_message_chunk"]
    assert [u["messageId"] for u in echoed[:2]] == [first["messageId"], second["messageId"]]
    assert states(lines)[:6] == ["running", "idle", "running", "requires_action", "running", "idle"]
    assert tool_statuses(lines)[-1] == "completed" and (ws / "made.txt").exists()
    resumed_at = next(n for n, m in enumerate(lines) if m["msg"].get("method") == "session/resume")
    replayed = [u for u in updates(lines[resumed_at:]) if "content" in u and "messageId" in u]
    assert [u["content"]["text"] for u in replayed][:2] == ["hi", "Hello"]


def test_a_rejected_permission_runs_nothing(
    v2_peers: NpmPeers, tmp_path: Path, fake_llm: FakeLLM, ws: Path
) -> None:
    shell_turn(fake_llm)
    lines = drive(v2_peers, tmp_path, fake_llm, ws, "--prompt", "run it", "--permission", "reject")

    assert check_recording(lines, 2) == []
    assert states(lines) == ["running", "requires_action", "running", "idle"]
    assert tool_statuses(lines)[-1] == "failed" and not (ws / "made.txt").exists()
    assert updates(lines)[-1]["stopReason"] == "end_turn"


def test_a_cancel_at_a_permission_ends_the_turn_cancelled(
    v2_peers: NpmPeers, tmp_path: Path, fake_llm: FakeLLM, ws: Path
) -> None:
    shell_turn(fake_llm)
    lines = drive(v2_peers, tmp_path, fake_llm, ws, "--prompt", "run it", "--permission", "cancel")

    assert check_recording(lines, 2) == []
    assert "session/cancel" in [m["msg"].get("method") for m in lines if m["dir"] == "send"]
    end = [u for u in updates(lines) if u["sessionUpdate"] == "state_update"][-1]
    assert end["state"] == "idle" and end["stopReason"] == "cancelled"
    assert not (ws / "made.txt").exists()


def test_a_shell_command_streams_live_into_the_clients_terminal(
    v2_peers: NpmPeers, tmp_path: Path, fake_llm: FakeLLM, ws: Path, sandbox: object
) -> None:
    """The command waits on a FIFO that the TS client writes only once it got the
    command's first `terminal_output_chunk`: the command ending proves the output was live."""
    gate = ws / "gate.fifo"
    os.mkfifo(gate)
    command = 'echo live-output; read line < gate.fifo; echo "after $line"'
    fake_llm.reply(tool_calls=[FakeToolCall("run_shell_command", {"command": command}, id="s1")])
    fake_llm.reply(text=["done"])
    lines = drive(v2_peers, tmp_path, fake_llm, ws, "--prompt", "run it",
                  "--permission", "allow", "--release-on-output", str(gate))  # fmt: skip

    assert check_recording(lines, 2) == []
    kinds = [u["sessionUpdate"] for u in updates(lines)]
    first_chunk = kinds.index("terminal_output_chunk")
    output = b"".join(
        base64.b64decode(u["data"])
        for u in updates(lines)
        if u["sessionUpdate"] == "terminal_output_chunk"
    )
    assert output == b"live-output\nafter released\n"
    terminal = [u for u in updates(lines) if u["sessionUpdate"] == "terminal_update"]
    assert terminal[-1]["exitStatus"] == {"exitCode": 0}
    assert kinds.index("terminal_update") < first_chunk  # the terminal exists first
    assert tool_statuses(lines)[-1] == "completed"
    assert updates(lines)[-1]["stopReason"] == "end_turn"


def test_the_clients_terminal_cancel_stops_the_command_and_the_turn_goes_on(
    v2_peers: NpmPeers, tmp_path: Path, fake_llm: FakeLLM, ws: Path, sandbox: object
) -> None:
    """At the command's first output the TS client stops its terminal with the SDK's
    `cancelTerminal` (which sends it only to a terminal advertising `capabilities.cancel`):
    the command, which would sleep a minute, dies by a signal, and the model answers after."""
    command = "echo live-output; sleep 60"
    fake_llm.reply(tool_calls=[FakeToolCall("run_shell_command", {"command": command}, id="s1")])
    fake_llm.reply(text=["stopped"])
    lines = drive(v2_peers, tmp_path, fake_llm, ws, "--prompt", "run it",
                  "--permission", "allow", "--cancel-terminal-on-output")  # fmt: skip

    assert check_recording(lines, 2) == []
    sent = [line["msg"] for line in lines if line["msg"].get("method") == "terminal/cancel"]
    assert len(sent) == 1, sent
    terminal = [u for u in updates(lines) if u["sessionUpdate"] == "terminal_update"]
    assert terminal[-1]["exitStatus"] == {"signal": "SIGTERM"}
    assert tool_statuses(lines)[-1] == "failed"  # a command killed by a signal
    assert updates(lines)[-1]["stopReason"] == "end_turn"
    assert "stopped by the user" in str(fake_llm.requests[-1].body["messages"])
