"""Requests one replica passes to another: the holder of a conversation answers it.

Theory of operation. On a shared store a live conversation sits in one replica's agent
process (its lease, store/cluster.py). A request that reaches another replica — a load
balancer without affinity, a client that moved — is found to be the holder's before any
route runs (holders.py) and *forwarded* to the holder (`pass_on`): the same
method, path, query, body and headers (the client's `Authorization` among them, so the
holder authenticates it as it would the client), and the holder's answer streamed back
byte for byte, SSE included; a client that leaves closes the forwarded request too, so
the holder sees it leave. A redirect would be simpler, but every HTTP client drops
`Authorization` on a redirect to another origin, so with API keys it cannot work;
`cross_replica = "redirect"` keeps it for deployments without keys where clients reach
every replica.

What is checked where. This replica's guard already judged the request's Host and
Origin, so the page's own headers (`Origin`, `Sec-Fetch-*`, cookies) are not passed on:
the holder would judge them against *its* origin. The one exception is the web UI's
login session cookie (login.py), a credential like a key: keyless replicas run on one
machine (loopback only) from one state directory, so they share the local token that
signs it, and the holder checks it again. Nothing is trusted because it was
forwarded: the holder authenticates the key again and checks ownership again. A
forwarded request carries `Agentao-Forwarded-By`; a replica never forwards such a
request again (the conversation moved while it was on its way: 503, come back), so two
replicas cannot bounce one request between them. Replicas' addresses come from the
store (`gw_replicas`), which every replica already trusts with everything else.

Small questions go to one replica too (`call`): remote ACP's prompts, cancels and
permission answers for a session live on another replica (remote/far.py), and the
task stream's. No replica is asked in turn: which one holds a conversation, or asks a
permission question, is read from the store (holders.py, questions.py).
Whole requests and small questions alike take one path, `send`: marked as passed on,
the holder watched by its heartbeat while it answers, an unreachable one a 503.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import socket
from collections.abc import AsyncIterator, Awaitable, Mapping
from typing import Any, TypeVar

import anyio
import httpx
import msgspec
from starlette.background import BackgroundTask
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from agentao.gateway.auth import API_KEY_HEADER, CLIENT_HEADER, key_from_subprotocols
from agentao.gateway.config import GatewayConfig
from agentao.gateway.errors import AgentUnavailable, ApiError, error_body
from agentao.gateway.login import COOKIE_NAME
from agentao.gateway.replicas import Replica

log = logging.getLogger("agentao.gateway")
T = TypeVar("T")
_encode = msgspec.json.Encoder().encode

FORWARDED_BY = "agentao-forwarded-by"  # the boot id of the replica that passed it on
# Meaningful for one connection only (RFC 9110 §7.6.1), or recomputed by the client.
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
# A page's marks, already judged by this replica's guard (see above).
_PAGE_HEADERS = frozenset(
    {"origin", "referer", "cookie", "sec-fetch-site", "sec-fetch-mode", "sec-fetch-dest"}
)
_NOT_PASSED_ON = _HOP_BY_HOP | _PAGE_HEADERS | {FORWARDED_BY}


class Peers:
    """This replica's HTTP client to the others."""

    def __init__(self, replica: Replica, config: GatewayConfig) -> None:
        self.replica = replica
        self.redirect = config.cross_replica == "redirect"
        self.connect_seconds = config.limits.forward_connect_seconds
        self.heartbeat_seconds = config.limits.heartbeat_seconds
        self.retry_seconds = config.limits.lease_seconds
        self._client: httpx.AsyncClient | None = None

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                # A turn may stream for minutes, or say nothing until it ends.
                timeout=httpx.Timeout(None, connect=self.connect_seconds),
                # Headers and body are written apart: without NODELAY the body waits for
                # the holder's delayed ACK, 40 ms on every forwarded request.
                transport=httpx.AsyncHTTPTransport(
                    limits=httpx.Limits(max_connections=None, max_keepalive_connections=32),
                    socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
                ),
                follow_redirects=False,
                trust_env=False,  # replica to replica directly, never through an env proxy
            )
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()

    # ---- the one path to another replica ---------------------------------------------------

    async def send(
        self, url: str, method: str, target: str, headers: list[tuple[str, str]], body: bytes
    ) -> httpx.Response:
        """`method target` on the replica at `url`, marked as passed on by this one; the
        answer's head, its body still to be read (streamed). A holder that cannot be
        reached, or whose heartbeat stops while it is asked, is a 503 (`AgentUnavailable`).

        Every request one replica makes of another goes this way: a whole HTTP request
        passed to the holder (`forward`) and the small questions (`call`: remote ACP's
        prompts, cancels and answers, the task stream's)."""
        marked = [*headers, (FORWARDED_BY, self.replica.boot_id)]
        upstream = self.client.build_request(method, f"{url}{target}", headers=marked, content=body)
        try:
            return await self._unless_silent(self.client.send(upstream, stream=True), url)
        except httpx.TransportError as exc:
            raise _unreachable(url, exc, self.retry_seconds) from None

    # ---- a whole request --------------------------------------------------------------------

    async def pass_on(self, request: Request, owner_url: str) -> Response:
        """The answer to a request whose conversation another live replica holds: passed
        to it (or, with `cross_replica = "redirect"`, the client sent there)."""
        if self.redirect:
            return _redirect(request, owner_url)
        if FORWARDED_BY in request.headers:  # moved while it was on its way: no ping-pong
            return _moved(1.0).response()
        try:
            return await self.forward(request, owner_url)
        except ApiError as refusal:
            return refusal.response()

    async def forward(self, request: Request, owner_url: str) -> Response:
        """`request` sent to `owner_url` as it came, its answer streamed back."""
        query = f"?{request.url.query}" if request.url.query else ""
        log.debug("passing %s %s to %s", request.method, request.url.path, owner_url)
        upstream = await self.send(
            owner_url,
            request.method,
            f"{request.url.path}{query}",
            self._headers(request),
            await request.body(),  # the raw bytes, as the client sent them
        )
        return StreamingResponse(
            self._relay(upstream, owner_url),
            status_code=upstream.status_code,
            headers={k: v for k, v in upstream.headers.items() if k not in _HOP_BY_HOP},
            background=BackgroundTask(upstream.aclose),
        )

    async def _relay(self, upstream: httpx.Response, owner_url: str) -> AsyncIterator[bytes]:
        chunks = upstream.aiter_raw()
        try:
            while True:
                try:
                    yield await self._unless_silent(anext(chunks), owner_url)
                except StopAsyncIteration:
                    return
                except (ApiError, httpx.TransportError) as exc:  # cut short: as a direct client's
                    log.warning("the holder %s stopped answering mid-answer: %s", owner_url, exc)
                    return
        finally:
            # Also when our client left (the stream is cancelled): the holder sees it leave.
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await upstream.aclose()

    async def _unless_silent(self, step: Awaitable[T], owner_url: str) -> T:
        """`step`'s result, however long it takes while the holder is alive; a holder
        whose heartbeat stops (stalled, or cut off from the database) is not waited for."""
        task = asyncio.ensure_future(step)
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=self.heartbeat_seconds)
                if done:
                    return task.result()
                if not await self.replica.alive(owner_url):
                    raise _unreachable(owner_url, TimeoutError(), self.retry_seconds)
        finally:
            task.cancel()

    def _headers(self, request: Request) -> list[tuple[str, str]]:
        headers = [(k, v) for k, v in request.headers.items() if k not in _NOT_PASSED_ON]
        client = request.client.host if request.client else ""
        return [
            *headers,
            *_session_cookie(request).items(),
            ("x-forwarded-for", client),
            ("x-forwarded-host", request.headers.get("host", "")),
            ("x-forwarded-proto", request.url.scheme),
        ]

    # ---- small questions ------------------------------------------------------------------

    async def call(
        self, url: str, method: str, path: str, who: Mapping[str, str], json: Any = None
    ) -> httpx.Response:
        """`method path` on the replica at `url`, as the caller whose credentials are
        `who` (its key, and the web UI's mark when it is the UI asking); read whole."""
        headers = list(who.items())
        body = b""
        if json is not None:
            headers.append(("content-type", "application/json"))
            body = _encode(json)
        reply = await self.send(url, method, path, headers, body)
        try:
            await self._unless_silent(reply.aread(), url)
        except httpx.TransportError as exc:
            raise _unreachable(url, exc, self.retry_seconds) from None
        finally:
            await reply.aclose()
        return reply


