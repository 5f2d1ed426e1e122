"""`terminal/*`: real processes the agent starts through the client.

Each command runs in its own process group (so `kill` reaches its children),
stdin closed, stdout and stderr merged into one buffer, with this process's
environment minus credentials (`agentao.credentials`; `keep_env` names exceptions)
plus what the agent set. With an
`outputByteLimit` the buffer keeps only the newest bytes: it is cut from the
start, then forward to the next UTF-8 character boundary, so the text handed
back is always valid; `truncated` says that something was dropped.

Nothing runs unasked: `command_request` turns a `terminal/create` into the
`PermissionRequest` the permission handler decides (kind `execute`, title
"Run: <command line>"), and a refusal is `CommandRefused` on the wire.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import shlex
import shutil
import signal
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentao.client.files import Workspace
from agentao.client.permissions import PermissionOption, PermissionRequest
from agentao.credentials import scrubbed_env
from agentao.protocol.errors import AcpError, InvalidParams

_ids = itertools.count(1)
_requests = itertools.count(1)
# What the client offers its own permission handler for a command: once, or not at all
# (nothing is remembered, so there is no "always").
COMMAND_OPTIONS = (
    PermissionOption("allow", "Run", "allow_once"),
    PermissionOption("reject", "Refuse", "reject_once"),
)


class CommandRefused(AcpError):
    """`terminal/create` refused by the client's permission policy; nothing was started."""

    code = -32003  # JSON-RPC server-error range; ACP defines no code for a refusal

    def __init__(self, request: PermissionRequest, reason: str) -> None:
        raw_input = request.tool_call.get("rawInput", {})
        super().__init__(
            f"the client's policy refused to run the command: {reason}",
            {**raw_input, "reason": reason},
        )


def command_request(ws: Workspace, params: dict[str, Any]) -> PermissionRequest:
    """The permission request a `terminal/create` stands for (InvalidParams if malformed)."""
    command, args = params.get("command"), params.get("args") or []
    if not isinstance(args, list):
        raise InvalidParams("Invalid params: terminal/create args must be a list", {"args": args})
    _argv(command, args)  # the same checks `create` makes, before anyone is asked
    cwd = ws.resolve(params["cwd"]) if params.get("cwd") else ws.roots[0]
    line = shlex.join([command, *map(str, args)]) if args else command
    tool_call_id = f"terminal-request-{next(_requests)}"
    title = f"Run: {line}"
    raw_input = {"command": command, "args": [str(a) for a in args], "cwd": cwd}
    tool_call = {"toolCallId": tool_call_id, "title": title, "kind": "execute"}
    return PermissionRequest(
        ws.session_id,
        tool_call_id,
        title,
        "execute",
        COMMAND_OPTIONS,
        {**tool_call, "rawInput": raw_input},
    )


@dataclass(slots=True)
class ExitStatus:
    exit_code: int | None
    signal: str | None

    def to_wire(self) -> dict[str, Any]:
        return {"exitCode": self.exit_code, "signal": self.signal}


@dataclass(slots=True)
class Terminal:
    """One command and everything it printed (bounded by `limit`)."""

    id: str
    session_id: str
    proc: asyncio.subprocess.Process
    limit: int | None
    buffer: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    pump: asyncio.Task[None] | None = None

    def append(self, data: bytes) -> None:
        self.buffer += data
        cut = 0
        if self.limit is not None and len(self.buffer) > self.limit:
            cut = len(self.buffer) - self.limit
            self.truncated = True
        if self.truncated:  # never start inside a multi-byte character (even one still arriving)
            while cut < len(self.buffer) and (self.buffer[cut] & 0xC0) == 0x80:
                cut += 1
        if cut:
            del self.buffer[:cut]

    def output(self) -> str:
        return self.buffer.decode("utf-8", "replace")

    @property
    def exit_status(self) -> ExitStatus | None:
        code = self.proc.returncode
        if code is None:
            return None
        if code < 0:
            return ExitStatus(None, _signal_name(-code))
        return ExitStatus(code, None)


class TerminalHandler(Protocol):
    """The seam for `terminal/*`; every call names the session's workspace."""

    async def create(self, ws: Workspace, params: dict[str, Any]) -> str: ...
    async def output(self, ws: Workspace, terminal_id: str) -> dict[str, Any]: ...
    async def wait_for_exit(self, ws: Workspace, terminal_id: str) -> dict[str, Any]: ...
    async def kill(self, ws: Workspace, terminal_id: str) -> None: ...
    async def release(self, ws: Workspace, terminal_id: str) -> None: ...
    async def release_session(self, session_id: str) -> None: ...


