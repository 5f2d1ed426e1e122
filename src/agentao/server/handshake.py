"""Answer `initialize` before the event loop exists, so an editor sees the agent at once.

Theory of operation. Importing asyncio alone costs ~0.1 s, more than the rest of
what `initialize` needs. The protocol core is sans-IO, so the handshake runs on
plain blocking reads of stdin: each line goes through the same `Connection` the
endpoint will use (so the same validation and the same error replies); the
`initialize` request is answered on the real stdout, which moves the connection
to "initialized". Nothing else can legally happen before `initialize` (requests
get -32002 from the lifecycle table, notifications are dropped), so no message
is lost. The bytes read past the handshake are handed on to the endpoint.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from agentao.protocol.connection import Connection, Reject, Request
from agentao.protocol.framing import DEFAULT_MAX_LINE_BYTES

READ_CHUNK = 256 * 1024


def handshake(
    conn: Connection,
    answer: Callable[[Any], Any],
    in_fd: int = 0,
    out_fd: int = 1,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> bytes:
    """Serve stdin until `initialize` is answered (or EOF, or a line too long to hold here);
    return the bytes read beyond that point, for the endpoint to frame."""
    pending = b""
    while True:
        data = os.read(in_fd, READ_CHUNK)
        if not data:
            return pending
        pending += data
        while (nl := pending.find(b"\n")) >= 0:
            line, pending = pending[:nl], pending[nl + 1 :]
            if _serve_line(conn, line.rstrip(b"\r"), answer, out_fd):
                return pending
        if len(pending) > max_line_bytes:
            return pending  # the endpoint's framing answers an oversize line


def _serve_line(conn: Connection, line: bytes, answer: Callable[[Any], Any], out_fd: int) -> bool:
    """Handle one line; True once `initialize` has been answered."""
    if not line.strip():
        return False
    event = conn.receive(line)
    if isinstance(event, Reject):
        _write(out_fd, event.reply)
    elif isinstance(event, Request) and event.method == "initialize":
        _write(out_fd, conn.reply(event, answer(event.params)))
        return True
    return False


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class PrefixedReader:
    """An async reader that first returns `prefix` (bytes the handshake read ahead), and
    calls `on_eof` when the input ends (the client is gone: running turns can stop)."""

    def __init__(self, prefix: bytes, reader: Any, on_eof: Callable[[], None] | None = None):
        self._prefix = prefix
        self._reader = reader
        self._on_eof = on_eof

    async def read(self, n: int = -1) -> bytes:
        if self._prefix:
            data, self._prefix = self._prefix, b""
            return data
        data = await self._reader.read(n)
        if not data and self._on_eof is not None:
            on_eof, self._on_eof = self._on_eof, None
            on_eof()
        return data


__all__ = ["PrefixedReader", "handshake"]
