"""Agents at a URL: ACP's remote transport, as the line streams the endpoint reads.

Theory of operation. The endpoint speaks JSON lines over a (Reader, Writer) pair. For an
agent at `http(s)://…` (Streamable HTTP) or `ws(s)://…` (WebSocket) this module is that
pair, so nothing above it knows the agent is remote.

HTTP, as the transport proposal and the official SDK's client do it:
* `initialize` is POSTed and answered 200 with its result in the body and an
  `Acp-Connection-Id` header; every later message is POSTed with that header (and
  `Acp-Session-Id` for the session-scoped methods), answered 202, one at a time in
  the order written, so the agent sees them in our order; a POST's body is the line
  the endpoint wrote, as written (`Outgoing`: only the method, id and session id are
  read of it, for the headers and for an error reply);
* what the agent sends arrives on SSE streams (GET): the connection's, opened after
  `initialize`, and one per session, opened when a message names a new session id;
* an SSE event's `id:` is remembered, and a stream that drops is opened again with
  `Last-Event-ID` (servers that keep a log, like agentao's gateway, replay what was
  missed; others just go on) up to `Limits.remote_reconnects` times;
* a POST refused with an HTTP error becomes a JSON-RPC error reply to that request,
  so the caller's request fails with the server's reason instead of hanging;
* cookies are kept (the proposal's affinity cookies: `name=value`, sent back on every
  request of the connection); `close()` DELETEs the connection.

The POSTs go over one keep-alive HTTP/1.1 connection of their own (`agentao/http1.py`,
each request written in one call), and each event stream over one more, not through
httpx: on a turn's critical path httpx cost about half a millisecond of CPU per request
and tens of microseconds per event read (bench/remote.py). When a proxy is configured,
all of them go through httpx, which honours it.

WebSocket: one socket, text frames both ways, `initialize` first.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import re
import ssl
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from agentao.http1 import Http1Client, proxy_configured

log = logging.getLogger("agentao.client")

CONNECTION_HEADER = "Acp-Connection-Id"
SESSION_HEADER = "Acp-Session-Id"
REMOTE_KEY_ENV = "AGENTAO_REMOTE_KEY"  # the CLI's bearer key for an agent given as a URL
# Methods whose POST names its session (the others establish one, or are connection-wide).
SESSION_SCOPED = frozenset(
    {
        "session/prompt",
        "session/cancel",
        "session/set_mode",
        "session/set_config_option",
        "session/close",
    }
)
REMOTE_SCHEMES = ("http://", "https://", "ws://", "wss://")
_SESSION_ID = re.compile(rb'"sessionId"\s*:\s*"([^"\\]+)"')


class Outgoing(msgspec.Struct, frozen=True):
    """One message the endpoint wrote: the line itself, sent as it is (never decoded and
    encoded again), and what the transport reads of it to route it and, if it cannot be
    carried, to answer it."""

    line: bytes
    method: Any = None
    id: Any = msgspec.UNSET  # UNSET: a notification or a reply has none to answer
    session_id: str | None = None  # of a session-scoped method: its Acp-Session-Id

    @classmethod
    def read(cls, line: bytes) -> Outgoing:
        """Read what routing needs of one line (ValueError: not a JSON object)."""
        try:
            head = _HEAD.decode(line)
        except msgspec.DecodeError as exc:
            raise ValueError(f"not a JSON-RPC message: {exc}") from None
        return cls(line, head.method, head.id, _session_of(head))

    def is_request(self) -> bool:
        return self.id is not msgspec.UNSET and self.method is not None


class _Head(msgspec.Struct):
    method: Any = None
    id: Any = msgspec.UNSET
    params: msgspec.Raw = msgspec.Raw()  # kept undecoded: only a session id is read of it


class _SessionRef(msgspec.Struct):
    sessionId: Any = None


_HEAD = msgspec.json.Decoder(_Head)
_SESSION_REF = msgspec.json.Decoder(_SessionRef)


def _session_of(head: _Head) -> str | None:
    """The session a session-scoped method names (None: another method, or none named)."""
    if not (isinstance(head.method, str) and head.method in SESSION_SCOPED and head.params):
        return None
    try:
        session = _SESSION_REF.decode(head.params).sessionId
    except msgspec.DecodeError:  # params that are not an object: the server will say so
        return None
    return session if isinstance(session, str) else None


@dataclass(frozen=True, slots=True)
class AgentUrl:
    """An agent served over the network (`https://host/acp`, `wss://host/acp`), and how
    to reach it."""

    url: str
    api_key: str | None = field(default=None, repr=False)  # sent as a bearer token
    headers: tuple[tuple[str, str], ...] = ()  # sent with every request
    timeout: float = 30.0  # seconds to connect, and for each POST
    reconnects: int = 5  # times a dropped event stream is opened again (Last-Event-ID)
    reconnect_backoff: float = 0.2  # seconds before the first reopening; doubled after

    def request_headers(self) -> dict[str, str]:
        headers = dict(self.headers)
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers


def is_agent_url(text: str) -> bool:
    return text.strip().lower().startswith(REMOTE_SCHEMES)


class RemoteStreams:
    """The (reader, writer) pair of one remote connection; see the module docstring."""

    def __init__(self, reconnects: int, backoff: float) -> None:
        self.reader = asyncio.StreamReader(limit=1 << 26)
        self.reconnects = reconnects
        self.backoff = backoff
        self._pending = b""
        self._outbox: asyncio.Queue[Outgoing] = asyncio.Queue()
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    # ---- the Writer the endpoint writes lines to --------------------------------------

    def write(self, data: bytes) -> None:
        self._pending += data
        *lines, self._pending = self._pending.split(b"\n")
        for line in lines:
            if line.strip():
                self._outbox.put_nowait(Outgoing.read(line))

    async def drain(self) -> None:
        """Nothing to wait for: the outbox is unbounded and the POSTs leave in order."""

    # ---- shared --------------------------------------------------------------------

    def deliver(self, data: bytes) -> None:
        """One message from the agent, as one line for the endpoint."""
        self.reader.feed_data(_one_line(data) + b"\n")

    def deliver_all(self, messages: list[bytes]) -> None:
        """Messages that arrived together, handed to the endpoint together (one wake-up)."""
        self.reader.feed_data(b"\n".join(map(_one_line, messages)) + b"\n")

    def fail(self, message: Outgoing, reason: str) -> None:
        """A request the transport could not carry gets an error reply with its id."""
        if message.is_request():
            error = {"code": -32603, "message": reason, "data": {"reason": "transport"}}
            self.deliver(json.dumps({"jsonrpc": "2.0", "id": message.id, "error": error}).encode())

    def spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def end(self) -> None:
        if not self.reader.at_eof():
            self.reader.feed_eof()

    async def close(self) -> None:
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.end()


class HttpStreams(RemoteStreams):
    """Streamable HTTP: POSTs in order, answers on SSE streams."""

    def __init__(
        self,
        agent: AgentUrl,
        client: Any,
        reconnects: int,
        backoff: float,
        posts: Http1Client | None = None,
        events: Http1Client | None = None,
    ) -> None:
        super().__init__(reconnects, backoff)
        self.agent = agent
        self.http = client  # httpx.AsyncClient: the DELETE, and everything behind a proxy
        self.posts = posts  # the POSTs' own connection (None: httpx's, behind a proxy)
        self.events = events  # the event streams' connections (None: httpx's, behind a proxy)
        self.cookies: dict[str, str] = {}  # name -> value, from every answer (affinity)
        self.connection_id: str | None = None
        self._sessions: set[str] = set()
        self._post_headers = {"Content-Type": "application/json", **agent.request_headers()}
        self.spawn(self._send_all())

    async def _send_all(self) -> None:
        while True:
            message = await self._outbox.get()
            try:
                await self._send(message)
            except Exception as exc:  # the transport failed, not the message: say so
                log.info("remote %s: %s", message.method or "reply", exc)
                self.fail(message, f"could not reach the agent at {self.agent.url}: {exc}")

    async def _send(self, message: Outgoing) -> None:
        headers = self._post_headers.copy()
        first = message.method == "initialize"
        if not first:
            if self.connection_id is None:
                return self.fail(message, "not connected: initialize first")
            headers[CONNECTION_HEADER] = self.connection_id
            if message.session_id is not None:
                headers[SESSION_HEADER] = message.session_id
        status, answer_headers, content = await self._post(message.line, headers)
        if status >= 400 or (first and status != 200):
            return self.fail(message, _http_error(status, content))
        if first:
            self.connection_id = answer_headers.get(CONNECTION_HEADER.lower())
            if not self.connection_id:
                return self.fail(message, f"the server sent no {CONNECTION_HEADER} header")
            self.deliver(content)
            self.spawn(self._stream(None))
        elif status == 200 and content.strip():
            self.deliver(content)

    async def _post(
        self, body: bytes, headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        """POST one message: (status, headers with lower-case names, body)."""
        headers = {**headers, **self._cookie_header()}
        if self.posts is None:
            response = await self.http.post(self.agent.url, content=body, headers=headers)
            self._keep(response.headers.get_list("set-cookie"))
            answer = {name.lower(): value for name, value in response.headers.items()}
            return response.status_code, answer, response.content
        async with self.posts.post(self.agent.url, body, headers) as streamed:
            content = await streamed.aread()
        self._keep(streamed.set_cookies)
        return streamed.status_code, streamed.headers, content

    def _keep(self, set_cookies: Iterable[str]) -> None:
        """Remember each cookie an answer set (its attributes do not matter here: one
        origin, for as long as the connection lasts)."""
        for line in set_cookies:
            name, found, value = line.split(";", 1)[0].partition("=")
            if found and name.strip():
                self.cookies[name.strip()] = value.strip()

    def _cookie_header(self) -> dict[str, str]:
        if not self.cookies:
            return {}
        return {"Cookie": "; ".join(f"{name}={value}" for name, value in self.cookies.items())}

    async def _stream(self, session_id: str | None) -> None:
        """One SSE stream for as long as it lasts, opened again with Last-Event-ID."""
        last_id: str | None = None
        for attempt in range(self.reconnects + 1):
            if attempt:
                await asyncio.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                async for events in self._events(session_id, last_id):
                    for event_id, data in events:
                        last_id = event_id or last_id
                        self._saw(data, session_id)
                    self.deliver_all([data for _, data in events])
            except Exception as exc:
                log.info("remote stream %s dropped: %s", session_id or "(connection)", exc)
            if self._closed:
                return
        if session_id is None:
            self.end()  # the connection's own stream is gone for good: so is the agent

    async def _events(
        self, session_id: str | None, last_id: str | None
    ) -> AsyncIterator[list[tuple[str | None, bytes]]]:
        """The stream's events, (id, data), as they arrive: those of one read together."""
        assert self.connection_id is not None
        headers = {"Accept": "text/event-stream", CONNECTION_HEADER: self.connection_id}
        headers.update(self.agent.request_headers())
        if session_id is not None:
            headers[SESSION_HEADER] = session_id
        if last_id is not None:
            headers["Last-Event-ID"] = last_id
        headers.update(self._cookie_header())
        parser = SseParser()
        async with self._open_stream(headers) as chunks:
            async for chunk in chunks:
                if events := parser.feed(chunk):
                    yield events

    @contextlib.asynccontextmanager
    async def _open_stream(self, headers: dict[str, str]) -> AsyncIterator[AsyncIterator[bytes]]:
        """GET the event stream: its bytes as they come, read with no time limit (the
        server pings a quiet stream). Over the streams' own connections (`http1.py`: on a
        turn's critical path httpx costs tens of microseconds per event), else httpx."""
        if self.events is None:
            no_read_limit = self.http.timeout.__class__(self.http.timeout.connect, read=None)
            stream = self.http.stream("GET", self.agent.url, headers=headers, timeout=no_read_limit)
            async with stream as response:
                self._opened(response.status_code, response.headers.get_list("set-cookie"))
                yield response.aiter_bytes()
            return
        async with self.events.request("GET", self.agent.url, None, headers, None) as response:
            self._opened(response.status_code, response.set_cookies)
            yield response.aiter_bytes()

    def _opened(self, status: int, set_cookies: Iterable[str]) -> None:
        self._keep(set_cookies)
        if status != 200:
            raise ConnectionError(f"HTTP {status} for the event stream")

    def _saw(self, data: bytes, stream: str | None) -> None:
        """Open a session's stream the first time a message names the session."""
        if stream is not None:
            return
        found = _SESSION_ID.search(data)
        session = found.group(1).decode() if found else None
        if session is not None and session not in self._sessions:
            self._sessions.add(session)
            self.spawn(self._stream(session))

    async def close(self) -> None:
        await super().close()
        if self.connection_id is not None:
            headers = {CONNECTION_HEADER: self.connection_id, **self.agent.request_headers()}
            headers.update(self._cookie_header())
            with contextlib.suppress(Exception):
                await self.http.request("DELETE", self.agent.url, headers=headers)
        await self.http.aclose()
        for own in (self.posts, self.events):
            if own is not None:
                await own.aclose()


