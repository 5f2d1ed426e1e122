"""An honest client: it serves only what it advertised, and runs no command unasked.

The attack: an agent (a remote one over `agentao run --agent ws://…`, or any
command) sends `terminal/create` without asking permission first, or calls a
method the client never offered. The fake agent (tests/fakes/fake_agents/
scenario.py, `run-unasked`) does exactly that, as a real subprocess; MARKER
shows whether anything ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentao.client import (
    AgentCommand,
    Client,
    ClientPolicy,
    Handlers,
    PermissionDecision,
    PermissionRequest,
    Update,
)
from tests.e2e.test_cli_run import in_a_terminal

FAKE = Path(__file__).resolve().parent.parent / "fakes" / "fake_agents" / "scenario.py"
pytestmark = pytest.mark.timeout(60)
METHOD_NOT_FOUND, COMMAND_REFUSED = -32601, -32003
REFUSED = "the client's policy refused to run the command"


def fake() -> AgentCommand:
    return AgentCommand((sys.executable, str(FAKE)))


def touch(marker: Path) -> str:
    """The `run-unasked` prompt for `sh -c 'touch MARKER'`."""
    return "run-unasked " + json.dumps({"command": "sh", "args": ["-c", f"touch {marker}"]})


def agentao_run(workspace: Path, prompt: str, *flags: str) -> tuple[int, list[dict]]:
    """`agentao run --json` against the fake agent: exit code and its events."""
    argv = [sys.executable, "-m", "agentao", "run", "--json", "--agent", f"{sys.executable} {FAKE}"]
    result = subprocess.run(
        [*argv, "--cwd", str(workspace), *flags, prompt],
        capture_output=True,
        text=True,
        timeout=50,
        env=os.environ,
    )
    events = [json.loads(line) for line in result.stdout.splitlines()]
    return result.returncode, events


def reported(events: list[dict]):
    """What the fake agent reported back: the JSON in its last text chunk (CLI events)."""
    chunks = [e for e in events if e["type"] == "update"]
    return json.loads(chunks[-1]["update"]["content"]["text"])


async def prompt(session, text: str) -> tuple[object, list]:
    """One turn through the library: the agent's report and every event."""
    events = [event async for event in session.prompt(text)]
    chunks = [e.text for e in events if isinstance(e, Update) and e.text is not None]
    return json.loads(chunks[-1]), events


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


# ---- agentao run: the permission policy decides terminal/create ------------------------------


@pytest.mark.parametrize("flags", [(), ("--approve", "reads")])  # () is the default: none
def test_run_refuses_an_unasked_command(workspace, flags):
    marker = workspace / "MARKER"
    code, events = agentao_run(workspace, touch(marker), *flags)
    answer = reported(events)["create"]
    assert answer["code"] == COMMAND_REFUSED and REFUSED in answer["message"]
    assert answer["data"]["command"] == "sh" and answer["data"]["cwd"] == str(workspace)
    assert not marker.exists()
    decisions = [e for e in events if e["type"] == "permission"]
    assert [d["approved"] for d in decisions] == [False]
    assert code == 3  # a permission was needed and rejected


def test_run_with_approve_all_runs_the_command(workspace):
    """The control: the same request, where the policy allows it."""
    marker = workspace / "MARKER"
    code, events = agentao_run(workspace, touch(marker), "--approve", "all")
    assert code == 0
    assert reported(events)["exit"]["exitCode"] == 0
    assert marker.exists()


@pytest.mark.parametrize(("answer", "runs"), [(b"1", True), (b"2", False)])
def test_run_with_approve_ask_shows_the_command_and_its_cwd(workspace, answer, runs):
    marker = workspace / "MARKER"
    argv = ["run", "--approve", "ask", "--agent", f"{sys.executable} {FAKE}"]
    text, code = in_a_terminal(
        [*argv, "--cwd", str(workspace), touch(marker)], answer=(b"Choose", answer + b"\r")
    )
    asked = text.split("Choose")[0]
    assert f"Run: sh -c 'touch {marker}'" in asked.replace("\r\n", "")
    assert f"in {workspace}" in asked
    assert marker.exists() is runs
    assert code == 0  # a rejection the person chose is not a failure (issue 23)


# ---- the library: one handler decides both -----------------------------------------------