class LocalTerminals:
    """The default: processes on this machine, cwd inside the session's workspace."""

    def __init__(self, term_grace: float = 3.0, keep_env: tuple[str, ...] = ()) -> None:
        self.term_grace = term_grace
        self.keep_env = keep_env
        self._terminals: dict[str, Terminal] = {}

    async def create(self, ws: Workspace, params: dict[str, Any]) -> str:
        argv = _argv(params.get("command"), params.get("args") or [])
        cwd = ws.resolve(params["cwd"]) if params.get("cwd") else ws.roots[0]
        limit = params.get("outputByteLimit")
        proc = await _spawn(argv, cwd, _env(params.get("env") or [], self.keep_env))
        term = Terminal(f"term-{next(_ids)}", ws.session_id, proc, limit)
        term.pump = asyncio.get_running_loop().create_task(_pump(term))
        self._terminals[term.id] = term
        return term.id

    async def output(self, ws: Workspace, terminal_id: str) -> dict[str, Any]:
        term = self._get(ws, terminal_id)
        if term.proc.returncode is not None:
            await _drain(term)  # the process ended: hand back everything it wrote
        result: dict[str, Any] = {"output": term.output(), "truncated": term.truncated}
        status = term.exit_status
        if status is not None:
            result["exitStatus"] = status.to_wire()
        return result

    async def wait_for_exit(self, ws: Workspace, terminal_id: str) -> dict[str, Any]:
        term = self._get(ws, terminal_id)
        await term.proc.wait()
        await _drain(term)
        return term.exit_status.to_wire()  # type: ignore[union-attr]

    async def kill(self, ws: Workspace, terminal_id: str) -> None:
        await self._stop(self._get(ws, terminal_id))

    async def release(self, ws: Workspace, terminal_id: str) -> None:
        term = self._get(ws, terminal_id)
        del self._terminals[terminal_id]
        await self._stop(term)

    async def release_session(self, session_id: str) -> None:
        """Kill and forget every terminal of a session (session closed, client closing)."""
        for term in [t for t in self._terminals.values() if t.session_id == session_id]:
            del self._terminals[term.id]
            await self._stop(term)

    async def close(self) -> None:
        for session_id in {t.session_id for t in self._terminals.values()}:
            await self.release_session(session_id)

    def _get(self, ws: Workspace, terminal_id: str) -> Terminal:
        term = self._terminals.get(terminal_id)
        if term is None or term.session_id != ws.session_id:
            raise InvalidParams(
                f"Invalid params: unknown terminal {terminal_id!r}", {"terminalId": terminal_id}
            )
        return term

    async def _stop(self, term: Terminal) -> None:
        """SIGTERM to the group, SIGKILL after `term_grace`; then wait for the pump."""
        if term.proc.returncode is None:
            _killpg(term.proc.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(term.proc.wait(), self.term_grace)
            except TimeoutError:
                _killpg(term.proc.pid, signal.SIGKILL)
                await term.proc.wait()
        _killpg(term.proc.pid, signal.SIGKILL)  # stragglers left in the group
        await _drain(term)


def _argv(command: Any, args: list[Any]) -> list[str]:
    if not isinstance(command, str) or not command.strip():
        raise InvalidParams("Invalid params: terminal/create needs a command", {"command": command})
    if not args and shutil.which(command) is None and any(c.isspace() for c in command):
        # Several agents send a whole shell line as `command` with no args.
        return ["/bin/sh", "-c", command]
    return [command, *map(str, args)]


def _env(variables: list[Any], keep: tuple[str, ...]) -> dict[str, str]:
    env = scrubbed_env(os.environ, keep)
    for var in variables:
        if isinstance(var, dict) and isinstance(var.get("name"), str):
            env[var["name"]] = str(var.get("value", ""))
    return env


async def _spawn(argv: list[str], cwd: str, env: dict[str, str]) -> asyncio.subprocess.Process:
    try:
        return await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        raise InvalidParams(
            f"Invalid params: cannot run {argv[0]!r}: {exc.strerror}", {"command": argv[0]}
        ) from None


async def _pump(term: Terminal) -> None:
    stream = term.proc.stdout
    assert stream is not None
    while chunk := await stream.read(1 << 16):
        term.append(chunk)


async def _drain(term: Terminal, grace: float = 1.0) -> None:
    """Let the pump read what is left; a background child holding the pipe can't stall us."""
    if term.pump is not None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(term.pump), grace)


def _killpg(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


__all__ = [
    "COMMAND_OPTIONS",
    "CommandRefused",
    "ExitStatus",
    "LocalTerminals",
    "Terminal",
    "TerminalHandler",
    "command_request",
]
