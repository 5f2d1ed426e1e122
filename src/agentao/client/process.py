"""The agent as a child process: spawn, keep its stderr tail, shut it down in stages.

Theory of operation. The agent starts in a new session (so a new process
group whose id is its pid): wrappers such as `npx` or a node shim that spawn
a native child stay reachable through the group. Shutdown escalates, each
step after a named grace period from `Timeouts`:

    close stdin (EOF) --eof_grace--> SIGTERM to the group --term_grace-->
    SIGKILL to the group --kill_grace--> give up waiting

Even when the leader exits on EOF, whatever is left in its group gets
SIGTERM/SIGKILL, so no orphaned native child outlives the client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections import deque

from agentao.client.config import AgentCommand, Timeouts
from agentao.client.errors import AgentStartError

log = logging.getLogger("agentao.client")


class StderrTail:
    """A bounded ring buffer of the agent's stderr (whole lines, newest last)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._lines: deque[bytes] = deque()
        self._size = 0

    def add(self, line: bytes) -> None:
        line = line[-self.max_bytes :]
        self._lines.append(line)
        self._size += len(line)
        while self._size > self.max_bytes and self._lines:
            self._size -= len(self._lines.popleft())

    def text(self, max_lines: int = 40) -> str:
        lines = list(self._lines)[-max_lines:]
        return b"".join(lines).decode("utf-8", "replace")


class AgentProcess:
    """A running agent: its stdin/stdout streams, its stderr tail, its exit code."""

    def __init__(self, proc: asyncio.subprocess.Process, tail: StderrTail, echo: bool) -> None:
        self.proc = proc
        self.tail = tail
        self._echo = echo
        self._stderr_task = asyncio.get_running_loop().create_task(self._pump_stderr())

    @classmethod
    async def start(cls, command: AgentCommand, tail_bytes: int) -> AgentProcess:
        try:
            proc = await asyncio.create_subprocess_exec(
                *command.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=command.cwd,
                env=_environment(command),
                start_new_session=True,
                limit=1 << 20,
            )
        except (OSError, ValueError) as exc:
            raise AgentStartError(f"cannot start agent {command.argv[0]!r}: {exc}") from exc
        return cls(proc, StderrTail(tail_bytes), command.echo_stderr)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def reader(self) -> asyncio.StreamReader:
        return self.proc.stdout  # type: ignore[return-value]

    @property
    def writer(self) -> asyncio.StreamWriter:
        return self.proc.stdin  # type: ignore[return-value]

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def stderr_tail(self) -> str:
        return self.tail.text()

    async def _pump_stderr(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        while True:
            try:
                line = await stream.readline()
            except ValueError:  # a line above the stream limit: take it in pieces
                line = await stream.read(1 << 16)
            except (ConnectionError, OSError):
                return
            if not line:
                return
            self.tail.add(line)
            if self._echo:
                sys.stderr.buffer.write(line)
                sys.stderr.buffer.flush()

    async def wait(self, timeout: float | None = None, *, drain_stderr: bool = True) -> int | None:
        """The exit code, or None if the agent is still running after `timeout`.

        With `drain_stderr`, also give the stderr pump a moment to read the
        agent's last words, so error reports carry them.
        """
        try:
            await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            return None
        if not drain_stderr:
            return self.proc.returncode
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._stderr_task), 0.5)
        return self.proc.returncode

    async def shutdown(self, timeouts: Timeouts) -> int | None:
        """EOF, then SIGTERM, then SIGKILL to the whole group; return the exit code."""
        self._close_stdin()
        await self._settle(timeouts.eof_grace, group=False)
        for sig, grace in (
            (signal.SIGTERM, timeouts.term_grace),
            (signal.SIGKILL, timeouts.kill_grace),
        ):
            if not self._group_alive() or not self._signal_group(sig):
                break  # the group is empty: everyone exited
            log.info("agent group %d still running; sent %s", self.pid, sig.name)
            await self._settle(grace, group=True)
        self._stderr_task.cancel()
        return self.proc.returncode

    async def _settle(self, grace: float, *, group: bool) -> None:
        """Wait up to `grace` for the leader (and, if `group`, every member) to exit."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        if await self.wait(grace, drain_stderr=False) is None or not group:
            return
        # Other group members are not our children: there is nothing to await, so poll.
        while self._group_alive() and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.02)

    def _close_stdin(self) -> None:
        writer = self.proc.stdin
        if writer is not None and not writer.is_closing():
            with contextlib.suppress(OSError, RuntimeError):
                writer.close()

    def _group_alive(self) -> bool:
        """Is any live (non-zombie) process left in the agent's group?"""
        if not self._signal_group(0):
            return False
        return _live_members(self.pid) != 0

    def _signal_group(self, sig: int) -> bool:
        """Signal the agent's process group; False if the group is empty."""
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            return False
        except PermissionError:  # pgid reused by someone else's process: leave it
            return False
        return True


def _live_members(pgid: int) -> int:
    """Live members of a process group per /proc (-1 when /proc can't tell).

    A killed grandchild whose parent is gone may linger as a zombie until
    init reaps it; it still counts for killpg() but is no longer running.
    """
    try:
        entries = os.listdir("/proc")
    except OSError:
        return -1
    live = 0
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()  # after "pid (comm) "
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            live += 1
    return live


def _environment(command: AgentCommand) -> dict[str, str]:
    base = dict(os.environ) if command.inherit_env else {"PATH": os.environ.get("PATH", "")}
    base.update(command.env)
    return base


__all__ = ["AgentProcess", "StderrTail"]
