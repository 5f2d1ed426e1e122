"""Editor-aware I/O: a `ToolEnv` that goes through the client's `fs/*` and `terminal/*`.

Each capability the client advertised in `initialize` is used; the rest falls
back to the local environment, so the same tools run either way. Reading
through the editor gives the model the user's unsaved buffers; writing through
it lets the editor track the change; running through it shows the terminal
live in the tool call (`on_start(terminal_id)` embeds it).

A command runs as `terminal/create` -> `terminal/wait_for_exit` (bounded by the
tool's timeout) -> `terminal/output` -> `terminal/release`. A confined command runs
in the editor's terminal too, as `env -i bwrap … -- bash -c COMMAND`: the editor
spawned this agent, so it runs on the same machine, and `env -i` keeps the editor's
own environment out of the sandbox (bwrap's PID 1 would carry it otherwise). On a timeout the
terminal is killed first; on cancellation kill and release are sent without
waiting for their answers, so a cancelled turn still ends within 100 ms.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentao.agent.sandbox import Confinement, Sandbox, SandboxUnavailable
from agentao.agent.tools.base import CommandResult, ToolEnv
from agentao.protocol import schema
from agentao.protocol.errors import PeerError
from agentao.server.interaction import Requester

log = logging.getLogger("agentao.server")

NOT_FOUND_CODES = frozenset({-32002})  # ACP "resource not found"
# Clients that answer a missing file with another code still say so in the message or in
# `data`: acpx 0.1.15 sends -32603 "Internal error" with data.details "ENOENT: no such file
# or directory, open '…'". Missing must be recognised, or no new file can ever be written.
NOT_FOUND_WORDS = ("enoent", "no such file", "not found")
SHELL = "bash"
ENV = "env"  # `env -i`: start the sandbox with an empty environment


@dataclass(frozen=True, slots=True)
class ClientIo:
    """Which of the client's I/O methods to use (from `clientCapabilities`)."""

    read: bool = False
    write: bool = False
    terminal: bool = False

    @classmethod
    def from_capabilities(cls, caps: Any) -> ClientIo:
        fs = getattr(caps, "fs", None)
        return cls(
            read=bool(getattr(fs, "read_text_file", False)),
            write=bool(getattr(fs, "write_text_file", False)),
            terminal=bool(getattr(caps, "terminal", False)),
        )

    @property
    def any(self) -> bool:
        return self.read or self.write or self.terminal


class ClientEnv:
    """`ToolEnv` for one session: the client where it offers, `local` elsewhere."""

    def __init__(
        self,
        peer: Requester,
        session_id: str,
        io: ClientIo,
        local: ToolEnv,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.peer = peer
        self.session_id = session_id
        self.io = io
        self.local = local
        self.sandbox = sandbox
        self._background: set[asyncio.Task[Any]] = set()

    async def read_text(self, path: Path, line: int | None = None, limit: int | None = None) -> str:
        if not self.io.read:
            return await self.local.read_text(path, line, limit)
        params = schema.ReadTextFileRequest(
            session_id=self.session_id, path=str(path), line=line, limit=limit
        )
        result = await self._call("fs/read_text_file", params, path)
        return result.content

    async def write_text(self, path: Path, content: str) -> None:
        if not self.io.write:
            return await self.local.write_text(path, content)
        params = schema.WriteTextFileRequest(
            session_id=self.session_id, path=str(path), content=content
        )
        await self._call("fs/write_text_file", params, path)

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
        if not self.io.terminal:  # `on_output` only here: the client's terminal streams itself
            return await self.local.run_command(
                command, cwd, timeout, output_limit, on_start, confinement, on_output
            )
        program, args = self._command_line(command, cwd, confinement)
        created = await self.peer.request(
            "terminal/create",
            schema.CreateTerminalRequest(
                session_id=self.session_id,
                command=program,
                args=args,
                cwd=str(cwd),
                output_byte_limit=output_limit,
            ),
        )
        terminal_id = created.terminal_id
        try:
            if on_start is not None:
                await on_start(terminal_id)
            return await self._finish(terminal_id, timeout)
        except asyncio.CancelledError:
            self._in_background(self._kill_and_release(terminal_id))
            raise
        except BaseException:
            self._in_background(self._release(terminal_id))
            raise

    def _command_line(
        self, command: str, cwd: Path, confinement: Confinement | None
    ) -> tuple[str, list[str]]:
        if confinement is None:
            return SHELL, ["-c", command]
        if self.sandbox is None:  # fail closed: a confined command never runs bare
            raise SandboxUnavailable("a sandboxed command was asked for, and none is set up")
        return ENV, ["-i", *self.sandbox.argv(command, cwd, confinement)]

    async def _finish(self, terminal_id: str, timeout: float) -> CommandResult:
        ref = self._terminal_ref(terminal_id)
        timed_out = False
        try:
            async with asyncio.timeout(timeout):
                await self.peer.request("terminal/wait_for_exit", ref("WaitForTerminalExitRequest"))
        except TimeoutError:
            timed_out = True
            await self.peer.request("terminal/kill", ref("KillTerminalRequest"))
        out = await self.peer.request("terminal/output", ref("TerminalOutputRequest"))
        await self._release(terminal_id)
        status = out.exit_status
        return CommandResult(
            output=out.output,
            exit_code=None if timed_out or status is None else status.exit_code,
            signal=None if status is None else status.signal,
            truncated=bool(out.truncated),
            timed_out=timed_out,
            terminal_id=terminal_id,
        )

    def _terminal_ref(self, terminal_id: str) -> Callable[[str], Any]:
        def build(type_name: str) -> Any:
            cls = getattr(schema, type_name)
            return cls(session_id=self.session_id, terminal_id=terminal_id)

        return build

    async def _release(self, terminal_id: str) -> None:
        ref = self._terminal_ref(terminal_id)
        try:
            await self.peer.request("terminal/release", ref("ReleaseTerminalRequest"))
        except Exception as exc:
            log.info("terminal/release %s failed: %s", terminal_id, type(exc).__name__)

    async def _kill_and_release(self, terminal_id: str) -> None:
        ref = self._terminal_ref(terminal_id)
        try:
            await self.peer.request("terminal/kill", ref("KillTerminalRequest"))
        except Exception as exc:
            log.info("terminal/kill %s failed: %s", terminal_id, type(exc).__name__)
        await self._release(terminal_id)

    def _in_background(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _call(self, method: str, params: Any, path: Path) -> Any:
        try:
            return await self.peer.request(method, params)
        except PeerError as exc:
            if _is_not_found(exc):
                raise FileNotFoundError(f"{path}: {exc.message}") from None
            raise OSError(f"{method} failed for {path}: {exc.message}") from None


def _is_not_found(exc: PeerError) -> bool:
    """The client's error says the file does not exist: by code, message or `data`."""
    if exc.code in NOT_FOUND_CODES:
        return True
    text = f"{exc.message} {exc.data if exc.data is not None else ''}".lower()
    return any(word in text for word in NOT_FOUND_WORDS)


__all__ = ["SHELL", "ClientEnv", "ClientIo"]