class WebSocketStreams(RemoteStreams):
    """WebSocket: text frames both ways on one socket."""

    def __init__(self, socket: Any) -> None:
        super().__init__(reconnects=0, backoff=0.0)
        self.socket = socket
        self.spawn(self._send_all())
        self.spawn(self._receive_all())

    async def _send_all(self) -> None:
        while True:
            message = await self._outbox.get()
            try:
                await self.socket.send(message.line, text=True)
            except Exception as exc:
                self.fail(message, f"the WebSocket is closed: {exc}")

    async def _receive_all(self) -> None:
        try:
            async for frame in self.socket:
                if isinstance(frame, str) and frame.strip():
                    self.deliver(frame.encode())
        except Exception as exc:
            log.info("remote WebSocket closed: %s", exc)
        finally:
            self.end()

    async def close(self) -> None:
        await super().close()
        with contextlib.suppress(Exception):
            await self.socket.close()


async def connect(agent: AgentUrl) -> RemoteStreams:
    """The streams of a new connection to `agent` (nothing is sent until `initialize`)."""
    timeout = agent.timeout
    if agent.url.lower().startswith(("ws://", "wss://")):
        from websockets.asyncio.client import connect as ws_connect

        socket = await asyncio.wait_for(
            ws_connect(
                agent.url, additional_headers=agent.request_headers() or None, max_size=1 << 26
            ),
            timeout,
        )
        return WebSocketStreams(socket)
    import httpx

    client = httpx.AsyncClient(timeout=timeout, follow_redirects=False, verify=_tls_context())
    posts = events = None
    if not proxy_configured():
        posts = Http1Client(timeout, timeout, {}, _tls_context())
        events = Http1Client(timeout, timeout, {}, _tls_context())
    return HttpStreams(agent, client, agent.reconnects, agent.reconnect_backoff, posts, events)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """httpx's default verifying context, built once: loading the CA bundle costs ~30 ms,
    which each new connection (a hundred at once, say) would otherwise pay."""
    import httpx

    return httpx.create_ssl_context()


