"""A small streaming HTTP/1.1 client: asyncio streams, TLS from `ssl`, framing from h11.

A leaf module outside the layers: the agent's LLM provider (`agent/providers/openai_http.py`)
and the client's remote transport (`client/remote.py`, its POSTs and its event streams) use it.

Just what they need: a request (a POST with its body, a GET without), the status and
headers, then the body as it arrives, each read bounded by a timeout or (an event
stream) not. One idle keep-alive connection per client and server (reused when both
sides finished the previous exchange cleanly), Nagle's algorithm off (asyncio's default
for TCP), each request written in one call; a connection whose response was abandoned
(a cancelled turn) is closed at once, which is how the server learns to stop.

Why not httpx: for this one request shape it adds ~6 MB resident (httpcore, anyio,
its own TLS context), a few tens of microseconds per streamed chunk, and about half a
millisecond of CPU per request (measured on a remote ACP turn, bench/remote.py). Proxies
are not handled here: when one is configured (`proxy_configured`), the callers use httpx.
"""

from __future__ import annotations

import asyncio
import os
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import h11

READ_BYTES = 64 * 1024
PROXY_VARIABLES = (
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
)


def proxy_configured() -> bool:
    """Whether a proxy is configured: then httpx (which honours them) makes the request."""
    return any(os.environ.get(name) for name in PROXY_VARIABLES)


class HttpError(Exception):
    """The connection failed (refused, reset, closed early, not HTTP)."""


class HttpTimeout(HttpError):
    """No progress within the timeout."""


@dataclass(slots=True)
class _Conn:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    h11: h11.Connection = field(default_factory=lambda: h11.Connection(h11.CLIENT))
    timeout: float | None = None  # seconds each read may wait (None: for ever)


@dataclass(slots=True)
class StreamResponse:
    status_code: int
    headers: dict[str, str]  # names lower-cased; of a repeated header, the last
    _client: Http1Client
    _conn: _Conn
    set_cookies: list[str] = field(default_factory=list)  # every Set-Cookie, as sent

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        while (data := await self._client._next_data(self._conn)) is not None:
            yield data

    async def aread(self) -> bytes:
        return b"".join([chunk async for chunk in self.aiter_bytes()])


