"""run_shell_command, and the little shell parsing the permission engine needs.

A command is *simple* when it is one plain command with literal words: no `;`, `&`,
`|`, redirections, substitutions (`$`, backticks), globs, braces, subshells or
newlines. Only simple commands can match an allowlist entry or a remembered
"always allow" grant; anything else is asked about again. Deny rules, on the other
hand, look at every segment of a compound command (best effort: a shell is a
programming language, and `bash -c "r""m"` defeats any prefix rule).

A command the agent runs itself (not in the client's terminal) is shown live where
someone watches (`ToolContext.show`: an ACP v2 session): `TerminalStarted`, its output as
`TerminalChunk`s up to `ShellLimits.terminal_stream_limit` bytes, then `TerminalExited`
(with the kept output when the chunks stopped short). The command runs as a task of its
own, registered with the session's stoppable calls, so the user can kill it alone
(`stop_terminal`): the call then ends as a command killed by a signal, and the turn goes on.

None of this makes a command safe: the read-only allowlist only decides that a
command runs *without asking*, and it then runs in the sandbox with the workspace
read-only and no network (see agent/sandbox.py). The allowlist is still careful
(GNU tools take any unambiguous abbreviation of a long option, so `--deref` counts
as `--dereference-recursive`), and the allowlisted git commands run with
`--no-textconv --no-ext-diff` and without fsmonitor: a repository's config must not
choose a program for git to run.
"""

from __future__ import annotations

import asyncio
import re
import shlex
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentao.agent.events import (
    Location,
    TerminalChunk,
    TerminalExited,
    TerminalOutput,
    TerminalStarted,
    TextOutput,
)
from agentao.agent.paths import (
    PathAccess,
    PathError,
    absolute,
    is_inside,
    resolve,
    target,
)
from agentao.agent.roots import RootError
from agentao.agent.sandbox import Confinement, SandboxUnavailable
from agentao.agent.settings import ShellLimits
from agentao.agent.tools.base import CommandResult, Tool, ToolContext, ToolError, ToolResult

_UNSAFE = set(";&|<>`$(){}*?[]!\n\r\\") | {"\t"}
_SEGMENT_SPLIT = re.compile(r"&&|\|\||[;&|\n\r]|\$\(|`|\(|\)")
_TITLE_MAX = 80
STOPPED_SIGNAL = "SIGTERM"  # what a killed terminal's group gets first (local_env.py)


def simple_words(command: str) -> list[str] | None:
    """The words of a simple command, or None when it is compound or not parseable."""
    if not command.strip() or any(ch in _UNSAFE for ch in command):
        return None
    try:
        words = shlex.split(command, posix=True)
    except ValueError:
        return None
    return words or None


def command_prefix(command: str) -> str | None:
    """The "always allow" key of a simple command: its first word, plus a subcommand
    word when there is one (`git status`, `npm test`, `pytest`); None if not simple."""
    words = simple_words(command)
    if not words:
        return None
    if len(words) > 1 and re.fullmatch(r"[a-z][a-z0-9-]*", words[1]):
        return f"{words[0]} {words[1]}"
    return words[0]


def segments(command: str) -> list[list[str]]:
    """Best-effort words of every command in a compound command line (for deny rules)."""
    out: list[list[str]] = []
    for part in _SEGMENT_SPLIT.split(command):
        try:
            words = shlex.split(part, posix=True)
        except ValueError:
            words = part.split()
        while words and "=" in words[0] and not words[0].startswith("="):
            words = words[1:]  # leading VAR=value assignments
        if words:
            out.append(words)
    return out


def starts_with(words: list[str], prefix: str) -> bool:
    """Whether `words` begin with the whole words of `prefix`."""
    want = prefix.split()
    return bool(want) and words[: len(want)] == want


@dataclass(frozen=True, slots=True)
class _ReadOnlyCommand:
    bad_long: tuple[str, ...] = ()  # long options that write, exec or follow links out
    bad_short: str = ""  # short option letters with the same effect
    paths: bool = True  # whether its other words are paths to keep inside
    hardening: tuple[str, ...] = ()  # options added right after the (sub)command


_GIT_BAD = ("--output", "--ext-diff", "--textconv", "--exec", "--upload-pack")
_GIT_SAFE_DIFF = ("--no-ext-diff", "--no-textconv")
_MIN_ABBREV = 3  # `--x`: GNU getopt and git take any unambiguous prefix this long or longer

