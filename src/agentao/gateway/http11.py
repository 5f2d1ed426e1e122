"""The gateway's HTTP/1.1 protocol: uvicorn's httptools one, with our error shape and one
system call per burst of writes.

Why httptools (llhttp, in C) and not h11: h11 parses a request in Python (~65 us for a
chat completion's head on this machine, against ~3 us) and frames every streamed write
through its state machine (~6 us each); on a loaded gateway both are on every request's
and every answer's path (bench/gateway.py). llhttp is as strict where it matters here: a
request line or header that is not HTTP/1.1 (a header value with a control character in
it, CR, LF, NUL or DEL among them: `X-Session-Id: a<CR>b`) is refused before any ASGI app
runs, so no route and no turn ever sees it.

Three things differ from uvicorn's own protocol:

* uvicorn answers such a request with a text/plain 400. `GatewayHttpProtocol`
  answers that same 400 as every other gateway error is shaped,
  `{"error": {"message", "type", "param", "code"}}`, and closes the connection as
  uvicorn does.
* uvicorn writes each piece of a response as it is produced, one `send(2)` each: the
  status line and headers, every body part, the chunked encoding's last chunk. A
  streamed answer's end alone was three (its last chunk, `[DONE]`, the terminator),
  and on a loaded gateway those system calls were a fifth of its event loop's time.
  `_BatchedWrites` keeps what is written during one event-loop iteration and hands it
  to the socket at the end of the iteration (`call_soon`), in order; close flushes
  first. Nothing waits longer than the iteration it was written in.
* Nagle's algorithm is off on every connection (`_no_delay`).

`serve()` runs uvicorn with it (never `auto`, which picks by what is installed), and so
do the tests.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import msgspec
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from agentao.gateway.errors import BadRequest

MALFORMED = BadRequest(
    "malformed HTTP request: the request line or a header is not valid HTTP/1.1 (a header "
    "value may hold no control character but tab: no CR, LF, NUL, ...); nothing was run",
    code="invalid_http_request",
)


class _BatchedWrites:
    """A transport whose writes in one event-loop iteration leave in one system call."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._parts: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not data:
            return
        if not self._parts:
            self._loop.call_soon(self._flush)
        self._parts.append(data)

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def _flush(self) -> None:
        if self._parts:
            data = b"".join(self._parts)
            self._parts.clear()
            if not self._transport.is_closing():
                self._transport.write(data)

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(map(len, self._parts))

    def write_eof(self) -> None:
        self._flush()
        self._transport.write_eof()

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def abort(self) -> None:
        self._parts.clear()
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:  # reading, extra info, set_protocol, ...
        return getattr(self._transport, name)


def _no_delay(transport: asyncio.Transport) -> None:
    """Turn Nagle's algorithm off. asyncio does so only for sockets made with an explicit
    IPPROTO_TCP, and uvicorn's listening socket has proto 0, so every accepted one kept it:
    a write that followed an unacknowledged one (a streamed answer's next part, its end)
    waited for the client's delayed ACK, 40 ms on Linux."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class GatewayHttpProtocol(HttpToolsProtocol):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        _no_delay(transport)
        batched: Any = _BatchedWrites(transport, self.loop)
        super().connection_made(batched)

    def send_400_response(self, msg: str) -> None:
        body = msgspec.json.encode(MALFORMED.body())
        head = (
            b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body)
        )
        self.transport.write(head + body)
        self.transport.close()


__all__ = ["GatewayHttpProtocol"]
