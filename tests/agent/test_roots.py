"""Pinned roots: a session's directories are resolved once and a swap is refused.

The attack: a session opens in a checked directory D; someone who can rename (a command
in another session, another tool) moves D away and puts a symlink to an outside
directory O (standing for `/`) in its place. Resolved again, D would be O: every path
"inside", and the sandbox would bind O writable. Each test makes that swap for real and
has a control without it.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentao.agent.local_env import LocalEnv
from agentao.agent.permissions import PermissionEngine
from agentao.agent.roots import PinnedDir, RootReplaced, Roots
from agentao.agent.sandbox import Confinement, Sandbox
from agentao.agent.tools.base import ToolContext, ToolError
from agentao.agent.tools.files import WriteFile
from agentao.agent.tools.shell import RunShellCommand
from tests.agent.doubles import make_ctx

REPLACED = "was replaced since the session opened; refusing"


@dataclass
class Swap:
    """D (the workspace), O (outside), and where D goes when it is swapped."""

    ws: Path
    outside: Path
    moved: Path

    def swap(self) -> None:
        """D renamed away and replaced by a symlink to O."""
        self.ws.rename(self.moved)
        self.ws.symlink_to(self.outside)


@pytest.fixture
def world(tmp_path: Path) -> Swap:
    (tmp_path / "ws").mkdir()
    (tmp_path / "outside").mkdir()
    return Swap(tmp_path / "ws", tmp_path / "outside", tmp_path / "ws-moved")


def _engine(sandbox: Sandbox | None = None) -> PermissionEngine:
    status = sandbox.status() if sandbox is not None else PermissionEngine().sandbox
    return PermissionEngine("workspace-write", sandbox=status)


def test_roots_are_resolved_once_and_a_swap_is_refused(world: Swap) -> None:
    link = world.ws.parent / "via-link"
    link.symlink_to(world.ws)
    roots = Roots.pin(link)
    assert roots.cwd == world.ws and roots.verified() == (world.ws,)  # the control
    world.swap()
    with pytest.raises(RootReplaced, match=REPLACED):
        roots.verified()


def test_another_directory_at_the_same_path_is_refused(world: Swap) -> None:
    pinned = PinnedDir.pin(world.ws)
    world.ws.rename(world.moved)
    world.ws.mkdir()  # no symlink anywhere: only its identity tells it apart
    with pytest.raises(RootReplaced, match="another directory is in its place"):
        pinned.check()


def test_the_permission_engine_refuses_a_write_after_the_swap(world: Swap) -> None:
    engine, ctx, tool = _engine(), make_ctx(world.ws), WriteFile()
    args = {"file_path": "x.txt", "content": "x"}
    assert engine.decide(tool, args, ctx).verdict == "allow"  # the control: D itself
    world.swap()
    decision = engine.decide(tool, args, ctx)
    assert decision.verdict == "deny" and REPLACED in decision.reason


def test_the_permission_engine_refuses_a_command_after_the_swap(
    world: Swap, sandbox: Sandbox
) -> None:
    engine, ctx, tool = _engine(sandbox), make_ctx(world.ws), RunShellCommand()
    args = {"command": "touch marker"}
    before = engine.decide(tool, args, ctx)
    assert before.verdict == "ask" and before.confinement is not None
    assert before.confinement.writable == (world.ws,)  # the control: D, writable
    world.swap()
    decision = engine.decide(tool, args, ctx)
    assert decision.verdict == "deny" and REPLACED in decision.reason
    assert decision.confinement is None  # nothing would be bound, let alone O


async def test_a_file_tool_refuses_after_the_swap(world: Swap) -> None:
    ctx = make_ctx(world.ws, call_id="w")
    await WriteFile().run({"file_path": "before.txt", "content": "x"}, ctx)
    assert (world.ws / "before.txt").read_text() == "x"  # the control
    world.swap()
    with pytest.raises(ToolError, match=REPLACED):
        await WriteFile().run({"file_path": "after.txt", "content": "x"}, ctx)
    assert list(world.outside.iterdir()) == []


async def test_an_approved_command_is_not_run_after_the_swap(world: Swap, sandbox: Sandbox) -> None:
    """The decision was made before the swap (the command was approved); the swap comes
    between the approval and the run: the sandbox refuses, nothing lands in O."""
    engine, tool = _engine(sandbox), RunShellCommand()
    ctx = make_ctx(world.ws, env=LocalEnv(sandbox=sandbox), call_id="s")
    ctx.confinement = engine.decide(tool, {"command": "touch marker"}, ctx).confinement
    await tool.run({"command": "touch control"}, ctx)
    assert (world.ws / "control").exists()  # the control: D writable, as approved
    world.swap()
    with pytest.raises(ToolError, match=REPLACED):
        await tool.run({"command": "touch marker"}, ctx)
    assert list(world.outside.iterdir()) == []


def test_bwrap_binds_the_checked_directory_not_the_path(world: Swap, sandbox: Sandbox) -> None:
    """Built before the swap, run after it: the descriptor bound is the directory that
    was checked (now at its new name), never what the path leads to at mount time."""
    assert sandbox.status().bind_fd, "bwrap >= 0.8 has --bind-fd (Debian bookworm)"
    pinned = PinnedDir.pin(world.ws)
    confinement = Confinement(writable=(world.ws,), pinned=(pinned,))
    command = sandbox.command("touch marker", world.ws, confinement)
    try:
        world.swap()
        done = subprocess.run(command.argv, env={}, pass_fds=command.fds, check=False)
    finally:
        command.close()
    assert done.returncode == 0
    assert (world.moved / "marker").exists() and list(world.outside.iterdir()) == []


def test_a_terminal_command_line_is_checked_when_built(world: Swap, sandbox: Sandbox) -> None:
    """The editor's terminal takes no descriptors: the path bind is checked first."""
    confinement = Confinement(writable=(world.ws,), pinned=(PinnedDir.pin(world.ws),))
    argv = sandbox.argv("true", world.ws, confinement)
    assert ["--bind", str(world.ws), str(world.ws)] == argv[argv.index("--bind") :][:3]
    world.swap()
    with pytest.raises(RootReplaced, match=REPLACED):
        sandbox.argv("true", world.ws, confinement)


def test_a_session_context_holds_the_roots_it_was_given(world: Swap) -> None:
    roots = Roots.pin(world.ws)
    ctx = ToolContext(world.ws, LocalEnv(), None, roots=roots)  # type: ignore[arg-type]
    assert ctx.pinned_roots() is roots
    assert os.path.samefile(ctx.pinned_roots().cwd, world.ws)
