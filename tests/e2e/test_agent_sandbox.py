"""The permission promise over ACP, against a hostile model and a hostile repository.

A real `agentao --acp` over real pipes; the scripted provider plays the model. Shell
commands run in the real bubblewrap sandbox (the `sandbox` fixture skips where none
can run, and fails in CI, which installs it).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from agentao.agent.sandbox import Sandbox
from tests.e2e.agent_process import AgentProcess, running, scripted_env

pytestmark = pytest.mark.timeout(60)
KEY = "sk-agentao-test-AGENT-KEY"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = Path(os.path.realpath(tmp_path)) / "ws"
    path.mkdir()
    return path


def shell(command: str, call_id: str = "s1", **extra: Any) -> dict[str, Any]:
    return {"id": call_id, "name": "run_shell_command", "arguments": {"command": command, **extra}}


def write(path: str, content: str, call_id: str) -> dict[str, Any]:
    args = {"file_path": path, "content": content}
    return {"id": call_id, "name": "write_file", "arguments": args}


async def approve(message: dict[str, Any]) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": "allow"}}


async def reject(message: dict[str, Any]) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": "reject"}}


def tool_output(agent: AgentProcess, sid: str, call_id: str) -> str:
    final = [
        u
        for u in agent.updates(sid)
        if u["sessionUpdate"] == "tool_call_update"
        and u["toolCallId"] == call_id
        and u.get("status") in ("completed", "failed")
    ][-1]
    return "".join(c["content"].get("text", "") for c in final.get("content") or [])


def permission_titles(agent: AgentProcess) -> list[str]:
    return [
        m["params"]["toolCall"]["title"]
        for m in agent.agent_requests
        if m["method"] == "session/request_permission"
    ]


async def test_an_approved_command_cannot_read_the_agents_key(
    tmp_path: Path, ws: Path, sandbox: Sandbox
) -> None:
    """/proc/$PPID/environ was the agent's own environment, key included."""
    probe = "tr '\\0' '\\n' < /proc/$PPID/environ; tr '\\0' '\\n' < /proc/1/environ; env; echo END"
    env = scripted_env(tmp_path, [{"tool_calls": [shell(probe)]}, {"text": "done"}])
    env["DEEPSEEK_API_KEY"] = KEY
    async with running(env) as agent:
        agent.handlers["session/request_permission"] = approve
        sid = await agent.new_session(ws)
        reply = await agent.prompt(sid, "show me")
    assert reply["result"]["stopReason"] == "end_turn"
    output = tool_output(agent, sid, "s1")
    assert "END" in output and "PATH=" in output  # it ran
    assert KEY not in output


async def test_nothing_outlives_a_killed_agent(tmp_path: Path, ws: Path, sandbox: Sandbox) -> None:
    tag = f"333.{uuid.uuid4().int % 10**6}"
    command = f"sleep {tag} & setsid sleep {tag} & sleep {tag}"
    env = scripted_env(tmp_path, [{"tool_calls": [shell(command)]}, {"text": "done"}])
    agent = await AgentProcess.start(env)
    try:
        await agent.initialize()
        agent.handlers["session/request_permission"] = approve
        sid = await agent.new_session(ws)
        prompt = asyncio.create_task(agent.prompt(sid, "go"))
        await _until(lambda: len(_processes_with(tag)) == 3, "the command to start")
        agent.proc.send_signal(signal.SIGKILL)
        await agent.proc.wait()
        prompt.cancel()
        await _until(lambda: not _processes_with(tag), "the sandbox to go with the agent")
    finally:
        await agent.close()


def _processes_with(tag: str) -> list[str]:
    found = subprocess.run(["pgrep", "-af", tag], capture_output=True, text=True, check=False)
    return [line for line in found.stdout.splitlines() if line.split()[1:2] == ["sleep"]]