# Commands that only read, auto-allowed under workspace-write when simple and when
# every path word stays inside the workspace.
READ_ONLY_COMMANDS: dict[str, _ReadOnlyCommand] = {
    "ls": _ReadOnlyCommand(),
    "cat": _ReadOnlyCommand(),
    "pwd": _ReadOnlyCommand(paths=False),
    "echo": _ReadOnlyCommand(paths=False),
    "head": _ReadOnlyCommand(),
    "tail": _ReadOnlyCommand(),
    "wc": _ReadOnlyCommand(),
    "which": _ReadOnlyCommand(paths=False),
    "stat": _ReadOnlyCommand(),
    "grep": _ReadOnlyCommand(("--dereference-recursive",), "R"),
    "rg": _ReadOnlyCommand(("--pre", "--hostname-bin", "--follow", "--search-zip"), "Lz"),
    "git status": _ReadOnlyCommand(),
    "git diff": _ReadOnlyCommand(_GIT_BAD, hardening=_GIT_SAFE_DIFF),
    "git log": _ReadOnlyCommand(_GIT_BAD, hardening=_GIT_SAFE_DIFF),
    "git show": _ReadOnlyCommand(_GIT_BAD, hardening=_GIT_SAFE_DIFF),
}
# `git -c …` before the subcommand: config a repository cannot override.
GIT_SAFE_CONFIG = ("-c", "core.fsmonitor=false", "-c", "diff.external=")


def _allowlist_key(words: list[str]) -> str | None:
    return next((k for k in (" ".join(words[:2]), words[0]) if k in READ_ONLY_COMMANDS), None)


def _bad_long(name: str, bad: tuple[str, ...]) -> bool:
    """`--deref` is `--dereference-recursive` to GNU grep: a prefix counts as the option."""
    return any(name.startswith(b) or (len(name) >= _MIN_ABBREV and b.startswith(name)) for b in bad)


def is_read_only_command(command: str, cwd: Path, roots: Sequence[Path]) -> bool:
    """Whether a simple command is on the read-only allowlist with every path inside."""
    words = simple_words(command)
    if not words:
        return False
    key = _allowlist_key(words)
    if key is None:
        return False
    spec = READ_ONLY_COMMANDS[key]
    options = True  # until `--`: after it every word is an operand
    for word in words[len(key.split()) :]:
        value: str | None = word
        if options and word == "--":
            options, value = False, None
        elif options and word.startswith("--"):
            name, _, value = word.partition("=")
            if _bad_long(name, spec.bad_long):
                return False
            value = value or None
        elif options and word.startswith("-") and len(word) > 1:
            if set(word[1:]) & set(spec.bad_short):
                return False
            value = None
        if value is not None and spec.paths and not _word_inside(value, cwd, roots):
            return False
    return True


def hardened(command: str) -> str:
    """An allowlisted git command with textconv, external diff and fsmonitor switched off;
    any other command as it is."""
    words = simple_words(command)
    key = _allowlist_key(words) if words else None
    if words is None or key is None or not key.startswith("git "):
        return command
    spec = READ_ONLY_COMMANDS[key]
    return shlex.join(["git", *GIT_SAFE_CONFIG, words[1], *spec.hardening, *words[2:]])


def _word_inside(word: str, cwd: Path, roots: Sequence[Path]) -> bool:
    try:
        return is_inside(resolve(word, cwd), roots)
    except PathError:
        return False


class RunShellCommand(Tool):
    name = "run_shell_command"
    kind = "execute"
    cancellable = True  # its process group is killed (local_env.py)
    description = (
        "Run a command with bash -c in the workspace (or `directory`). Output (stdout and"
        " stderr merged) is returned with the exit code. Background processes are killed"
        " when the command ends. `timeout` is in seconds."
    )
    parameters = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The bash command line."},
            "description": {"type": "string", "description": "What it does, for the user."},
            "directory": {"type": "string", "description": "Working directory (default cwd)."},
            "timeout": {"type": "number", "description": "Seconds before it is killed."},
        },
        "required": ["command"],
    }

    def __init__(self, limits: ShellLimits | None = None):
        self.limits = limits or ShellLimits()

    def title(self, args: dict[str, Any]) -> str:
        command = " ".join(str(args.get("command", "")).split())
        if len(command) > _TITLE_MAX:
            command = command[: _TITLE_MAX - 1] + "…"
        return f"Run `{command}`"

    def locations(self, args: dict[str, Any], cwd: Path) -> tuple[Location, ...]:
        directory = args.get("directory")
        try:
            return (Location(str(absolute(directory, cwd))),) if isinstance(directory, str) else ()
        except PathError:
            return ()

    def accesses(self, args: dict[str, Any], cwd: Path) -> tuple[PathAccess, ...]:
        directory = args.get("directory")
        return (PathAccess(directory if isinstance(directory, str) else ".", "cwd"),)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ToolError("`command` must be a non-empty string")
        try:
            cwd = target(ctx, args.get("directory") or ".", "cwd")
        except PathError as e:
            raise ToolError(str(e)) from e
        if not cwd.is_dir():
            raise ToolError(f"directory {cwd} does not exist")
        timeout = self._timeout(args.get("timeout"))

        live = _LiveTerminal(ctx, command, cwd, self.limits.terminal_stream_limit)

        async def on_start(terminal_id: str | None) -> None:
            if terminal_id is None:  # the agent runs it: a terminal of its own, if watched
                live.started()
            elif ctx.report is not None:
                await ctx.report((TerminalOutput(terminal_id),))

        extra = {"on_output": live.output} if live.watched else {}
        running = asyncio.ensure_future(
            ctx.env.run_command(
                hardened(command),
                cwd,
                timeout,
                self.limits.output_limit,
                on_start=on_start,
                confinement=ctx.confinement,
                **extra,
            )
        )
        try:
            result = await live.run(running)
        except (SandboxUnavailable, RootError) as e:  # RootError: a root was swapped
            raise ToolError(f"not run: {e}") from e
        status = _status(result.exit_code, result.signal, result.timed_out, timeout)
        if live.stopped:
            status = f"Command stopped by the user ({STOPPED_SIGNAL} to its process group)."
        if result.truncated:
            status += f" (output truncated: limit output_limit={self.limits.output_limit} bytes)"
        if ctx.confinement is not None and result.exit_code != 0:
            status += f" [{_sandbox_note(ctx.confinement)}]"
        model_text = f"{status}\n{result.output}" if result.output else status
        content = (
            (TerminalOutput(result.terminal_id),)
            if result.terminal_id
            else (TextOutput(result.output or status),)
        )
        # A non-zero exit is information for the model, not a failed call.
        failed = result.timed_out or result.signal is not None
        raw = {"exitCode": result.exit_code, "signal": result.signal, "timedOut": result.timed_out}
        if ctx.confinement is not None:
            raw["sandbox"] = ctx.confinement.describe()
        return ToolResult(model_text, content, is_error=failed, raw_output=raw)

    def _timeout(self, value: object) -> float:
        if value is None:
            return self.limits.default_timeout
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise ToolError("`timeout` must be a positive number of seconds")
        return min(float(value), self.limits.max_timeout)


