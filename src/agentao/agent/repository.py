"""The repository's state for the system prompt: its branch and its changed files.

The branch is read from `HEAD` directly. Changed files come from `git status`, run
only inside the sandbox (read-only workspace, no network, no home): a repository's own
config can name programs for git to run (`core.fsmonitor`, filters), and a checkout is
untrusted. Where no sandbox can run, the changed files are "unknown", never guessed.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from agentao.agent.instructions import repository_root
from agentao.agent.sandbox import Confinement, SandboxUnavailable
from agentao.agent.tools.base import CommandResult

__all__ = ["GIT_STATUS", "RepoState", "describe", "read_branch", "repo_state"]

log = logging.getLogger(__name__)

GIT_STATUS = (
    "git --no-optional-locks -c core.fsmonitor=false -c core.untrackedCache=false "
    "status --porcelain=v1 --untracked-files=normal"
)
MAX_FILES = 30  # changed files named in the prompt; the rest are counted
STATUS_TIMEOUT = 5.0  # seconds
RunFn = Callable[..., Awaitable[CommandResult]]  # ToolEnv.run_command


@dataclass(frozen=True, slots=True)
class RepoState:
    root: Path | None = None
    branch: str | None = None
    changed: tuple[str, ...] | None = None  # None: unknown
    more: int = 0  # changed files beyond MAX_FILES


def read_branch(root: Path) -> str | None:
    """The checked-out branch ("main"), "detached at 1a2b3c4", or None. `.git` and `HEAD`
    are read only as what they are, never through a symlink: a checkout is untrusted, and
    what is read here goes into the system prompt, to the model provider."""
    git = root / ".git"
    try:
        mode = os.lstat(git).st_mode
        if stat.S_ISREG(mode):  # a worktree or a submodule: "gitdir: <path>"
            text = _small_file(git)
            if not text.startswith("gitdir:"):
                return None
            git = root / text[len("gitdir:") :].strip()
        elif not stat.S_ISDIR(mode):
            return None
        head = _small_file(git / "HEAD").strip()
    except OSError:
        return None
    if head.startswith("ref:"):
        return head[4:].strip().removeprefix("refs/heads/")
    return f"detached at {head[:7]}" if head else None


def _small_file(path: Path, limit: int = 4096) -> str:
    """The start of a regular file, opened without following a symlink (OSError if not)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        return os.read(fd, limit).decode("utf-8", "replace")
    finally:
        os.close(fd)


async def repo_state(cwd: Path, run: RunFn | None) -> RepoState:
    """The state of the repository holding `cwd` (RepoState() when there is none).
    `run` runs a command confined (LocalEnv.run_command); None: changed files unknown."""
    root = repository_root(cwd)
    if root is None:
        return RepoState()
    branch = read_branch(root)
    if run is None:
        return RepoState(root, branch)
    try:
        result = await run(
            GIT_STATUS, root, STATUS_TIMEOUT, 64 * 1024, confinement=Confinement(read_only=(root,))
        )
    except (SandboxUnavailable, OSError) as exc:
        log.info("repository state: git status not run (%s)", exc)
        return RepoState(root, branch)
    if result.exit_code != 0 or result.timed_out or result.truncated:
        return RepoState(root, branch)
    lines = [line for line in result.output.splitlines() if len(line) > 3]
    changed = tuple(line.strip() for line in lines[:MAX_FILES])
    return RepoState(root, branch, changed, max(0, len(lines) - MAX_FILES))


def describe(state: RepoState) -> str:
    """One line (and the changed files) for the system prompt."""
    if state.root is None:
        return "none (the working directory is not in a git repository)"
    text = f"git, root {state.root}, branch {state.branch or 'unknown'}"
    if state.changed is None:
        return text + "; changed files unknown"
    if not state.changed:
        return text + "; no uncommitted changes"
    files = "\n".join(f"  {line}" for line in state.changed)
    more = f"\n  ... and {state.more} more" if state.more else ""
    return f"{text}; uncommitted changes (git status --porcelain):\n{files}{more}"
