"""terminal/* with real processes: output, limits, exit status, kill, release."""

from __future__ import annotations

import asyncio
import sys

import pytest

from agentao.client.files import Workspace
from agentao.client.terminals import LocalTerminals, Terminal
from agentao.protocol.errors import InvalidParams


@pytest.fixture
def ws(tmp_path):
    return Workspace.of("s1", str(tmp_path))


@pytest.fixture
async def terms():
    terminals = LocalTerminals(term_grace=0.5)
    yield terminals
    await terminals.close()


def py(code: str) -> dict:
    return {"command": sys.executable, "args": ["-c", code]}


async def test_output_and_exit_code(ws, terms):
    tid = await terms.create(
        ws, py("import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)")
    )
    assert await terms.wait_for_exit(ws, tid) == {"exitCode": 3, "signal": None}
    result = await terms.output(ws, tid)
    assert sorted(result["output"].split()) == ["err", "out"]
    assert result["truncated"] is False
    assert result["exitStatus"] == {"exitCode": 3, "signal": None}


async def test_output_while_running_has_no_exit_status(ws, terms):
    tid = await terms.create(ws, py("import time; print('tick', flush=True); time.sleep(30)"))
    await started(terms, ws, tid)
    result = await terms.output(ws, tid)
    assert result == {"output": "tick\n", "truncated": False}
    await terms.kill(ws, tid)
    status = await terms.wait_for_exit(ws, tid)
    assert status == {"exitCode": None, "signal": "SIGTERM"}
    assert (await terms.output(ws, tid))["exitStatus"]["signal"] == "SIGTERM"


async def test_kill_escalates_to_sigkill(ws, terms):
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(30)"
    tid = await terms.create(ws, py(code))
    await started(terms, ws, tid)
    await terms.kill(ws, tid)
    assert await terms.wait_for_exit(ws, tid) == {"exitCode": None, "signal": "SIGKILL"}


async def test_shell_line_without_args_runs_in_sh(ws, terms):
    tid = await terms.create(ws, {"command": "echo shell-ok && echo $((1+2))"})
    await terms.wait_for_exit(ws, tid)
    assert (await terms.output(ws, tid))["output"] == "shell-ok\n3\n"


async def test_cwd_defaults_to_session_and_must_stay_inside(ws, terms, tmp_path):
    tid = await terms.create(ws, {"command": "pwd"})
    await terms.wait_for_exit(ws, tid)
    assert (await terms.output(ws, tid))["output"].strip() == ws.roots[0]
    with pytest.raises(InvalidParams, match="outside"):
        await terms.create(ws, {"command": "pwd", "cwd": "/"})


async def test_env_variables_are_passed(ws, terms):
    params = {
        **py("import os; print(os.environ['GREETING'])"),
        "env": [{"name": "GREETING", "value": "hi"}],
    }
    tid = await terms.create(ws, params)
    await terms.wait_for_exit(ws, tid)
    assert (await terms.output(ws, tid))["output"] == "hi\n"


async def test_output_byte_limit_truncates_from_the_start(ws, terms):
    params = {**py("print('a' * 10 + 'b' * 10, end='')"), "outputByteLimit": 5}
    tid = await terms.create(ws, params)
    await terms.wait_for_exit(ws, tid)
    assert await terms.output(ws, tid) == {
        "output": "bbbbb",
        "truncated": True,
        "exitStatus": {"exitCode": 0, "signal": None},
    }


@pytest.mark.parametrize("limit", range(0, 12))
def test_truncation_lands_on_a_character_boundary(limit):
    term = Terminal("t", "s", proc=None, limit=limit)  # type: ignore[arg-type]
    data = "aé世🎉".encode()  # 1 + 2 + 3 + 4 bytes
    for byte in data:  # worst case: one byte per read
        term.append(bytes([byte]))
    kept = bytes(term.buffer)
    assert len(kept) <= limit
    assert kept.decode("utf-8") == data.decode()[len(data.decode()) - len(kept.decode()) :]
    assert term.truncated == (limit < len(data))


async def test_release_kills_the_whole_group(ws, terms, tmp_path):
    pidfile = tmp_path / "child.pid"
    code = (
        "import subprocess, sys, time;"
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
        f"open({str(pidfile)!r}, 'w').write(str(p.pid)); print('ready', flush=True); time.sleep(60)"
    )
    tid = await terms.create(ws, py(code))
    await started(terms, ws, tid)
    child = int(pidfile.read_text())
    await terms.release(ws, tid)
    for _ in range(100):
        if not _alive(child):
            break
        await asyncio.sleep(0.02)
    assert not _alive(child)
    with pytest.raises(InvalidParams, match="unknown terminal"):
        await terms.output(ws, tid)


async def test_terminals_are_per_session(ws, terms, tmp_path):
    tid = await terms.create(ws, {"command": "true"})
    other = Workspace.of("s2", str(tmp_path))
    with pytest.raises(InvalidParams):
        await terms.output(other, tid)


async def test_unknown_command_is_a_clear_error(ws, terms):
    with pytest.raises(InvalidParams, match="cannot run"):
        await terms.create(ws, {"command": "/no/such/program", "args": ["x"]})


async def started(terms: LocalTerminals, ws: Workspace, tid: str) -> None:
    """Wait until the command printed its first line, whole: unbuffered (PYTHONUNBUFFERED)
    `print` writes a line in two, and under load the first part alone was taken for it."""
    for _ in range(500):
        if "\n" in (await terms.output(ws, tid))["output"]:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the command never printed")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


SECRET = "sk-agentao-test-CLIENT-KEY"


async def test_credentials_stay_out_of_a_terminal(ws, terms, monkeypatch):
    """An agent's command must not print the client's keys into its output (which lands
    in tool results, history and --record files)."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("GITHUB_TOKEN", SECRET)
    monkeypatch.setenv("AGENTAO_VISIBLE", "yes")
    params = {"command": "env", "env": [{"name": "SET_BY_AGENT", "value": "1"}]}
    tid = await terms.create(ws, params)
    await terms.wait_for_exit(ws, tid)
    output = (await terms.output(ws, tid))["output"]
    assert SECRET not in output
    assert "AGENTAO_VISIBLE=yes" in output and "SET_BY_AGENT=1" in output


async def test_pass_through_names_are_kept(ws, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    terms = LocalTerminals(term_grace=0.5, keep_env=("GITHUB_TOKEN",))
    try:
        tid = await terms.create(ws, {"command": "env"})
        await terms.wait_for_exit(ws, tid)
        output = (await terms.output(ws, tid))["output"]
    finally:
        await terms.close()
    assert f"GITHUB_TOKEN={SECRET}" in output
    assert f"OPENAI_API_KEY={SECRET}" not in output
