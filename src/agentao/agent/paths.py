"""Where a path really points, and whether that is inside the workspace.

Theory of operation
-------------------
A tool names the paths it touches as `PathAccess`es (`paths_of`). Each is resolved
the way the kernel will resolve it: made absolute against the session cwd, `~`
expanded, then `os.path.realpath`, which walks the components *in order* so that
`link/..` goes to the link target's parent (a lexical `normpath` first would be an
escape). Existing components have their symlinks resolved, a dangling symlink
resolves to its target, and the missing tail is appended as is. The result is then
compared with the workspace roots, resolved and pinned once when the session opened
(`agent/roots.py`), component by component (`Path.is_relative_to`), so `/ws-evil` is
not inside `/ws`.

Operations:
  read    read content or list a directory: the full path is resolved.
  write   change a file's content: resolved in full; refused under workspace-write
          when the file is a regular file with more than one hard link, because the
          other name may lie outside the workspace and we cannot cheaply rule it out
          (we do not scan the filesystem for it).
  relink  delete or rename a *name* (delete_file, both ends of move_file): only the
          parent is resolved, so deleting `ws/link` removes the link, not its target.
  cwd     a shell's working directory: resolved in full; treated like a write.

TOCTOU: the check sees the filesystem as it is when the permission engine decides.
`pin` records each resolved path for the call; the tool resolves again right before
acting and `check_pin` fails the call if anything changed (e.g. a symlink appeared
in between). The local disk is then reached through descriptors, one component at
a time and never following a symlink (`agentao/beneath.py`): a resolved path has no
symlink in it, so one that appears after the check is refused, not followed. There
is no window left between the check and the use.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from agentao.agent.roots import RootError

if TYPE_CHECKING:
    from agentao.agent.tools.base import ToolContext

Op = Literal["read", "write", "relink", "cwd"]
PATH_MAX = 4096
NAME_MAX = 255
_PIN_KEY = "agentao.paths.pins"
_PIN_KEEP = 64


class PathError(ValueError):
    """A path argument that no file can have (empty, NUL byte, too long)."""


@dataclass(frozen=True, slots=True)
class PathAccess:
    """One path a tool call will touch, as the model wrote it."""

    path: str
    op: Op = "read"


@runtime_checkable
class PathAware(Protocol):
    """A tool that can say which paths a call touches (all built-in file tools)."""

    def accesses(self, args: dict[str, Any], cwd: Path) -> tuple[PathAccess, ...]: ...


def paths_of(tool: object, args: dict[str, Any], cwd: Path) -> tuple[PathAccess, ...]:
    """The paths a call touches, or () for a tool that does not say (MCP, ask_user)."""
    if isinstance(tool, PathAware):
        return tool.accesses(args, cwd)
    return ()


def validate(path: str) -> None:
    """Raise PathError for a path string no file can have."""
    if not isinstance(path, str) or not path:
        raise PathError("empty path")
    if "\0" in path:
        raise PathError("path contains a NUL byte")
    if len(path.encode("utf-8", "surrogateescape")) >= PATH_MAX:
        raise PathError(f"path longer than {PATH_MAX} bytes")
    if any(len(part.encode("utf-8", "surrogateescape")) > NAME_MAX for part in path.split("/")):
        raise PathError(f"a path component is longer than {NAME_MAX} bytes")


def absolute(path: str, cwd: Path) -> Path:
    """`path` validated, `~`-expanded and made absolute against `cwd` (not resolved)."""
    validate(path)
    p = Path(os.path.expanduser(path))
    return p if p.is_absolute() else Path(cwd) / p


def resolve(path: str | Path, cwd: Path, op: Op = "read") -> Path:
    """Where `path` really points for `op` (symlinks resolved; parent only for relink).
    PathError when a component changes while it is being resolved (realpath reads a
    link that is no longer one): a path under attack is refused, not half-resolved."""
    p = absolute(str(path), cwd)
    try:
        if op == "relink" and p.name not in ("", ".", ".."):
            return Path(os.path.realpath(p.parent)) / p.name
        return Path(os.path.realpath(p))
    except OSError as e:
        raise PathError(f"{path} changed while it was being resolved ({e.strerror})") from e


def is_inside(resolved: Path, roots: Sequence[Path]) -> bool:
    """Whether an already-resolved path lies in (or is) one of the resolved roots."""
    return any(resolved.is_relative_to(root) for root in roots)


def is_hardlinked(resolved: Path) -> bool:
    """A regular file with more than one name: another name may be anywhere on the fs."""
    try:
        st = os.lstat(resolved)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_nlink > 1


def glob_base(pattern: str) -> str:
    """The literal directory prefix of a glob pattern ("../../etc/*" → "../../etc")."""
    parts: list[str] = []
    for part in pattern.split("/"):
        if any(ch in part for ch in "*?["):
            break
        parts.append(part)
    else:
        parts = parts[:-1]  # the last literal part names files, not the base
    base = "/".join(parts)
    return base or ("/" if pattern.startswith("/") else ".")


def _key(access: PathAccess) -> str:
    return f"{access.op}:{access.path}"


def pin(state: dict[str, Any], call_id: str, resolved: dict[PathAccess, Path]) -> None:
    """Remember what each path of a call resolved to when the permission was decided."""
    if not call_id:
        return
    pins: dict[str, dict[str, Path]] = state.setdefault(_PIN_KEY, {})
    pins.pop(call_id, None)
    pins[call_id] = {_key(a): p for a, p in resolved.items()}
    while len(pins) > _PIN_KEEP:
        pins.pop(next(iter(pins)))


def check_pin(state: dict[str, Any], call_id: str, access: PathAccess, resolved: Path) -> None:
    """Raise PathError if the path now resolves elsewhere than when it was allowed."""
    pinned = state.get(_PIN_KEY, {}).get(call_id, {}).get(_key(access)) if call_id else None
    if pinned is not None and pinned != resolved:
        raise PathError(
            f"{access.path} now points to {resolved}, not {pinned} as when it was allowed"
            " (changed after the permission check); refusing"
        )


def target(ctx: ToolContext, path: str, op: Op = "read") -> Path:
    """Resolve a tool argument right before use, failing if it moved since the check
    or if a workspace root was swapped since the session opened (`RootReplaced`)."""
    try:
        ctx.pinned_roots().verified()
    except RootError as e:
        raise PathError(str(e)) from None
    resolved = resolve(path, ctx.cwd, op)
    check_pin(ctx.state, ctx.call_id, PathAccess(path, op), resolved)
    return resolved


__all__ = [
    "NAME_MAX",
    "PATH_MAX",
    "Op",
    "PathAccess",
    "PathAware",
    "PathError",
    "absolute",
    "check_pin",
    "glob_base",
    "is_hardlinked",
    "is_inside",
    "paths_of",
    "pin",
    "resolve",
    "target",
    "validate",
]