@pytest.mark.parametrize(("choice", "runs"), [("allow", True), ("reject", False)])
async def test_a_custom_permission_handler_decides_terminal_create(workspace, choice, runs):
    marker = workspace / "MARKER"
    seen: list[PermissionRequest] = []

    async def handler(request: PermissionRequest) -> str:
        seen.append(request)
        return choice

    async with Client(fake(), handlers=Handlers(permission=handler)) as client:
        session = await client.new_session(str(workspace))
        result, events = await prompt(session, touch(marker))
    (request,) = seen
    assert request.kind == "execute" and request.title == f"Run: sh -c 'touch {marker}'"
    raw_input = {"command": "sh", "args": ["-c", f"touch {marker}"], "cwd": str(workspace)}
    assert request.tool_call["rawInput"] == raw_input
    assert [d.approved for d in events if isinstance(d, PermissionDecision)] == [runs]
    assert marker.exists() is runs
    assert ("exit" in result) is runs


# ---- not advertised, not served ------------------------------------------------------------


@pytest.mark.parametrize("approve", ["all", "none"])
async def test_terminal_not_advertised_is_not_found(workspace, approve):
    marker = workspace / "MARKER"
    policy = ClientPolicy(approve=approve, terminal=False)  # type: ignore[arg-type]
    async with Client(fake(), policy=policy) as client:
        session = await client.new_session(str(workspace))
        caps, _ = await prompt(session, "caps")
        result, events = await prompt(session, touch(marker))
        others, _ = await prompt(session, "term-others")
    assert caps["terminal"] is False
    assert result["create"]["code"] == METHOD_NOT_FOUND
    assert not marker.exists()
    assert not [e for e in events if isinstance(e, PermissionDecision)]  # nobody was asked
    assert set(others.values()) == {METHOD_NOT_FOUND}


async def test_terminal_advertised_is_served(workspace):
    """The control: advertised, the other terminal methods answer (an unknown id: -32602)."""
    async with Client(fake(), policy=ClientPolicy(approve="all")) as client:
        session = await client.new_session(str(workspace))
        caps, _ = await prompt(session, "caps")
        others, _ = await prompt(session, "term-others")
    assert caps["terminal"] is True
    assert set(others.values()) == {-32602}


@pytest.mark.parametrize("advertised", [False, True])
async def test_file_reads_only_when_advertised(workspace, advertised):
    (workspace / "secret.txt").write_text("the secret\n")
    policy = ClientPolicy(approve="all", files="read" if advertised else "none")
    async with Client(fake(), policy=policy) as client:
        session = await client.new_session(str(workspace))
        caps, _ = await prompt(session, "caps")
        result, _ = await prompt(session, f"fs-read {workspace}/secret.txt")
    assert caps["fs"]["readTextFile"] is advertised
    if advertised:
        assert result == {"content": "the secret\n"}
    else:
        assert result["code"] == METHOD_NOT_FOUND and "the secret" not in json.dumps(result)


@pytest.mark.parametrize("advertised", [False, True])
async def test_file_writes_only_when_advertised(workspace, advertised):
    target = workspace / "written.txt"
    policy = ClientPolicy(approve="all", files="read-write" if advertised else "read")
    async with Client(fake(), policy=policy) as client:
        session = await client.new_session(str(workspace))
        caps, _ = await prompt(session, "caps")
        result, _ = await prompt(session, f"fs-write {target} by the agent")
    assert caps["fs"]["writeTextFile"] is advertised
    if advertised:
        assert result == {} and target.read_text() == "by the agent"
    else:
        assert result["code"] == METHOD_NOT_FOUND and not target.exists()


def test_the_ask_prompt_shows_the_command_as_text_not_markup(workspace):
    """An agent must not hide part of a command line from the person it asks: rich markup
    in the command (`[conceal]`) is printed literally."""
    marker = workspace / "MARKER"
    hidden = {"command": "sh", "args": ["-c", f"touch {marker}", "[conceal]rm -rf ~[/conceal]"]}
    argv = ["run", "--approve", "ask", "--agent", f"{sys.executable} {FAKE}"]
    text, code = in_a_terminal(
        [*argv, "--cwd", str(workspace), "run-unasked " + json.dumps(hidden)],
        answer=(b"Choose", b"2\r"),
    )
    assert "[conceal]rm -rf ~[/conceal]" in text.split("Choose")[0].replace("\r\n", "")
    assert not marker.exists() and code == 0  # the person rejected it: not a failure