class Http1Client:
    def __init__(
        self,
        timeout: float,
        connect_timeout: float,
        headers: dict[str, str],
        tls: ssl.SSLContext | None = None,  # None: the system's CAs, loaded when first needed
    ) -> None:
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.headers = headers
        self._idle: dict[tuple[str, str, int], _Conn] = {}
        self._tls = tls

    @asynccontextmanager
    async def post(
        self, url: str, body: bytes, headers: dict[str, str]
    ) -> AsyncIterator[StreamResponse]:
        """POST `body`; the response streams while the `async with` block runs."""
        async with self.request("POST", url, body, headers, self.timeout) as response:
            yield response

    @asynccontextmanager
    async def request(
        self,
        method: str,
        url: str,
        body: bytes | None,
        headers: dict[str, str],
        read_timeout: float | None,
    ) -> AsyncIterator[StreamResponse]:
        """`method` with `body` (None: no body, as a GET); the response streams while the
        `async with` block runs. `read_timeout` bounds each wait for data (None: no bound,
        for an event stream whose server pings only now and then)."""
        parts = urlsplit(url)
        key = (parts.scheme, parts.hostname or "", parts.port or _default_port(parts.scheme))
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        length = [] if body is None else [("Content-Length", str(len(body)))]
        request = h11.Request(
            method=method,
            target=target,
            headers=[("Host", parts.netloc), *{**self.headers, **headers}.items(), *length],
        )
        conn = self._idle.pop(key, None)
        if conn is not None and conn.reader.at_eof():  # the server closed it while idle
            conn.writer.close()
            conn = None
        reused, finished = conn is not None, False
        try:
            if conn is None:
                conn = await self._connect(*key)
            conn.timeout = read_timeout
            try:
                response = await self._exchange(conn, request, body)
            except HttpError as exc:
                if not reused or isinstance(exc, HttpTimeout):
                    raise
                conn.writer.close()  # a kept-alive connection the server had closed: retry once
                conn = await self._connect(*key)
                conn.timeout = read_timeout
                response = await self._exchange(conn, request, body)
            yield response
            finished = conn.h11.their_state is h11.DONE
        finally:
            if conn is not None and finished and conn.h11.our_state is h11.DONE:
                conn.h11.start_next_cycle()
                self._keep_idle(key, conn)
            elif conn is not None:
                conn.writer.close()  # abandoned or broken: the server sees the hang-up

    def _keep_idle(self, key: tuple[str, str, int], conn: _Conn) -> None:
        """Keep one idle connection per server (several requests at once, event streams
        beside the POSTs, may each have opened one: the others are closed)."""
        kept = self._idle.pop(key, None)
        if kept is not None:
            kept.writer.close()
        self._idle[key] = conn

    async def _exchange(
        self, conn: _Conn, request: h11.Request, body: bytes | None
    ) -> StreamResponse:
        data = conn.h11.send(request)
        if body:
            data += conn.h11.send(h11.Data(data=body))
        conn.writer.write(data + conn.h11.send(h11.EndOfMessage()))
        return await self._response(conn)

    async def aclose(self) -> None:
        for conn in self._idle.values():
            conn.writer.close()
        self._idle.clear()

    async def _connect(self, scheme: str, host: str, port: int) -> _Conn:
        tls = self._tls_context() if scheme == "https" else None
        try:
            async with asyncio.timeout(self.connect_timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, ssl=tls, server_hostname=host if tls else None, limit=READ_BYTES
                )
        except TimeoutError:
            raise HttpTimeout(f"connecting to {host}:{port} timed out") from None
        except OSError as exc:
            raise HttpError(f"cannot connect to {host}:{port}: {exc}") from None
        return _Conn(reader, writer)

    def _tls_context(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = ssl.create_default_context()
        return self._tls

    async def _response(self, conn: _Conn) -> StreamResponse:
        event = await self._next_event(conn)
        if not isinstance(event, h11.Response):
            raise HttpError(f"unexpected HTTP event {type(event).__name__}")
        headers = {k.decode().lower(): v.decode("latin-1") for k, v in event.headers}
        cookies = [v.decode("latin-1") for k, v in event.headers if k.lower() == b"set-cookie"]
        return StreamResponse(event.status_code, headers, self, conn, cookies)

    async def _next_data(self, conn: _Conn) -> bytes | None:
        event = await self._next_event(conn)
        if isinstance(event, h11.Data):
            return bytes(event.data)
        if isinstance(event, h11.EndOfMessage):
            return None
        raise HttpError(f"unexpected HTTP event {type(event).__name__}")

    async def _next_event(self, conn: _Conn) -> Any:
        while True:
            try:
                event = conn.h11.next_event()
            except h11.RemoteProtocolError as exc:
                raise HttpError(f"bad HTTP from the server: {exc}") from None
            if event is not h11.NEED_DATA:
                if event is h11.PAUSED or isinstance(event, h11.ConnectionClosed):
                    raise HttpError("the server closed the connection early")
                if isinstance(event, h11.InformationalResponse):
                    continue
                return event
            try:
                async with asyncio.timeout(conn.timeout):
                    data = await conn.reader.read(READ_BYTES)
            except TimeoutError:
                raise HttpTimeout(f"no data from the server in {conn.timeout:g} s") from None
            except OSError as exc:
                raise HttpError(f"connection lost: {exc}") from None
            conn.h11.receive_data(data)


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


__all__ = [
    "PROXY_VARIABLES",
    "Http1Client",
    "HttpError",
    "HttpTimeout",
    "StreamResponse",
    "proxy_configured",
]
