"""Where an agent's sessions may work: its roots, and a path held inside them.

An agent's roots are its configured `cwd` and its `[agents.NAME.sandbox] write` paths: all
its confined processes can write. A session's directory, whichever face names it (a new
task's `cwd` in workdirs.py, a remote client's `session/new` in remote/limits.py), must be
an absolute path that *resolves* inside one of them, so a `..` or a symlink that leads out
is refused like a path outside; the agent is then given the resolved path, the one that was
checked. A path with a NUL, or longer than Linux's PATH_MAX, is refused before it is
resolved (the resolution itself would raise, or cost a lookup per component).
"""

from __future__ import annotations

import os
from pathlib import Path

from agentao.gateway.config import AgentSpec

MAX_PATH_BYTES = 4096  # Linux's PATH_MAX: no longer path names a directory

# Why a path was refused (`PathRefused.reason`).
NOT_A_PATH = "invalid"
NOT_ABSOLUTE = "not_absolute"
OUTSIDE = "outside_roots"


class PathRefused(ValueError):
    """A session directory the agent may not be given; `reason` says why."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def agent_roots(spec: AgentSpec) -> list[str]:
    """The directories a session of `spec` may work in (resolved, no repeats), its cwd first."""
    return list(dict.fromkeys(os.path.realpath(p) for p in (spec.cwd, *spec.sandbox.write)))


def resolve_within(spec: AgentSpec, field: str, path: object) -> str:
    """`path` resolved, if it is an absolute path whose resolution lies inside one of
    `spec`'s roots; else `PathRefused` naming `field`."""
    if not isinstance(path, str):
        raise PathRefused(NOT_ABSOLUTE, f"{field} must be an absolute path, got {path!r}")
    if "\x00" in path or len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        raise PathRefused(
            NOT_A_PATH, f"{field} must be a path of at most {MAX_PATH_BYTES} bytes without NUL"
        )
    if not Path(path).is_absolute():
        raise PathRefused(NOT_ABSOLUTE, f"{field} must be an absolute path, got {path!r}")
    real, roots = os.path.realpath(path), agent_roots(spec)
    if not any(Path(real).is_relative_to(root) for root in roots):
        seen = path if real == path else f"{path} (which resolves to {real})"
        raise PathRefused(
            OUTSIDE,
            f"{field} {seen} lies outside the workspace of agent {spec.name!r} "
            f"({', '.join(roots)}); its [agents.{spec.name}.sandbox] write paths add roots",
        )
    return real


__all__ = [
    "MAX_PATH_BYTES",
    "NOT_ABSOLUTE",
    "NOT_A_PATH",
    "OUTSIDE",
    "PathRefused",
    "agent_roots",
    "resolve_within",
]
