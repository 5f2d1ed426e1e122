"""File operations on descriptors, never on path strings re-resolved by the kernel.

Theory of operation
-------------------
The permission engine decides on a *resolved* path (`paths.resolve`: absolute, no
`..`, every symlink followed). Between that decision and the use, another process
(a command the model ran, say) may swap a directory of that path for a symlink to
`/home/you/.ssh`; `open(path)` would follow it. So nothing here opens a path string
in one go. `_walk` starts at `/` and opens each component *relative to the
directory descriptor before it* with `O_NOFOLLOW | O_DIRECTORY`; the last name is
opened (or unlinked, or renamed) relative to its parent's descriptor with
`O_NOFOLLOW`. A resolved path contains no symlink, so meeting one means the path
changed after it was checked: `PathChanged`, and nothing is touched. What the
descriptors point to cannot change under us, so the check and the use are one.

Reads also refuse anything but a regular file (a FIFO would block the agent, a
device could be anything), opening with `O_NONBLOCK` so that the refusal itself
cannot block.

`walk` enumerates a tree the same way: each subdirectory is opened relative to its
parent's descriptor with `O_NOFOLLOW`, so a symlink is reported as a name and never
entered, and a directory swapped for one mid-walk is passed by. `write_atomic`
writes a temporary file beside the target, in the directory reached by descriptor,
and renames it over the name (a symlink there is replaced, never written through).

This module is a leaf outside the layers: the agent's file tools and the client's
file service (`client/files.py`, which the gateway runs for its sessions) share it.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import secrets
import shutil
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
# O_PATH walks directories we may traverse but not list; scandir needs O_RDONLY.
_DIR = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | _NOFOLLOW | _CLOEXEC
_LISTABLE = os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW | _CLOEXEC
_RENAME_NOREPLACE = 1


class PathChanged(OSError):
    """A component of a checked path is now a symlink (or not a directory): refused."""

    def __init__(self, path: Path | str, detail: str = "") -> None:
        self.detail = detail or "a symlink appeared"
        super().__init__(
            errno.ELOOP,
            f"{path} changed after it was checked ({self.detail}); refusing",
        )


def _parts(path: Path) -> tuple[str, ...]:
    if not path.is_absolute() or any(p in (".", "..") for p in path.parts):
        raise ValueError(f"{path} is not a resolved absolute path")
    return path.parts[1:]


def _walk(path: Path, *, create: bool = False, flags: int = _DIR) -> int:
    """A descriptor of the directory `path` (opened with `flags`), reached without
    following any symlink; with `create`, missing directories are made on the way."""
    parts = _parts(path)
    fd = os.open("/", flags if not parts else _DIR)
    try:
        for i, name in enumerate(parts):
            nxt = _open_dir(fd, name, create, flags if i == len(parts) - 1 else _DIR)
            os.close(fd)
            fd = nxt
    except PathChanged as exc:
        os.close(fd)
        raise PathChanged(path, exc.detail) from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_dir(parent: int, name: str, create: bool, flags: int) -> int:
    try:
        return os.open(name, flags, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
        with contextlib.suppress(FileExistsError):  # a racing mkdir is as good as ours
            os.mkdir(name, 0o777, dir_fd=parent)
        return os.open(name, flags, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            _raise_changed(parent, name, exc)
        raise


def _raise_changed(parent: int, name: str, exc: OSError) -> None:
    try:
        st = os.lstat(name, dir_fd=parent)
    except OSError:
        raise exc from None
    if stat.S_ISLNK(st.st_mode):
        raise PathChanged(name, f"{name} is a symlink") from None
    raise NotADirectoryError(errno.ENOTDIR, f"{name} is not a directory") from None


@contextlib.contextmanager
def _parent(path: Path, *, create: bool = False) -> Iterator[int]:
    fd = _walk(path.parent, create=create)
    try:
        yield fd
    finally:
        os.close(fd)


def open_regular(path: Path) -> int:
    """A read-only descriptor of the regular file `path` (FileNotFoundError,
    IsADirectoryError, PathChanged, or OSError for a FIFO, device or socket)."""
    with _parent(path) as parent:
        try:
            fd = os.open(path.name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=parent)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PathChanged(path) from None
            raise
    return _regular(fd, path)


def _regular(fd: int, path: Path) -> int:
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode):
        os.set_blocking(fd, True)
        return fd
    os.close(fd)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, f"{path} is a directory")
    raise OSError(errno.EINVAL, f"{path} is not a regular file (a FIFO, socket or device)")


def read_bytes(path: Path) -> bytes:
    with os.fdopen(open_regular(path), "rb") as f:
        return f.read()


def write_bytes(path: Path, data: bytes) -> None:
    """Create or overwrite the regular file `path` (parents created), through its
    descriptor: a symlink in its place is refused, never followed."""
    with _parent(path, create=True) as parent:
        flags = os.O_WRONLY | os.O_CREAT | _NOFOLLOW | _NONBLOCK | _CLOEXEC
        try:
            fd = os.open(path.name, flags, 0o666, dir_fd=parent)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PathChanged(path) from None
            raise
    with os.fdopen(_writable(fd, path), "wb") as f:
        f.write(data)


def _writable(fd: int, path: Path) -> int:
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, f"{path} is not a regular file")
    os.set_blocking(fd, True)
    os.ftruncate(fd, 0)  # only now: the checks above never cut a file they refuse
    return fd


def write_atomic(path: Path, data: bytes, new_mode: int = 0o666) -> None:
    """Replace the regular file `path` (or create it, parents made) all at once: a
    temporary file in the same directory, reached by descriptor, renamed over the name.
    An existing file keeps its mode; a new one gets `new_mode` (less the umask)."""
    with _parent(path, create=True) as parent:
        mode = _existing_mode(parent, path)
        tmp = f".agentao-{secrets.token_hex(8)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
        fd = os.open(tmp, flags, new_mode if mode is None else 0o600, dir_fd=parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                if mode is not None:
                    os.fchmod(f.fileno(), mode)
            os.replace(tmp, path.name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=parent)
            raise


def _existing_mode(parent: int, path: Path) -> int | None:
    """The permission bits of the file at `path`, None if there is none; refuses a
    symlink (the path was resolved, so one here is new) and anything but a file."""
    try:
        st = os.lstat(path.name, dir_fd=parent)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise PathChanged(path)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, f"{path} is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, f"{path} is not a regular file (a FIFO, socket or device)")
    return stat.S_IMODE(st.st_mode)


@dataclass(frozen=True, slots=True)
class Entry:
    """One name met by `walk`: its path relative to the walked root, and what it is
    (a symlink is `link`, whatever it points to: it is never followed)."""

    rel: PurePosixPath
    kind: str  # "dir", "file", "link" or "other" (FIFO, socket, device)
    size: int


def walk(root: Path, enter: Callable[[PurePosixPath], bool] = lambda rel: True) -> Iterator[Entry]:
    """Every entry under the directory `root`, depth first and sorted by name, reached
    through descriptors; a subdirectory is entered only when `enter(rel)` says so.
    Close the iterator (or leave the loop) to stop: its descriptors close with it."""
    # An explicit stack, not recursion: a hostile tree may be thousands of levels deep.
    stack = [_level(_walk(root, flags=_LISTABLE), PurePosixPath())]
    try:
        while stack:
            fd, prefix, names = stack[-1]
            entry = _next_entry(fd, prefix, names)
            if entry is None:
                os.close(stack.pop()[0])
                continue
            yield entry
            if entry.kind == "dir" and enter(entry.rel):
                child = _open_child(fd, entry.rel.name)
                if child is not None:
                    stack.append(_level(child, entry.rel))
    finally:
        for fd, _, _ in stack:
            os.close(fd)


def _level(fd: int, prefix: PurePosixPath) -> tuple[int, PurePosixPath, Iterator[str]]:
    try:
        with os.scandir(fd) as it:
            names = sorted(e.name for e in it)
    except BaseException:
        os.close(fd)
        raise
    return fd, prefix, iter(names)


def _next_entry(fd: int, prefix: PurePosixPath, names: Iterator[str]) -> Entry | None:
    for name in names:
        try:
            st = os.lstat(name, dir_fd=fd)
        except OSError:  # vanished since the listing
            continue
        return Entry(prefix / name, _kind(st.st_mode), st.st_size)
    return None


def _open_child(parent: int, name: str) -> int | None:
    try:
        return os.open(name, _LISTABLE, dir_fd=parent)
    except OSError:  # swapped for a symlink (ELOOP), removed, or not listable: pass it by
        return None


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_ISREG(mode) else "other"


def scandir(path: Path) -> list[os.DirEntry[str]]:
    """The entries of the directory `path` (its symlinks reported, not followed)."""
    fd = _walk(path, flags=_LISTABLE)
    try:
        with os.scandir(fd) as it:
            return list(it)
    finally:
        os.close(fd)


def lstat(path: Path) -> os.stat_result:
    """The status of `path` itself (a symlink is not followed)."""
    if path == Path("/"):
        return os.stat("/")
    with _parent(path) as parent:
        return os.lstat(path.name, dir_fd=parent)


def kind_of(path: Path) -> str:
    """What `path` itself is ("dir", "file", "link" or "other"), not following it."""
    return _kind(lstat(path).st_mode)


def unlink(path: Path) -> None:
    """Remove the name `path` (a symlink is removed, not its target; never a directory)."""
    with _parent(path) as parent:
        st = os.lstat(path.name, dir_fd=parent)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, f"{path} is a directory")
        os.unlink(path.name, dir_fd=parent)


def rename(source: Path, dest: Path) -> None:
    """Move `source` to `dest` (its parents created); FileExistsError if `dest` exists."""
    with _parent(source) as src, _parent(dest, create=True) as dst:
        os.lstat(source.name, dir_fd=src)  # FileNotFoundError before anything is made
        try:
            _rename_noreplace(src, source.name, dst, dest.name)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            _copy_across(src, source, dst, dest)


def _rename_noreplace(src: int, name: str, dst: int, new: str) -> None:
    """renameat2(RENAME_NOREPLACE) where the kernel has it: no window in which a file
    appearing at `dest` is overwritten; elsewhere a check, then renameat."""
    renameat2 = _renameat2()
    if renameat2 is not None:
        args = (src, os.fsencode(name), dst, os.fsencode(new), _RENAME_NOREPLACE)
        if renameat2(*args) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EINVAL):
            raise OSError(err, os.strerror(err), new)
    with contextlib.suppress(FileNotFoundError):
        os.lstat(new, dir_fd=dst)
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), new)
    os.rename(name, new, src_dir_fd=src, dst_dir_fd=dst)


@functools.cache
def _renameat2() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    return getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)


def _copy_across(src: int, source: Path, dst: int, dest: Path) -> None:
    """Another file system: copy a regular file by descriptors, then unlink it."""
    st = os.lstat(source.name, dir_fd=src)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EXDEV, f"cannot move {source} to another file system (not a file)")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    with (
        os.fdopen(os.open(source.name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC, dir_fd=src), "rb") as a,
        os.fdopen(os.open(dest.name, flags, st.st_mode & 0o7777, dir_fd=dst), "wb") as b,
    ):
        shutil.copyfileobj(a, b)
    os.unlink(source.name, dir_fd=src)


__all__ = [
    "Entry",
    "PathChanged",
    "kind_of",
    "lstat",
    "open_regular",
    "read_bytes",
    "rename",
    "scandir",
    "unlink",
    "walk",
    "write_atomic",
    "write_bytes",
]
