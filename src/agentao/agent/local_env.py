"""The local `ToolEnv`: files on this machine's disk, commands in a local shell.

Theory of operation (run_command)
---------------------------------
Each command runs as `bash -c COMMAND` in a new session (`start_new_session=True`),
so it leads its own process group and everything it starts stays in that group
unless it calls setsid itself. We read its merged stdout/stderr into a buffer that
keeps the head and the tail and marks the omitted middle. The command is over when
the shell has exited and its output has drained (at most `drain_after_exit` more);
whatever it left running in the background is then killed with the group.

On timeout *and* on asyncio cancellation the group gets SIGTERM, then SIGKILL after
a grace period (`kill_grace`, or the shorter `cancel_grace` so a cancelled turn
answers fast). A cancel that lands while the command is still starting waits for the
start and stops the group too: asyncio alone would kill only the shell. A killed shell's children are re-parented: where PID 1 does not reap
(containers, microVMs), they would stay zombies and the group would never vanish, so
LocalEnv makes the agent a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`) and reaps
the group's members itself, only after asyncio has reaped the shell (we never wait
on a pid asyncio's child watcher owns).

With a `Confinement` the command runs inside the sandbox (`agent/sandbox.py`):
bwrap is the group leader then, and its own teardown (a PID namespace, and
`--die-with-parent`) takes everything the command started with it. Without one (the
full-access mode, or a command the user approved where no sandbox can run) the
shell's environment is the agent's minus credentials (`credentials.scrubbed_env`).

Files are read and written through descriptors (`agentao/beneath.py`), so a path that
changed into a symlink after the permission check is refused, not followed.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import shutil
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentao import beneath
from agentao.agent.sandbox import Confinement, Sandbox, SandboxedCommand, SandboxUnavailable
from agentao.agent.settings import ShellLimits
from agentao.agent.tools.base import CommandResult
from agentao.credentials import scrubbed_env

_PR_SET_CHILD_SUBREAPER = 36
_READ_CHUNK = 64 * 1024
_POLL = 0.005  # seconds between looks at the shell's exit status


class LocalEnv:
    """`ToolEnv` on the local disk and a local shell."""

    def __init__(
        self,
        limits: ShellLimits | None = None,
        env: Mapping[str, str] | None = None,
        sandbox: Sandbox | None = None,
    ):
        self.limits = limits or ShellLimits()
        self._given = None if env is None else dict(env)
        self._shell_env: _ShellEnv | None = None
        self.sandbox = sandbox

    def _shell_environment(self) -> _ShellEnv:
        """The environment and shell commands get, worked out at the first command, not
        at construction: a session builds its LocalEnv when it opens and most never run
        a command, and copying and scrubbing os.environ and walking PATH for bash cost
        more than the rest of opening a session. The agent never changes its own
        environment, so reading it at the first command reads the same values."""
        if self._shell_env is None:
            environ = dict(os.environ) if self._given is None else self._given
            shell = shutil.which("bash") or "/bin/sh"
            self._shell_env = _ShellEnv(environ, scrubbed_env(environ), shell)
        return self._shell_env

    async def read_text(self, path: Path, line: int | None = None, limit: int | None = None) -> str:
        """Text from 1-based `line`, at most `limit` lines (ValueError for a binary file)."""
        return await asyncio.to_thread(_read_lines, Path(path), line, limit)

    async def write_text(self, path: Path, content: str) -> None:
        """Write `content` (parents created); no component may be a symlink."""
        await asyncio.to_thread(beneath.write_bytes, Path(path), content.encode("utf-8"))

    async def run_command(
        self,
        command: str,
        cwd: Path,
        timeout: float,
        output_limit: int,
        on_start: Callable[[str | None], Awaitable[None]] | None = None,
        confinement: Confinement | None = None,
        on_output: Callable[[bytes], None] | None = None,
    ) -> CommandResult:
        """Run `command` in its own process group (in the sandbox with a `confinement`);
        see the module docstring. `on_output` sees each piece of output as it is read."""
        if self.limits.become_subreaper:
            _become_subreaper()
        argv, env, fds = self._argv(command, cwd, confinement)
        try:
            proc = await self._start(argv, cwd, env, fds.fds)
        finally:
            fds.close()  # bwrap holds its own copies of the checked roots
        buf = _HeadTail(output_limit)
        timed_out = cancelled = False
        try:
            if on_start is not None:
                await on_start(None)
            try:
                async with asyncio.timeout(timeout):
                    await self._pump(proc, buf, on_output)
            except TimeoutError:
                timed_out = True
        except asyncio.CancelledError:
            cancelled = True
            raise
        finally:
            grace = self.limits.cancel_grace if cancelled else self.limits.kill_grace
            await _stop_group(proc, grace, self.limits.reap_timeout)
        code = proc.returncode
        sig = signal.Signals(-code).name if code is not None and code < 0 else None
        return CommandResult(
            output=buf.text(),
            exit_code=None if timed_out or sig else code,
            signal=sig,
            truncated=buf.omitted > 0,
            timed_out=timed_out,
        )

    async def _start(
        self, argv: list[str], cwd: Path, env: dict[str, str], fds: Sequence[int]
    ) -> asyncio.subprocess.Process:
        """The started shell, its start not cut short by a cancel: cancelled while it
        connects the pipes, asyncio kills the shell alone, and what the shell had forked
        by then would live on outside any group we stop. So a cancel waits for the start,
        stops the whole group, and is raised then."""
        start = asyncio.ensure_future(
            asyncio.create_subprocess_exec(
                *argv,
                cwd=str(cwd),
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
                pass_fds=fds,
            )
        )
        try:
            return await asyncio.shield(start)
        except asyncio.CancelledError:
            proc = await start
            await _stop_group(proc, self.limits.cancel_grace, self.limits.reap_timeout)
            raise

    def _argv(
        self, command: str, cwd: Path, confinement: Confinement | None
    ) -> tuple[list[str], dict[str, str], SandboxedCommand]:
        shell = self._shell_environment()
        if confinement is None:
            return [shell.shell, "-c", command], shell.scrubbed, SandboxedCommand([])
        if self.sandbox is None:  # fail closed: a confined command never runs bare
            raise SandboxUnavailable("a sandboxed command was asked for, and none is set up")
        # bwrap starts with an empty environment: its PID 1 keeps the one it got; it
        # binds the workspace roots by the descriptors checked here (`fds`).
        sandboxed = self.sandbox.command(command, cwd, confinement, shell.environ)
        return sandboxed.argv, {}, sandboxed

    async def _pump(
        self,
        proc: asyncio.subprocess.Process,
        buf: _HeadTail,
        on_output: Callable[[bytes], None] | None = None,
    ) -> None:
        assert proc.stdout is not None
        stdout = proc.stdout

        async def read_all() -> None:
            while chunk := await stdout.read(_READ_CHUNK):
                buf.add(chunk)
                if on_output is not None:
                    on_output(chunk)

        reader = asyncio.ensure_future(read_all())
        try:
            # Not proc.wait(): since 3.11 it also waits for the pipe to close, which a
            # background child can hold open forever.
            while proc.returncode is None and not reader.done():
                await asyncio.wait({reader}, timeout=_POLL)
            if reader.done():
                await _exited(proc, None)
            else:  # exited: drain what background children still write, briefly
                await asyncio.wait({reader}, timeout=self.limits.drain_after_exit)
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader


@dataclass(frozen=True, slots=True)
class _ShellEnv:
    environ: dict[str, str]  # the agent's, as the sandbox's PID 1 gets it
    scrubbed: dict[str, str]  # without credentials: what an unconfined shell gets
    shell: str


class _HeadTail:
    """Keeps the first and last `limit/2` bytes of a stream and counts the rest."""

    def __init__(self, limit: int):
        self.limit = max(limit, 0)
        self.head = bytearray()
        self.tail = bytearray()
        self.omitted = 0

    def add(self, data: bytes) -> None:
        room = self.limit // 2 - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.tail += data
        keep = self.limit - self.limit // 2
        if len(self.tail) > keep:
            cut = len(self.tail) - keep
            self.omitted += cut
            del self.tail[:cut]

    def text(self) -> str:
        head = self.head.decode("utf-8", "replace")
        tail = self.tail.decode("utf-8", "replace")
        if not self.omitted:
            return head + tail
        marker = (
            f"\n[... {self.omitted} bytes of output omitted: output limit is"
            f" {self.limit} bytes (first and last halves kept) ...]\n"
        )
        return head + marker + tail


async def _stop_group(proc: asyncio.subprocess.Process, grace: float, reap_timeout: float) -> None:
    """TERM the group, KILL it after `grace`, reap the shell and the group's orphans."""
    pgid = proc.pid
    try:
        if proc.returncode is None:
            _killpg(pgid, signal.SIGTERM)
            await _exited(proc, grace)
    finally:
        # Always: the shell may be gone while children that ignore TERM live on.
        _killpg(pgid, signal.SIGKILL)
    await _exited(proc, reap_timeout)
    await _reap_group(pgid, reap_timeout)
    # A process that left the group (setsid) may still hold the pipe: let go of it.
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()


