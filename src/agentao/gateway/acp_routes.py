"""Remote ACP on the wire: Streamable HTTP (POST + SSE) and a WebSocket, on one path (the
service behind it is `gateway/remote/`).

The default agent (the first configured) answers at `/acp`, any agent at
`/agents/{name}/acp`. As the official SDK's server and client transports do:

    POST    initialize                      200, the result, `Acp-Connection-Id`
    POST    anything else                   202; replies arrive on a stream
            (with `Acp-Connection-Id`; the session-scoped methods with `Acp-Session-Id`)
    GET     Accept: text/event-stream       the connection's stream, or with
                                            `Acp-Session-Id` a session's
    DELETE  with `Acp-Connection-Id`        202, the connection closed
    WebSocket upgrade                       every message as a text frame, both ways

and the refusals: 415 a body not declared JSON, 400 one that is not a JSON object (501
a batch) or lacks a header it needs, 404 an unknown connection or session, 406 a GET
that does not accept `text/event-stream`, 429 a key at its connection limit. A request
with no connection yet is read as the stdio agent reads one before `initialize` (a
fresh protocol connection): its JSON-RPC error (-32002, or -32602 for a bad
`initialize`) is the body of a 400.

Our extensions: every SSE event carries `id:` (the message's number on the
connection), and a GET with `Last-Event-ID` replays the stream after it. A WebSocket
reconnects to its connection with the `Acp-Connection-Id` header (or
`?connection_id=`) and `?after_seq=N`, N the frames it got (the `initialize` reply
is frame 1). Every answer sets the affinity cookie (`agentao_affinity`, this gateway
process), which the transport proposal expects clients to send back.

Authentication, agent access, Host and Origin are the OpenAI API's (`Guard`,
`Gateway.principal`): a bearer key, or for a browser's WebSocket the key subprotocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
from collections.abc import AsyncIterator
from typing import Any

import msgspec
from fastapi import APIRouter, Request, WebSocket, WebSocketDisconnect
from starlette.responses import Response, StreamingResponse

from agentao.client.remote import CONNECTION_HEADER, SESSION_HEADER, SESSION_SCOPED
from agentao.gateway.auth import WS_PROTOCOL, Principal
from agentao.gateway.direct_posts import Handler
from agentao.gateway.errors import ApiError, BadRequest, NotAcceptable, NotFound, NotImplementedApi
from agentao.gateway.peers import credentials
from agentao.gateway.remote.clients import (
    STORE_FAILED,
    UNSTORED,
    RemoteClient,
    RemoteClients,
)
from agentao.gateway.remote.service import RemoteAcp
from agentao.gateway.service import Gateway, check_json
from agentao.protocol.connection import Connection as Wire
from agentao.protocol.connection import Reject
from agentao.protocol.errors import AcpError
from agentao.store.remote import RemoteMessage

router = APIRouter()
AFFINITY_COOKIE = "agentao_affinity"
NORMAL_CLOSURE = 1000
EVENT_STREAM = "text/event-stream"
SPEAKS = (1, 2)  # remote ACP: v1 as the agent does, v2 through the bridge (remote/bridge.py)
_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode


# ---- Streamable HTTP --------------------------------------------------------------------


@router.post("/acp", include_in_schema=False)
async def post_default(request: Request) -> Response:
    return await _post(request, _default_agent(request))


@router.post("/agents/{name}/acp", include_in_schema=False)
async def post_named(request: Request, name: str) -> Response:
    return await _post(request, name)


@router.get("/acp", include_in_schema=False)
async def stream_default(request: Request) -> Response:
    return await _stream(request, _default_agent(request))


@router.get("/agents/{name}/acp", include_in_schema=False)
async def stream_named(request: Request, name: str) -> Response:
    return await _stream(request, name)


@router.delete("/acp", include_in_schema=False)
async def delete_default(request: Request) -> Response:
    return await _delete(request)


@router.delete("/agents/{name}/acp", include_in_schema=False)
async def delete_named(request: Request, name: str) -> Response:
    return await _delete(request)


def direct_post(path: str) -> Handler | None:
    """The handler of a remote-ACP POST to `path` (`/acp`, `/agents/{name}/acp`), for
    direct_posts.py; None for any other path."""
    if path == "/acp":
        return functools.partial(_direct, "")
    named = _NAMED_ACP.fullmatch(path)
    return functools.partial(_direct, named.group(1)) if named is not None else None


async def _direct(agent: str, request: Request) -> Response:
    response = await _post(request, agent or _default_agent(request))
    # One turn of the loop before the reply is encoded and written: the work the message
    # started (a prompt's way through the store to the agent) goes first, and the reply,
    # which the client only waits on to send its next message, comes after it instead of
    # ahead of it on the turn's critical path.
    await asyncio.sleep(0)
    return response


_NAMED_ACP = re.compile(r"/agents/([^/]+)/acp")


async def _post(request: Request, agent: str) -> Response:
    gw, remote = _parts(request)
    principal = gw.principal(request)
    check_json(request.headers.get("content-type"))
    message = _message(await request.body())
    if not request.headers.get(CONNECTION_HEADER) or _is_initialize(message):
        return await _initialize(request, remote, principal, agent, message)
    connection = _connection(remote, request, principal)
    method = message.get("method") if isinstance(message, dict) else None
    session_id = request.headers.get(SESSION_HEADER)
    if method in SESSION_SCOPED and session_id is None:
        raise BadRequest(f"{method} needs the {SESSION_HEADER} header", code="missing_session_id")
    if session_id is not None and session_id not in connection.sessions:
        raise _unknown_session(session_id)
    remote.receive(connection, message)
    return _affine(Response(status_code=202), gw)


async def _initialize(
    request: Request,
    remote: RemoteAcp,
    principal: Principal,
    agent: str,
    message: dict[str, Any] | bytes,
) -> Response:
    """A message with no connection: `initialize` opens one; any other request is refused
    as the stdio agent refuses it before `initialize` (the JSON-RPC error, status 400)."""
    remote.check_agent(principal, agent)
    wire = Wire("agent", speaks=SPEAKS)
    first = remote.first_message(wire, message)
    if isinstance(first, Reject):
        return Response(first.reply.rstrip(b"\n"), 400, media_type="application/json")
    if first is None:  # a notification or a reply: nothing to answer it with
        raise BadRequest(
            f"the {CONNECTION_HEADER} header is missing (send initialize first)",
            code="missing_connection_id",
        )
    try:
        connection, reply = await remote.open(principal, agent, "http", (wire, first))
    except AcpError as exc:
        body = {"jsonrpc": "2.0", "id": first.id, "error": exc.to_wire()}
        return Response(_encode(body), 400, media_type="application/json")
    connection.credentials = credentials(request)
    headers = {CONNECTION_HEADER: connection.id}
    response = Response(reply, 200, headers, media_type="application/json")
    return _affine(response, request.app.state.gateway)


async def _stream(request: Request, agent: str) -> Response:
    gw, remote = _parts(request)
    principal = gw.principal(request)
    if EVENT_STREAM not in request.headers.get("accept", ""):
        raise NotAcceptable(
            f"an ACP stream is read with 'Accept: {EVENT_STREAM}'", code="not_acceptable"
        )
    connection = _connection(remote, request, principal)
    session_id = request.headers.get(SESSION_HEADER)
    if session_id is not None and session_id not in connection.sessions:
        raise _unknown_session(session_id)
    after = _position(request.headers.get("last-event-id"), "Last-Event-ID")
    events = _events(connection, session_id or "", after, gw.limits.ping_interval_seconds)
    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return _affine(StreamingResponse(events, media_type=EVENT_STREAM, headers=headers), gw)


async def _events(
    connection: RemoteClient, scope: str, after: int | None, keepalive: float
) -> AsyncIterator[bytes]:
    async with contextlib.aclosing(connection.bursts(scope, after, keepalive)) as bursts:
        async for burst in bursts:
            if burst is None:
                yield b": keepalive\n\n"
            else:  # a burst in one write
                yield b"".join(map(_sse_event, burst))


def _sse_event(message: RemoteMessage) -> bytes:
    if message.seq == UNSTORED:  # the store failed: no id, nothing to resume from
        return b"data: %s\n\n" % message.body
    # The body is one line of JSON: msgspec escapes every newline in it.
    return b"id: %d\ndata: %s\n\n" % (message.seq, message.body)


async def _delete(request: Request) -> Response:
    gw, remote = _parts(request)
    connection = _connection(remote, request, gw.principal(request))
    await remote.close(connection)
    return Response(status_code=202)


# ---- WebSocket --------------------------------------------------------------------------


@router.websocket("/acp")
async def socket_default(websocket: WebSocket) -> None:
    await _socket(websocket, _default_agent(websocket))


@router.websocket("/agents/{name}/acp")
async def socket_named(websocket: WebSocket, name: str) -> None:
    await _socket(websocket, name)


async def _socket(websocket: WebSocket, agent: str) -> None:
    gw, remote = _parts(websocket)
    try:
        principal = gw.principal(websocket)
        remote.check_agent(principal, agent)
        resumed = _resumed(websocket, remote, principal)
        after = _position(websocket.query_params.get("after_seq"), "after_seq")
    except ApiError as exc:  # refused with the error's status and body
        await exc.send(websocket.scope, websocket.receive, websocket.send)
        return
    connection_id = resumed.id if resumed is not None else RemoteClients.new_id()
    offered = websocket.scope.get("subprotocols", ())
    await websocket.accept(
        subprotocol=WS_PROTOCOL if WS_PROTOCOL in offered else None,
        headers=[
            (CONNECTION_HEADER.lower().encode(), connection_id.encode()),
            (b"set-cookie", _cookie(gw).encode()),
        ],
    )
    connection = resumed or await _open_socket(websocket, remote, principal, agent, connection_id)
    if connection is None:
        return
    connection.credentials = credentials(websocket)
    loop = asyncio.get_running_loop()
    keepalive = gw.limits.ping_interval_seconds
    writer = loop.create_task(_write(websocket, connection, after, keepalive))
    reader = loop.create_task(_read(websocket, remote, connection))
    # Whichever ends first ends the other: the client left (it may come back with
    # after_seq), or the connection was closed (DELETE, idle, the gateway stopping).
    await asyncio.wait({writer, reader}, return_when=asyncio.FIRST_COMPLETED)
    for task in (writer, reader):
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
    said_goodbye = reader.done() and not reader.cancelled() and reader.exception() is None
    if said_goodbye and reader.result():
        await remote.close(connection)


async def _write(
    websocket: WebSocket, connection: RemoteClient, after: int | None, keepalive: float
) -> None:
    try:
        async with contextlib.aclosing(connection.bursts(None, after, keepalive)) as bursts:
            async for burst in bursts:
                for message in burst or ():  # pings (None) are uvicorn's (ws_ping_interval)
                    await websocket.send_text(message.body.decode())
        if connection.failure is not None:  # the store failed: an error, not a goodbye
            await websocket.close(code=1011, reason=STORE_FAILED)
            return
        await websocket.close(code=1001)  # going away: closed here, or the gateway stops
    except (WebSocketDisconnect, RuntimeError):
        pass


async def _open_socket(
    websocket: WebSocket, remote: RemoteAcp, principal: Principal, agent: str, connection_id: str
) -> RemoteClient | None:
    """A new connection once the socket sends `initialize`; None if it left first. Frames
    before it are answered as the stdio agent answers them before `initialize` (those
    replies carry no number: the `initialize` reply is message 1)."""
    wire = Wire("agent", speaks=SPEAKS)
    limit = remote.limits.max_request_bytes
    while True:
        try:
            text = await websocket.receive_text()
        except (WebSocketDisconnect, RuntimeError, KeyError):
            return None
        if len(text) > limit:
            await websocket.close(code=1009, reason=f"a frame above {limit} bytes")
            return None
        first = remote.first_message(wire, text.encode())
        if isinstance(first, Reject):
            await websocket.send_text(first.reply.rstrip(b"\n").decode())
            continue
        if first is None:
            continue
        try:
            connection, _reply = await remote.open(
                principal, agent, "ws", (wire, first), connection_id
            )
        except (AcpError, ApiError) as exc:
            error = (
                exc.to_wire()
                if isinstance(exc, AcpError)
                else {"code": -32600, "message": str(exc)}
            )
            await websocket.send_text(
                _encode({"jsonrpc": "2.0", "id": first.id, "error": error}).decode()
            )
            await websocket.close(code=1008)
            return None
        return connection


async def _read(websocket: WebSocket, remote: RemoteAcp, connection: RemoteClient) -> bool:
    """Pass the client's frames on; whether it said goodbye (close code 1000: done, so
    the connection is closed; any other end is a drop it may come back from)."""
    limit = remote.limits.max_request_bytes
    while True:
        try:
            frame = await websocket.receive()
        except WebSocketDisconnect as exc:
            return exc.code == NORMAL_CLOSURE
        except RuntimeError:
            return False
        if frame["type"] == "websocket.disconnect":
            return frame.get("code") == NORMAL_CLOSURE
        text = frame.get("text")
        if text is None:
            continue  # binary frames mean nothing here
        if len(text) > limit:
            await websocket.close(code=1009, reason=f"a frame above {limit} bytes")
            return False
        remote.receive_text(connection, text)


def _resumed(websocket: WebSocket, remote: RemoteAcp, principal: Principal) -> RemoteClient | None:
    connection_id = websocket.headers.get(CONNECTION_HEADER) or websocket.query_params.get(
        "connection_id"
    )
    return remote.connections.get(connection_id, principal) if connection_id else None


# ---- shared -------------------------------------------------------------------------------


def _parts(conn: Request | WebSocket) -> tuple[Gateway, RemoteAcp]:
    gw: Gateway = conn.app.state.gateway
    return gw, gw.remote


def _default_agent(conn: Request | WebSocket) -> str:
    gw: Gateway = conn.app.state.gateway
    return gw.config.agents[0].name


def _message(body: bytes) -> dict[str, Any] | bytes:
    """The body's JSON-RPC message; or the body itself when it is JSON the fast decoder
    refuses (a lone surrogate, a number out of range, nesting too deep), for the protocol
    connection to salvage and answer as on stdio."""
    try:
        message = _decode(body)
    except msgspec.DecodeError as exc:
        raise BadRequest(f"the body is not valid JSON: {exc}", code="invalid_json") from None
    except (msgspec.ValidationError, RecursionError):
        return body
    if isinstance(message, list):
        raise NotImplementedApi("JSON-RPC batches are not supported", code="batch_unsupported")
    if not isinstance(message, dict):
        raise BadRequest("a JSON-RPC message is a JSON object", code="invalid_message")
    return message


def _is_initialize(message: dict[str, Any] | bytes) -> bool:
    """An `initialize` request (its id may be null): it opens a new connection."""
    return isinstance(message, dict) and message.get("method") == "initialize" and "id" in message


def _connection(remote: RemoteAcp, request: Request, principal: Principal) -> RemoteClient:
    connection_id = request.headers.get(CONNECTION_HEADER)
    if not connection_id:
        raise BadRequest(
            f"the {CONNECTION_HEADER} header is missing (send initialize first)",
            code="missing_connection_id",
        )
    connection = remote.connections.get(connection_id, principal)
    connection.credentials = credentials(request)  # the key it came with this time
    return connection


def _unknown_session(session_id: str) -> NotFound:
    return NotFound(
        f"this connection has no session {session_id!r} (session/new or session/load it first)",
        code="session_not_found",
    )


def _position(value: str | None, name: str) -> int | None:
    if value is None or value == "":
        return None
    if not value.isdigit():
        raise BadRequest(f"{name} must be a message number", code="invalid_position")
    return int(value)


def _cookie(gw: Gateway) -> str:
    return f"{AFFINITY_COOKIE}={gw.boot.id}; Path=/; HttpOnly; SameSite=Strict"


def _affine(response: Response, gw: Gateway) -> Response:
    response.headers.append("set-cookie", _cookie(gw))
    return response


__all__ = ["AFFINITY_COOKIE", "CONNECTION_HEADER", "SESSION_HEADER", "direct_post", "router"]
