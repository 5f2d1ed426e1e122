"""A session's workspace roots, resolved once when the session opens and held.

Theory of operation
-------------------
The roots (the session cwd, then its additional directories) are where writes may
land and what the sandbox binds writable. Resolving them again at each decision would
let anyone who can rename a directory (a command in another session, another tool)
swap a checked root for a symlink to `/`: the next decision would resolve the link,
find every path "inside", and bind `/` writable. So `Roots.pin` resolves each root
once (`os.path.realpath`), opens the result from `/` one component at a time with
`O_NOFOLLOW | O_DIRECTORY` (as `agent/beneath.py` does), and keeps its path with its
(st_dev, st_ino). Every later use walks the pinned path the same way and compares the
identity (`PinnedDir.check`, `PinnedDir.open`): a root that is now a symlink, or
another directory, is refused with `RootReplaced`, never followed. The sandbox binds
the descriptor `open` returned (`bwrap --bind-fd`), so the kernel mounts exactly the
directory that was checked.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

_DIR = (
    getattr(os, "O_PATH", os.O_RDONLY)
    | os.O_DIRECTORY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


class RootError(ValueError):
    """A workspace root that cannot be pinned, or is no longer what was pinned."""


class RootReplaced(RootError):
    """A pinned workspace root no longer leads to the directory checked at open."""

    def __init__(self, path: Path, detail: str = "") -> None:
        self.path = path
        why = f" ({detail})" if detail else ""
        super().__init__(
            f"the workspace directory {path} was replaced since the session opened; refusing{why}"
        )


def open_dir(path: Path) -> int:
    """An O_PATH descriptor of the directory `path`, reached from `/` without following
    any symlink (OSError ELOOP/ENOTDIR when a component is a link or not a directory)."""
    if not path.is_absolute() or any(p in (".", "..") for p in path.parts):
        raise ValueError(f"{path} is not a resolved absolute path")
    fd = os.open("/", _DIR)
    try:
        for name in path.parts[1:]:
            nxt = os.open(name, _DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _why(path: Path, exc: OSError) -> str:
    """What is at `path` now, for the refusal (O_PATH|O_NOFOLLOW meets a link as ENOTDIR)."""
    if os.path.islink(path):
        return "a symlink is in its place"
    return exc.strerror or errno.errorcode.get(exc.errno or 0, "gone")


@dataclass(frozen=True, slots=True)
class PinnedDir:
    """One root: its resolved path and the identity of the directory found there."""

    path: Path
    dev: int
    ino: int

    @classmethod
    def pin(cls, path: Path) -> PinnedDir:
        """`path` resolved now, and the directory it leads to (RootError if none)."""
        real = Path(os.path.realpath(path))
        try:
            fd = open_dir(real)
        except OSError as exc:
            raise RootError(f"workspace directory {path} cannot be opened: {exc.strerror}") from exc
        try:
            st = os.fstat(fd)
        finally:
            os.close(fd)
        return cls(real, st.st_dev, st.st_ino)

    def open(self) -> int:
        """A descriptor of this root, checked to be the directory pinned (RootReplaced)."""
        try:
            fd = open_dir(self.path)
        except OSError as exc:
            raise RootReplaced(self.path, _why(self.path, exc)) from None
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (self.dev, self.ino):
            os.close(fd)
            raise RootReplaced(self.path, "another directory is in its place")
        return fd

    def check(self) -> None:
        """RootReplaced unless walking the path still reaches the pinned directory."""
        os.close(self.open())


@dataclass(frozen=True, slots=True)
class Roots:
    """A session's pinned roots, cwd first. Decide on `verified()`, never on a re-resolve."""

    dirs: tuple[PinnedDir, ...]

    @classmethod
    def pin(cls, cwd: Path, additional: Iterable[Path] = ()) -> Roots:
        """Pin `cwd` (RootError if it cannot be opened) and each additional directory
        that exists now; one that does not is no root at all, so nothing is written there
        (the server has refused a missing one already, with -32602)."""
        dirs = [PinnedDir.pin(cwd)]
        for path in additional:
            if not os.path.isdir(path):
                continue
            pinned = PinnedDir.pin(path)
            if pinned.path not in (d.path for d in dirs):
                dirs.append(pinned)
        return cls(tuple(dirs))

    @property
    def cwd(self) -> Path:
        return self.dirs[0].path

    @property
    def paths(self) -> tuple[Path, ...]:
        return tuple(d.path for d in self.dirs)

    def verified(self) -> tuple[Path, ...]:
        """The pinned paths, each checked to still be its directory (RootReplaced)."""
        for pinned in self.dirs:
            pinned.check()
        return self.paths


__all__ = ["PinnedDir", "RootError", "RootReplaced", "Roots", "open_dir"]
