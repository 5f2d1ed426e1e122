"""Standard input/output as an asyncio reader and writer, for the agent side.

Stdout is the wire. `open_stdio()` moves the real stdout to a private file
descriptor and points fd 1 (and `sys.stdout`) at stderr, so a stray `print()`
or a chatty library can never corrupt the protocol stream.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys


class _FdReader:
    """Reads a file or /dev/null (`agentao --acp < lines.jsonl`) without blocking the loop."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def read(self, n: int = -1) -> bytes:
        return await asyncio.to_thread(os.read, self._fd, n if n > 0 else 1 << 20)


class _FdWriter:
    """Blocking writes for a stdout that is a file or /dev/null (pipes use a transport)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    async def drain(self) -> None:
        return None


def _pollable(fd: int) -> bool:
    """Pipes, sockets and terminals work with the event loop; files and /dev/null do not."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


def _claim_stdout() -> int:
    """A private duplicate of fd 1 for the protocol; fd 1 itself now goes to stderr."""
    sys.stdout.flush()
    wire_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return wire_fd


async def open_stdio() -> tuple[object, object]:
    """(reader, writer) over this process's stdin and (claimed) stdout."""
    loop = asyncio.get_running_loop()
    in_fd, wire_fd = sys.stdin.fileno(), _claim_stdout()
    if not _pollable(in_fd):
        reader: object = _FdReader(in_fd)
    else:
        stream_reader = asyncio.StreamReader(limit=1 << 20)
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(stream_reader), os.fdopen(in_fd, "rb", 0)
        )
        reader = stream_reader
    if not _pollable(wire_fd):
        return reader, _FdWriter(wire_fd)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(wire_fd, "wb", 0)
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return reader, writer


__all__ = ["open_stdio"]