async def _exited(proc: asyncio.subprocess.Process, timeout: float | None) -> bool:
    """Wait for the shell's exit status (asyncio's child watcher reaps it)."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    while proc.returncode is None:
        if deadline is not None and loop.time() >= deadline:
            return False
        await asyncio.sleep(_POLL)
    return True


async def _reap_group(pgid: int, timeout: float) -> None:
    """Wait for every member of the group to be gone, reaping those re-parented to us."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-pgid, os.WNOHANG)[0] > 0:  # noqa: ASYNC222 (WNOHANG: no wait)
                pass
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        await asyncio.sleep(0.005)


def _killpg(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


_subreaper_done = False


def _become_subreaper() -> None:
    """Make orphaned descendants re-parent to us so `_reap_group` can reap them."""
    global _subreaper_done
    if _subreaper_done or not sys.platform.startswith("linux"):
        return
    _subreaper_done = True  # a process-wide, idempotent flag: set once, best effort
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _read_lines(path: Path, line: int | None, limit: int | None) -> str:
    start = max(line or 1, 1)
    with os.fdopen(beneath.open_regular(path), "rb") as f:
        if b"\0" in f.read(8192):
            raise ValueError(f"{path} looks like a binary file")
        f.seek(0)
        out: list[bytes] = []
        for n, raw in enumerate(f, start=1):
            if n < start:
                continue
            if limit is not None and len(out) >= limit:
                break
            out.append(raw)
    return b"".join(out).decode("utf-8", "replace")


__all__ = ["LocalEnv"]
