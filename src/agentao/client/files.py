"""`fs/read_text_file` and `fs/write_text_file`, confined to a session's directories.

A session's workspace is its `cwd` plus its additional directories, each
resolved (symlinks followed) when the session is opened. A path the agent
names is resolved the same way before the check, so neither `..` nor a
symlink leads out; anything outside is refused with -32602 and a message
that names the path and the allowed roots.

The checked path is then reached through descriptors (`agentao/beneath.py`, the
same module the agent's own file tools use): every component opened with
`O_NOFOLLOW`, so a directory swapped for a symlink after the check is refused,
never followed. Only regular files are read or replaced: a FIFO or a device is
refused at once (opened `O_NONBLOCK`, then `fstat`), so no thread ever blocks on
one. A write goes to a temporary file in the target's directory, reached the same
way, renamed over the name.
"""

from __future__ import annotations

import asyncio
import errno
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from agentao import beneath
from agentao.client.config import MissingFile
from agentao.protocol.errors import AcpError, InternalError, InvalidParams


class ResourceNotFound(AcpError):
    """ACP's "resource not found" (-32002), with `data: {"path": ...}`."""

    code = -32002

    def __init__(self, path: str) -> None:
        super().__init__(f"Resource not found: {path}", {"path": path})


@dataclass(frozen=True, slots=True)
class Workspace:
    """The directories one session may touch (already resolved)."""

    session_id: str
    roots: tuple[str, ...]

    @classmethod
    def of(cls, session_id: str, cwd: str, extra: tuple[str, ...] = ()) -> Workspace:
        roots = tuple(dict.fromkeys(os.path.realpath(d) for d in (cwd, *extra)))
        return cls(session_id, roots)

    def resolve(self, path: str) -> str:
        """The real path of `path`, or InvalidParams if it is relative or outside."""
        if not isinstance(path, str) or not os.path.isabs(path) or "\x00" in path:
            raise InvalidParams(  # realpath raises on a NUL: refused as the request's fault
                f"Invalid params: path must be absolute without NUL, got {path!r}", {"path": path}
            )
        try:
            real = os.path.realpath(path)
        except OSError as exc:  # a component changed while realpath read it: refused
            raise InvalidParams(
                f"Invalid params: {path} changed while it was being resolved ({exc.strerror})",
                {"path": path},
            ) from None
        if not any(_inside(real, root) for root in self.roots):
            raise InvalidParams(
                f"Invalid params: {path} is outside the session's directories "
                f"({', '.join(self.roots)})",
                {"path": path, "allowed": list(self.roots)},
            )
        return real


class FileHandler(Protocol):
    """The seam: replace it to serve files from an editor's buffers, a VFS, ..."""

    async def read_text_file(
        self, ws: Workspace, path: str, line: int | None, limit: int | None
    ) -> str: ...

    async def write_text_file(self, ws: Workspace, path: str, content: str) -> None: ...


class LocalFiles:
    """The default: real files on this machine, inside the session's workspace."""

    def __init__(self, missing_file: MissingFile = "empty", max_read_bytes: int = 64 << 20) -> None:
        self.missing_file = missing_file
        self.max_read_bytes = max_read_bytes

    async def read_text_file(
        self, ws: Workspace, path: str, line: int | None, limit: int | None
    ) -> str:
        real = ws.resolve(path)
        return await asyncio.to_thread(self._read, path, real, line, limit)

    async def write_text_file(self, ws: Workspace, path: str, content: str) -> None:
        real = ws.resolve(path)
        await asyncio.to_thread(_write_atomic, path, real, content)

    def _read(self, path: str, real: str, line: int | None, limit: int | None) -> str:
        try:
            fd = beneath.open_regular(Path(real))
        except FileNotFoundError:
            if self.missing_file == "empty":
                return ""
            raise ResourceNotFound(path) from None
        except OSError as exc:
            raise _refused(path, exc) from None
        with open(fd, encoding="utf-8", errors="replace", newline="") as f:
            if os.fstat(fd).st_size > self.max_read_bytes and not limit:
                raise InvalidParams(
                    f"Invalid params: {path} is larger than {self.max_read_bytes} bytes; "
                    "read it with line/limit",
                    {"path": path},
                )
            return _slice_lines(f, line, limit)


def _slice_lines(f: IO[str], line: int | None, limit: int | None) -> str:
    """Lines `line` (1-based; 0/None = 1) onwards, at most `limit` of them."""
    start = max(line or 1, 1)
    if start == 1 and limit is None:
        return f.read()
    out: list[str] = []
    for number, text in enumerate(f, start=1):
        if number < start:
            continue
        if limit is not None and len(out) >= limit:
            break
        out.append(text)
    return "".join(out)


def _write_atomic(path: str, real: str, content: str) -> None:
    """Replace the file by a temporary one renamed over it, keeping the old file's mode."""
    try:
        beneath.write_atomic(Path(real), content.encode("utf-8", "surrogateescape"))
    except OSError as exc:
        raise _refused(path, exc) from None


def _refused(path: str, exc: OSError) -> AcpError:
    """A directory, a FIFO or device, or a path changed since the check: the request's
    fault (-32602); anything else the disk's (-32603)."""
    if isinstance(exc, beneath.PathChanged | IsADirectoryError) or exc.errno == errno.EINVAL:
        return InvalidParams(f"Invalid params: {path}: {exc.strerror or exc}", {"path": path})
    return InternalError(f"cannot access {path}: {exc.strerror or exc}", {"path": path})


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


__all__ = ["FileHandler", "LocalFiles", "ResourceNotFound", "Workspace"]