class _LiveTerminal:
    """One command shown as a terminal of the agent's own, while someone watches (see
    the module docstring); does nothing where no one does."""

    def __init__(self, ctx: ToolContext, command: str, cwd: Path, stream_limit: int) -> None:
        self.ctx = ctx
        self.watched = ctx.show is not None
        self.terminal_id = f"term-{uuid.uuid4().hex}"  # never the model's call id: unique
        self.command, self.cwd = command, cwd
        self.room = max(stream_limit, 0)  # bytes still to stream live
        self.cut = False  # the live chunks stopped at the limit
        self.shown = False
        self.stopped = False  # killed alone (`StoppableCalls.stop_terminal`)

    def started(self) -> None:
        if self.ctx.show is None:
            return
        self.shown = True
        cancellable = self.ctx.stoppable is not None
        self.ctx.show(
            TerminalStarted(
                self.ctx.call_id, self.terminal_id, self.command, str(self.cwd), cancellable
            )
        )

    def output(self, data: bytes) -> None:
        if self.ctx.show is None or not self.shown or self.cut:
            return
        if len(data) > self.room:
            data, self.cut = data[: self.room], True
        self.room -= len(data)
        if data:
            self.ctx.show(TerminalChunk(self.terminal_id, data))

    async def run(self, running: asyncio.Future[CommandResult]) -> CommandResult:
        """The command's result; a kill of this terminal alone is a result too."""
        stoppable = self.ctx.stoppable if self.watched else None
        if stoppable is not None:
            stoppable.terminal_running(self.terminal_id, running)  # type: ignore[arg-type]
        result: CommandResult | None = None
        try:
            result = await running
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if (task is not None and task.cancelling()) or not running.cancelled():
                raise  # the tool itself is cancelled (the turn, or tool_call/cancel)
            self.stopped = True
            result = CommandResult(output="", exit_code=None, signal=STOPPED_SIGNAL)
        finally:
            if stoppable is not None:
                stoppable.terminal_exited(self.terminal_id)
            self._exited(result)
        return result

    def _exited(self, result: CommandResult | None) -> None:
        if self.ctx.show is None or not self.shown:
            return
        if result is None:  # the tool was cancelled: its process group was stopped
            self.ctx.show(TerminalExited(self.terminal_id, None, STOPPED_SIGNAL))
            return
        snapshot = result.output.encode("utf-8") if self.cut else None
        self.ctx.show(TerminalExited(self.terminal_id, result.exit_code, result.signal, snapshot))


def _sandbox_note(confinement: Confinement) -> str:
    """Why a confined command may have failed, for the model to tell the user."""
    return f"{confinement.describe()} (the user can widen this in permissions.json)"


def _status(code: int | None, sig: str | None, timed_out: bool, timeout: float) -> str:
    if timed_out:
        return f"Command timed out after {timeout:g} s; its process group was killed."
    if sig:
        return f"Command killed by {sig}."
    return f"Exit code: {code}"


__all__ = [
    "READ_ONLY_COMMANDS",
    "RunShellCommand",
    "command_prefix",
    "hardened",
    "is_read_only_command",
    "segments",
    "simple_words",
    "starts_with",
]
