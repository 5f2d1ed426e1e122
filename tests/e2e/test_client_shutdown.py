"""Shutting an agent down: EOF, then SIGTERM to its group, then SIGKILL."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agentao.client import AgentCommand, Client, Timeouts

FAKES = Path(__file__).resolve().parent.parent / "fakes" / "fake_agents"
FAST = Timeouts(eof_grace=0.3, term_grace=0.3, kill_grace=2.0)
pytestmark = pytest.mark.timeout(60)


def command(script: str, *args: str) -> AgentCommand:
    return AgentCommand((sys.executable, str(FAKES / script), *args))


async def start_and_close(cmd: AgentCommand, tmp_path: Path) -> int | None:
    client = Client(cmd, timeouts=FAST)
    await client.start()
    await client.new_session(str(tmp_path))
    return await client.close()


async def test_agent_that_exits_on_eof(tmp_path):
    client = Client(command("scenario.py"), timeouts=FAST)
    await client.start()
    assert await client.close() == 0  # exited by itself: no SIGTERM (-15), no SIGKILL (-9)


async def test_agent_that_ignores_eof_gets_sigterm(tmp_path):
    assert await start_and_close(command("stubborn.py"), tmp_path) == -15


async def test_agent_that_ignores_sigterm_gets_sigkill(tmp_path):
    assert await start_and_close(command("stubborn.py", "--ignore-term"), tmp_path) == -9


@pytest.mark.parametrize("child_args", [(), ("--ignore-term",)])
async def test_wrapper_with_a_native_child_leaves_nothing_behind(tmp_path, child_args):
    pidfile = tmp_path / "pids"
    await start_and_close(command("wrapper.py", *child_args, "--pidfile", str(pidfile)), tmp_path)
    wrapper, child = map(int, pidfile.read_text().split())
    assert not _running(wrapper)
    assert not _running(child)


async def test_stderr_tail_is_bounded(tmp_path):
    from agentao.client import AgentStartError, Limits

    noisy = AgentCommand(
        (
            sys.executable,
            "-c",
            "import sys\nfor i in range(5000): print('line', i, file=sys.stderr)",
        )
    )
    client = Client(noisy, limits=Limits(stderr_tail_bytes=1000))
    with pytest.raises(AgentStartError):  # exits before the handshake
        await client.start()
    assert client.process is not None
    tail = client.stderr_tail()
    assert "line 4999" in tail and "line 0\n" not in tail
    assert client.process.tail._size <= 1000


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