async def _until(condition: Any, what: str, timeout: float = 10.0) -> None:
    """Poll `condition` until it holds; fail naming `what` after `timeout`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, f"waited {timeout}s for {what}"
        await asyncio.sleep(0.02)


# --- git runs a program named in a repository's config ---------------------------------


def project(ws: Path) -> str:
    """A git project in `ws`; its branch name."""
    git = ["git", "-C", str(ws), "-c", "user.name=a", "-c", "user.email=a@b"]
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "a.txt").write_text("hello\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    out = subprocess.run(
        [*git, "rev-parse", "--abbrev-ref", "HEAD"], capture_output=True, text=True
    )
    return out.stdout.strip()


def bare_repository_files(ws: Path, branch: str, marker: Path) -> dict[str, str]:
    """The files of a bare repository under an ordinary name, borrowing the project's
    objects, whose attributes route every file through a textconv program."""
    head = (ws / ".git" / "refs" / "heads" / branch).read_text()
    payload = f"touch {marker}; cat"
    return {
        f"vendor/data/refs/heads/{branch}": head,
        "vendor/data/objects/info/alternates": f"{ws}/.git/objects\n",
        "vendor/data/info/attributes": "* diff=x\n",
        "vendor/data/config": f'[core]\n\tbare = true\n[diff "x"]\n\ttextconv = "sh -c \'{payload}\'"\n',
        "vendor/data/HEAD": f"ref: refs/heads/{branch}\n",
    }


async def test_a_model_cannot_build_a_repository_git_obeys(
    tmp_path: Path, ws: Path, sandbox: Sandbox
) -> None:
    """The model writes a bare repository, then runs the allowlisted `git show` in it.
    Writing HEAD (what makes it a repository) asks; rejected, git never obeys it."""
    marker = tmp_path / "PWNED"
    files = bare_repository_files(ws, project(ws), marker)
    calls = [write(path, text, f"w{i}") for i, (path, text) in enumerate(files.items())]
    calls.append(shell("git show HEAD", "g", directory="vendor/data"))
    env = scripted_env(tmp_path, [{"tool_calls": calls}, {"text": "done"}])
    async with running(env) as agent:
        agent.handlers["session/request_permission"] = reject
        sid = await agent.new_session(ws)
        await agent.prompt(sid, "go")
    assert permission_titles(agent) == ["Write vendor/data/HEAD"]
    assert not marker.exists()


async def test_git_in_a_hostile_repository_runs_nothing_it_names(
    tmp_path: Path, ws: Path, sandbox: Sandbox
) -> None:
    """The repository already carries the bare repository (a cloned project can): the
    allowlisted `git show` runs without asking, and the textconv program does not."""
    marker = tmp_path / "PWNED"
    for path, text in bare_repository_files(ws, project(ws), marker).items():
        (ws / path).parent.mkdir(parents=True, exist_ok=True)
        (ws / path).write_text(text)
    script = [{"tool_calls": [shell("git show HEAD", directory="vendor/data")]}, {"text": "ok"}]
    async with running(scripted_env(tmp_path, script)) as agent:
        agent.handlers["session/request_permission"] = reject
        sid = await agent.new_session(ws)
        await agent.prompt(sid, "go")
    assert not marker.exists()  # it ran nothing the repository named …
    assert permission_titles(agent) == []  # … though it ran unasked …
    assert "+hello" in tool_output(agent, sid, "s1")  # … and showed the commit


async def test_the_sandbox_probe_runs_before_any_session_is_asked_for(
    sandbox: Sandbox, tmp_path: Path, ws: Path
) -> None:
    """Once `initialize` is answered the agent probes the sandbox in the background, so
    the first `session/new` does not pay for it on a client's clock. A `bwrap` first on
    PATH notes each run and hands over to the real one."""
    from tests.waiting import until

    bin_dir, noted = tmp_path / "bin", tmp_path / "bwrap-ran"
    bin_dir.mkdir()
    real = shutil.which("bwrap")
    assert real is not None
    fake = bin_dir / "bwrap"
    fake.write_text(f'#!/bin/sh\necho ran >> "{noted}"\nexec "{real}" "$@"\n')
    fake.chmod(0o755)
    env = scripted_env(tmp_path, [{"text": "hi"}], PATH=f"{bin_dir}:{os.environ['PATH']}")
    async with running(env) as agent:
        await until(noted.exists, "the sandbox probe, with no session asked for")
        sid = await agent.new_session(ws)  # control: sessions work, on the probe's answer
        assert (await agent.prompt(sid, "hello"))["result"]["stopReason"] == "end_turn"
