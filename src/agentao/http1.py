"""A small streaming HTTP/1.1 client: asyncio streams, TLS from `ssl`, responses parsed
by httptools (llhttp, in C).

A leaf module outside the layers: the agent's LLM provider (`agent/providers/openai_http.py`)
and the client's remote transport (`client/remote.py`, its POSTs and its event streams) use it.

Just what they need: a request (a POST with its body, a GET without), the status and
headers, then the body as it arrives (content-length, chunked, or up to the server's
close), each read bounded by a timeout or (an event stream) not. One idle keep-alive
connection per client and server (reused when both sides finished the previous
exchange cleanly and the server did not say `Connection: close`), Nagle's algorithm off
(asyncio's default for TCP), each request written in one call; a connection whose
response was abandoned (a cancelled turn) is closed at once, which is how the server
learns to stop.

The request head is written here, a join of bytes, after checking every piece that goes
into it: a header name must be a token and a value may hold no control character (CR, LF,
NUL, ...) and no whitespace at either end, else ValueError and nothing is sent (a value
from elsewhere -- a key, a session id, a cookie the server set -- must not be able to add
a header or a request of its own). Why not h11, which did both: framing each request
and each response through its state machine in Python cost a remote ACP client ~70 us
of CPU per POST, half of the POST's cost (bench/remote.py).

Why not httpx: for this one request shape it adds ~6 MB resident (httpcore, anyio,
its own TLS context), a few tens of microseconds per streamed chunk, and about half a
millisecond of CPU per request (measured on a remote ACP turn, bench/remote.py). Proxies
are not handled here: when one is configured (`proxy_configured`), the callers use httpx.
"""

from __future__ import annotations

import asyncio
import functools
import os
import re
import ssl
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httptools

READ_BYTES = 64 * 1024
PROXY_VARIABLES = (
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
)
# RFC 9110 §5.1, §5.5, §7.1: a field name is a token; a field value, visible characters
# (obs-text too: latin-1) with spaces and tabs only between them; a request target (and
# the host), visible ASCII: no whitespace, no control character (a URL is percent-encoded).
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]|\A[ \t]|[ \t]\Z")
_TARGET = re.compile(r"[\x21-\x7e]+")


def proxy_configured() -> bool:
    """Whether a proxy is configured: then httpx (which honours them) makes the request."""
    return any(os.environ.get(name) for name in PROXY_VARIABLES)


class HttpError(Exception):
    """The connection failed (refused, reset, closed early, not HTTP)."""


class HttpTimeout(HttpError):
    """No progress within the timeout."""


def request_head(method: str, target: str, host: str, headers: dict[str, str]) -> bytes:
    """The request line and header block, ready to write (ValueError: a piece that is not
    HTTP, which would otherwise end the line early and start a header of its own)."""
    if not _TOKEN.fullmatch(method):
        raise ValueError(f"bad HTTP method {method!r}")
    if not _TARGET.fullmatch(target) or not _TARGET.fullmatch(host):
        raise ValueError(f"bad request target {target!r} or host {host!r}")
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
    for name, value in headers.items():
        if not _TOKEN.fullmatch(name):
            raise ValueError(f"bad HTTP header name {name!r}")
        if _BAD_VALUE.search(value):
            raise ValueError(f"bad value for HTTP header {name}: {value!r}")
        lines.append(f"{name}: {value}")
    lines.append("\r\n")
    return "\r\n".join(lines).encode("latin-1")  # UnicodeEncodeError is a ValueError