def credentials(conn: HTTPConnection) -> dict[str, str]:
    """What says who the caller is, to pass on: its key as a bearer header, whether it
    came as one, as `x-api-key` (Anthropic's SDK) or (a WebSocket from a browser) as a
    subprotocol, and the web UI's mark."""
    who = {CLIENT_HEADER: conn.headers[CLIENT_HEADER]} if CLIENT_HEADER in conn.headers else {}
    authorization = conn.headers.get("authorization")
    key = conn.headers.get(API_KEY_HEADER) or key_from_subprotocols(
        conn.scope.get("subprotocols", ())
    )
    if authorization:
        who["authorization"] = authorization
    elif key:
        who["authorization"] = f"Bearer {key}"
    return {**who, **_session_cookie(conn)}


def _session_cookie(conn: HTTPConnection) -> dict[str, str]:
    """The web UI's login session, the one cookie passed on: keyless replicas share the
    local token that signs it, so the holder checks it again, as it would a key."""
    value = conn.cookies.get(COOKIE_NAME)
    return {"cookie": f"{COOKIE_NAME}={value}"} if value else {}


def error_message(reply: httpx.Response) -> str:
    try:
        return str(reply.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return f"another gateway replica answered {reply.status_code}"


def _unreachable(url: str, exc: Exception, retry_after: float = 1.0) -> AgentUnavailable:
    return AgentUnavailable(
        f"this is live on another gateway replica ({url}), which cannot be reached "
        f"({type(exc).__name__}); try again, at the latest once its lease expires",
        code="conversation_elsewhere",
        headers={"Retry-After": str(max(1, math.ceil(retry_after)))},
    )


def _redirect(request: Request, owner_url: str) -> Response:
    """A 307 to the holder: the method and body are kept (the client must send its
    credentials again: HTTP clients drop them on a redirect to another origin)."""
    query = f"?{request.url.query}" if request.url.query else ""
    message = f"this conversation is live on another replica ({owner_url}); follow the redirect"
    return JSONResponse(
        error_body(message, "conversation_elsewhere", code="conversation_elsewhere"),
        status_code=307,
        headers={"Location": f"{owner_url}{request.url.path}{query}"},
    )


def _moved(retry_after: float) -> AgentUnavailable:
    return AgentUnavailable(
        "this conversation moved to another gateway replica while the request was passed "
        "on; send it again",
        code="conversation_elsewhere",
        headers={"Retry-After": str(max(1, math.ceil(retry_after)))},
    )


__all__ = ["FORWARDED_BY", "Peers", "credentials", "error_message"]
