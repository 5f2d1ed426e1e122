"""`fs/read_text_file` and `fs/write_text_file`, confined to a session's directories.

A session's workspace is its `cwd` plus its additional directories, each
resolved (symlinks followed) when the session is opened. A path the agent
names is resolved the same way before the check, so neither `..` nor a
symlink leads out; anything outside is refused with -32602 and a message
that names the path and the allowed roots.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from dataclasses import dataclass
from typing import Protocol

from agentao.client.config import MissingFile
from agentao.protocol.errors import AcpError, InternalError, InvalidParams


def _read_umask() -> int:
    # Read once at import: os.umask() is process-wide and writes run in threads.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


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
        if not isinstance(path, str) or not os.path.isabs(path):
            raise InvalidParams(
                f"Invalid params: path must be absolute, got {path!r}", {"path": path}
            )
        real = os.path.realpath(path)
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
            if os.path.isdir(real):
                raise InvalidParams(f"Invalid params: {path} is a directory", {"path": path})
            if os.path.getsize(real) > self.max_read_bytes and not limit:
                raise InvalidParams(
                    f"Invalid params: {path} is larger than {self.max_read_bytes} bytes; "
                    "read it with line/limit",
                    {"path": path},
                )
            with open(real, encoding="utf-8", errors="replace", newline="") as f:
                return _slice_lines(f, line, limit)
        except FileNotFoundError:
            if self.missing_file == "empty":
                return ""
            raise ResourceNotFound(path) from None
        except OSError as exc:
            raise InternalError(f"cannot read {path}: {exc.strerror}", {"path": path}) from None


def _slice_lines(f: object, line: int | None, limit: int | None) -> str:
    """Lines `line` (1-based; 0/None = 1) onwards, at most `limit` of them."""
    start = max(line or 1, 1)
    if start == 1 and limit is None:
        return f.read()  # type: ignore[attr-defined]
    out: list[str] = []
    for number, text in enumerate(f, start=1):  # type: ignore[call-overload]
        if number < start:
            continue
        if limit is not None and len(out) >= limit:
            break
        out.append(text)
    return "".join(out)


def _write_atomic(path: str, real: str, content: str) -> None:
    """Write via a temporary file and rename, keeping the old file's mode."""
    directory = os.path.dirname(real)
    try:
        os.makedirs(directory, exist_ok=True)
        mode = os.stat(real).st_mode & 0o7777 if os.path.exists(real) else None
        fd, tmp = tempfile.mkstemp(prefix=".agentao-", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                f.write(content)
            if mode is not None:
                os.chmod(tmp, mode)
            else:
                os.chmod(tmp, 0o666 & ~_UMASK)
            os.replace(tmp, real)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise InternalError(f"cannot write {path}: {exc.strerror}", {"path": path}) from None


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


__all__ = ["FileHandler", "LocalFiles", "ResourceNotFound", "Workspace"]