class SseParser:
    """Server-sent events, incrementally: (id, data) per event; comments skipped."""

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[bytes] = []
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[tuple[str | None, bytes]]:
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        events = []
        for line in lines:
            line = line.rstrip(b"\r")
            if not line:
                if self._data:
                    events.append((self._id, b"\n".join(self._data)))
                self._data, self._id = [], None
                continue
            name, _, value = line.partition(b":")
            value = value[1:] if value.startswith(b" ") else value
            if name == b"data":
                self._data.append(value)
            elif name == b"id":
                self._id = value.decode("utf-8", "replace")
        return events


def _one_line(data: bytes) -> bytes:
    """A message as one line, whatever the sender did (pretty-printed JSON); one that is
    not JSON stays one line too, for the endpoint to refuse as it refuses any bad line
    (not an exception here that would drop the stream and the messages read with it)."""
    if b"\n" not in data:
        return data
    try:
        return json.dumps(json.loads(data), separators=(",", ":")).encode()
    except ValueError:
        return data.replace(b"\n", b" ")


def _http_error(status: int, content: bytes) -> str:
    detail: Any = content.decode("utf-8", "replace").strip()
    try:
        body = json.loads(content)
        error = body.get("error") if isinstance(body, dict) else None
        detail = error.get("message", detail) if isinstance(error, dict) else (error or detail)
    except ValueError:
        pass
    return f"HTTP {status} from the agent's server: {str(detail)[:300]}"


__all__ = [
    "AgentUrl",
    "HttpStreams",
    "Outgoing",
    "RemoteStreams",
    "SseParser",
    "WebSocketStreams",
    "connect",
    "is_agent_url",
]