class _ResponseParser:
    """One connection's responses, from httptools' callbacks: the status and headers,
    then the body's parts as they come. `reset()` before each request."""

    def __init__(self) -> None:
        self._parser = httptools.HttpResponseParser(self)
        self._interim = False
        self.reset()

    def reset(self) -> None:
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.head_done = False  # the status and every header are in
        self.body: list[bytes] = []  # parts not handed out yet
        self.done = False  # the whole response is in
        self.keep_alive = False  # the server will take another request on the connection

    def feed(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
            raise HttpError(f"bad HTTP from the server: {exc}") from None

    def feed_eof(self) -> None:
        """The server closed its side: the end of a body that runs to the close, else an error."""
        if self.head_done and not self.done and not self._framed():
            self.done = True
            return
        if not self.done:
            raise HttpError("the server closed the connection early")

    def _framed(self) -> bool:
        names = {name.lower() for name, _ in self.headers}
        framing = b"content-length" in names or b"transfer-encoding" in names
        return framing or self.status in (204, 304)

    # ---- httptools' callbacks ---------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if status < 200:  # an interim answer (100 Continue): skipped, with its end
            self._interim, self.headers = True, []
            return
        self.status, self.head_done = status, True

    def on_body(self, data: bytes) -> None:
        self.body.append(data)

    def on_message_complete(self) -> None:
        if self._interim:
            self._interim = False
            return
        self.done, self.keep_alive = True, self._parser.should_keep_alive()


@dataclass(slots=True)
class _Conn:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    parser: _ResponseParser = field(default_factory=_ResponseParser)
    timeout: float | None = None  # seconds each read may wait (None: for ever)

    async def receive(self) -> None:
        """Read what the server sent next into the parser."""
        try:
            if self.timeout is None:  # an event stream: no timer to set and cancel
                data = await self.reader.read(READ_BYTES)
            else:
                async with asyncio.timeout(self.timeout):
                    data = await self.reader.read(READ_BYTES)
        except TimeoutError:
            raise HttpTimeout(f"no data from the server in {self.timeout:g} s") from None
        except OSError as exc:
            raise HttpError(f"connection lost: {exc}") from None
        if data:
            self.parser.feed(data)
        else:
            self.parser.feed_eof()

    def reusable(self) -> bool:
        return self.parser.done and self.parser.keep_alive


@dataclass(slots=True)
class StreamResponse:
    status_code: int
    headers: dict[str, str]  # names lower-cased; of a repeated header, the last
    _conn: _Conn
    set_cookies: list[str] = field(default_factory=list)  # every Set-Cookie, as sent

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        parser = self._conn.parser
        while True:
            if parser.body:
                data = parser.body[0] if len(parser.body) == 1 else b"".join(parser.body)
                parser.body.clear()
                yield data
            elif parser.done:
                return
            else:
                await self._conn.receive()

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

    def post(
        self, url: str, body: bytes, headers: dict[str, str]
    ) -> AbstractAsyncContextManager[StreamResponse]:
        """POST `body`; the response streams while the `async with` block runs."""
        return self.request("POST", url, body, headers, self.timeout)

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
        for an event stream whose server pings only now and then). ValueError: a header
        (or the URL) that is not HTTP; nothing was sent."""
        key, target, host = _split(url)
        merged = {**self.headers, **headers}
        if body is not None:
            merged["Content-Length"] = str(len(body))
        data = request_head(method, target, host, merged)
        if body:
            data += body
        conn = self._idle.pop(key, None)
        if conn is not None and conn.reader.at_eof():  # the server closed it while idle
            conn.writer.close()
            conn = None
        reused = conn is not None
        try:
            if conn is None:
                conn = await self._connect(*key)
            try:
                response = await self._exchange(conn, data, read_timeout)
            except HttpError as exc:
                if not reused or isinstance(exc, HttpTimeout):
                    raise
                conn.writer.close()  # a kept-alive connection the server had closed: retry once
                conn = await self._connect(*key)
                response = await self._exchange(conn, data, read_timeout)
            yield response
        finally:
            if conn is not None and conn.reusable():
                self._keep_idle(key, conn)
            elif conn is not None:
                conn.writer.close()  # abandoned, broken or closing: the server sees the hang-up

    def _keep_idle(self, key: tuple[str, str, int], conn: _Conn) -> None:
        """Keep one idle connection per server (several requests at once, event streams
        beside the POSTs, may each have opened one: the others are closed)."""
        kept = self._idle.pop(key, None)
        if kept is not None:
            kept.writer.close()
        self._idle[key] = conn

    async def _exchange(
        self, conn: _Conn, data: bytes, read_timeout: float | None
    ) -> StreamResponse:
        """Write the request in one call; wait for the response's status and headers."""
        conn.timeout = read_timeout
        conn.parser.reset()
        conn.writer.write(data)
        parser = conn.parser
        while not parser.head_done:
            await conn.receive()
        headers = {
            k.decode("latin-1").lower(): v.decode("latin-1").rstrip(" \t")
            for k, v in parser.headers
        }
        cookies = [v.decode("latin-1") for k, v in parser.headers if k.lower() == b"set-cookie"]
        return StreamResponse(parser.status, headers, conn, cookies)

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


@functools.lru_cache(maxsize=64)
def _split(url: str) -> tuple[tuple[str, str, int], str, str]:
    """((scheme, host, port), request target, Host header) of a URL; a client asks the
    same few URLs over and over, and urlsplit costs several microseconds each time."""
    parts = urlsplit(url)
    key = (parts.scheme, parts.hostname or "", parts.port or _default_port(parts.scheme))
    return key, (parts.path or "/") + (f"?{parts.query}" if parts.query else ""), parts.netloc


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


__all__ = [
    "PROXY_VARIABLES",
    "Http1Client",
    "HttpError",
    "HttpTimeout",
    "StreamResponse",
    "proxy_configured",
    "request_head",
]
