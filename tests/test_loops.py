"""The event loop each process runs (agentao/loops.py): asyncio's unless AGENTAO_EVENT_LOOP says
uvloop, for `agentao --acp` and `agentao serve` as real processes too.

Which loop a process runs is read from the process itself: uvloop's extension module is
mapped into its memory (/proc/<pid>/maps) only once a loop of it was asked for (nothing
else imports it), and the process then ends on SIGINT / EOF as it must.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import uvloop

from agentao import loops
from agentao.cli.question import read_line
from tests.e2e.agent_process import running, scripted_env
from tests.gateway.conftest import served_config

LISTENING = "agentao serve: listening on http://127.0.0.1:"


def uvloop_mapped(pid: int) -> bool:
    """Whether uvloop's compiled loop is loaded in process `pid`."""
    return "uvloop" in Path(f"/proc/{pid}/maps").read_text()


def test_asyncio_is_the_default() -> None:
    assert loops.event_loop_name({}) == loops.ASYNCIO
    assert loops.loop_factory({}) is None


def test_uvloop_when_the_setting_says_so() -> None:
    assert loops.event_loop_name({loops.EVENT_LOOP_ENV: "uvloop"}) == loops.UVLOOP
    assert loops.loop_factory({loops.EVENT_LOOP_ENV: " UVLoop "}) is uvloop.new_event_loop
    assert loops.loop_factory({loops.EVENT_LOOP_ENV: "asyncio"}) is None


def test_a_setting_that_names_no_loop_is_refused_naming_it() -> None:
    with pytest.raises(loops.EventLoopSettingError, match="AGENTAO_EVENT_LOOP='tokio'"):
        loops.event_loop_name({loops.EVENT_LOOP_ENV: "tokio"})


def test_run_runs_on_the_chosen_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    async def kind() -> type:
        return type(asyncio.get_running_loop())

    monkeypatch.delenv(loops.EVENT_LOOP_ENV, raising=False)
    assert not issubclass(loops.run(kind()), uvloop.Loop)
    monkeypatch.setenv(loops.EVENT_LOOP_ENV, "uvloop")
    assert issubclass(loops.run(kind()), uvloop.Loop)
    monkeypatch.setenv(loops.EVENT_LOOP_ENV, "nope")
    with pytest.raises(SystemExit, match="agentao: AGENTAO_EVENT_LOOP='nope'"):
        loops.run(kind())


@pytest.mark.parametrize("choice", ["", "uvloop"])
async def test_the_agent_process_runs_the_chosen_loop(tmp_path: Path, choice: str) -> None:
    env = scripted_env(tmp_path, [], **({loops.EVENT_LOOP_ENV: choice} if choice else {}))
    async with running(env) as agent:
        # initialize is answered before the loop runs (server/main.py): a session is on it.
        await agent.call("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        assert uvloop_mapped(agent.proc.pid) == (choice == "uvloop")


@pytest.mark.parametrize("choice", ["", "uvloop"])
def test_serve_runs_the_chosen_loop_and_stops_on_sigint(tmp_path: Path, choice: str) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(served_config(tmp_path))
    env = {**os.environ, "AGENTAO_HOME": str(tmp_path / "home")}
    env.pop(loops.EVENT_LOOP_ENV, None)
    if choice:
        env[loops.EVENT_LOOP_ENV] = choice
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentao", "serve", "--config", str(config), "--port", "0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if line.startswith(LISTENING):
                break
        else:
            raise AssertionError("agentao serve exited:\n" + "".join(seen))
        assert uvloop_mapped(proc.pid) == (choice == "uvloop")
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0


def test_serve_refuses_a_loop_it_cannot_run(tmp_path: Path) -> None:
    env = {**os.environ, "AGENTAO_HOME": str(tmp_path / "home"), loops.EVENT_LOOP_ENV: "tokio"}
    done = subprocess.run(
        [sys.executable, "-m", "agentao", "serve", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("agentao serve: AGENTAO_EVENT_LOOP='tokio' names no event loop")


def test_a_question_read_on_uvloop_leaves_the_terminal_blocking() -> None:
    """The terminal's open file is the shell's too (`agentao run --approve ask` under bash,
    tests/e2e/test_cli_run_terminal.py): left non-blocking, the shell's next read fails."""
    reader, writer = os.pipe()
    try:
        os.write(writer, b"1\n")
        os.environ[loops.EVENT_LOOP_ENV] = "uvloop"
        try:
            assert loops.run(read_line(reader)) == "1"
        finally:
            del os.environ[loops.EVENT_LOOP_ENV]
        assert os.get_blocking(reader)
    finally:
        os.close(reader)
        os.close(writer)


def test_a_terminal_is_left_blocking_as_found_whatever_read_it() -> None:
    """`loops.run` puts a terminal on stdin back as it found it: prompt_toolkit (the
    interactive `agentao`) reads it with `add_reader` too, which uvloop leaves non-blocking."""
    main, side = os.openpty()
    try:
        script = (
            "import asyncio, os\n"
            "os.environ['AGENTAO_EVENT_LOOP'] = 'uvloop'\n"
            "from agentao import loops\n"
            "async def read():\n"
            "    asyncio.get_running_loop().add_reader(0, lambda: None)\n"
            "    return os.get_blocking(0)\n"
            "print(loops.run(read()))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", script], stdin=side, capture_output=True, text=True, timeout=60
        )
        assert done.stdout.strip() == "False", done.stderr  # uvloop turned blocking off
        assert os.get_blocking(side)  # the same open file, as the shell finds it after
    finally:
        os.close(main)
        os.close(side)
