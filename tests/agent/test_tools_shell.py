"""run_shell_command through LocalEnv, and the shell parsing the permission engine uses."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from agentao.agent.events import (
    TerminalChunk,
    TerminalExited,
    TerminalOutput,
    TerminalStarted,
    TextOutput,
    ToolOutput,
)
from agentao.agent.local_env import LocalEnv
from agentao.agent.sandbox import Confinement
from agentao.agent.settings import ShellLimits
from agentao.agent.tools.base import CommandResult, ToolError
from agentao.agent.tools.shell import RunShellCommand, command_prefix, segments, simple_words
from tests.agent.doubles import make_ctx


class TerminalEnv(LocalEnv):
    """LocalEnv that says a client terminal ran the command (as the editor env does)."""

    async def run_command(
        self,
        command: str,
        cwd: Path,
        timeout: float,
        output_limit: int,
        on_start: Callable[[str | None], Awaitable[None]] | None = None,
        confinement: Confinement | None = None,
    ) -> CommandResult:
        if on_start is not None:
            await on_start("term-1")
        result = await super().run_command(command, cwd, timeout, output_limit, None, confinement)
        return CommandResult(result.output, result.exit_code, terminal_id="term-1")


@pytest.fixture
def ws(ws: Path) -> Path:
    (ws / "sub").mkdir()
    return ws


async def test_runs_and_reports_exit_code(ws: Path) -> None:
    tool = RunShellCommand()
    assert tool.title({"command": "ls -la"}) == "Run `ls -la`"
    result = await tool.run({"command": "echo hi; exit 2"}, make_ctx(ws))
    assert result.model_text == "Exit code: 2\nhi\n"
    assert result.content == (TextOutput("hi\n"),)
    assert not result.is_error  # a non-zero exit is information, not a failed call
    assert result.raw_output == {"exitCode": 2, "signal": None, "timedOut": False}


async def test_directory_argument(ws: Path) -> None:
    result = await RunShellCommand().run({"command": "pwd", "directory": "sub"}, make_ctx(ws))
    assert result.model_text.endswith(f"{ws / 'sub'}\n")
    with pytest.raises(ToolError, match="does not exist"):
        await RunShellCommand().run({"command": "pwd", "directory": "nope"}, make_ctx(ws))


async def test_timeout_is_reported_and_capped(ws: Path) -> None:
    tool = RunShellCommand(ShellLimits(max_timeout=0.3, kill_grace=0.1))
    result = await tool.run({"command": "sleep 30", "timeout": 100}, make_ctx(ws))
    assert result.is_error
    assert "timed out after 0.3 s" in result.model_text


async def test_output_cap_is_visible(ws: Path) -> None:
    tool = RunShellCommand(ShellLimits(output_limit=200))
    result = await tool.run({"command": "seq 1 10000"}, make_ctx(ws))
    assert "output truncated: limit output_limit=200 bytes" in result.model_text
    assert "bytes of output omitted" in result.model_text
    assert result.model_text.rstrip().endswith("10000")


async def test_client_terminal_is_embedded(ws: Path) -> None:
    reported: list[tuple[ToolOutput, ...]] = []

    async def report(content: tuple[ToolOutput, ...]) -> None:
        reported.append(content)

    ctx = make_ctx(ws, TerminalEnv())
    ctx.report = report
    result = await RunShellCommand().run({"command": "echo hi"}, ctx)
    assert reported == [(TerminalOutput("term-1"),)]
    assert result.content == (TerminalOutput("term-1"),)
    assert "hi" in result.model_text


@pytest.mark.parametrize(
    "args", [{"command": ""}, {"command": 3}, {"command": "ls", "timeout": -1}]
)
async def test_bad_arguments(ws: Path, args: dict) -> None:
    with pytest.raises(ToolError):
        await RunShellCommand().run(args, make_ctx(ws))


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ("ls -la", ["ls", "-la"]),
        ("git status", ["git", "status"]),
        ("cat 'a b'", ["cat", "a b"]),
        ("ls; rm -rf /", None),
        ("ls && rm x", None),
        ("ls | sh", None),
        ("echo x > f", None),
        ("echo `id`", None),
        ("echo $(id)", None),
        ("echo $HOME", None),
        ("cat *.py", None),
        ("cat {a,/etc/passwd}", None),
        ("ls\nrm x", None),
        ("cat 'unterminated", None),
        ("", None),
    ],
)
def test_simple_words(command: str, words: list[str] | None) -> None:
    assert simple_words(command) == words


@pytest.mark.parametrize(
    ("command", "prefix"),
    [
        ("git status -s", "git status"),
        ("npm test", "npm test"),
        ("pytest tests/agent -q", "pytest"),
        ("rm -rf build", "rm"),
        ("ls; rm x", None),
    ],
)
def test_command_prefix(command: str, prefix: str | None) -> None:
    assert command_prefix(command) == prefix


def test_segments_split_compound_commands() -> None:
    assert segments("ls && FOO=1 rm -rf x | tee y; $(curl z)") == [
        ["ls"],
        ["rm", "-rf", "x"],
        ["tee", "y"],
        ["curl", "z"],
    ]


async def test_a_watched_command_streams_as_a_terminal_up_to_its_limit(ws: Path) -> None:
    """Live chunks stop at `terminal_stream_limit`; the end sends the whole kept output."""
    shown: list[object] = []
    ctx = make_ctx(ws)
    ctx.show = shown.append
    tool = RunShellCommand(ShellLimits(terminal_stream_limit=10))
    result = await tool.run({"command": "printf '%0100d' 0"}, ctx)
    started, *chunks, exited = shown
    assert isinstance(started, TerminalStarted) and started.command == "printf '%0100d' 0"
    assert all(isinstance(c, TerminalChunk) for c in chunks)
    assert b"".join(c.data for c in chunks) == b"0" * 10  # type: ignore[attr-defined]
    assert exited == TerminalExited(started.terminal_id, 0, None, b"0" * 100)
    assert result.content == (TextOutput("0" * 100),)  # the agent's own record is unchanged


async def test_an_unwatched_command_shows_no_terminal(ws: Path) -> None:
    result = await RunShellCommand().run({"command": "echo hi"}, make_ctx(ws))
    assert result.content == (TextOutput("hi\n"),)
