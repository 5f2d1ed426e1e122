"""Remote ACP clients for the gateway's tests: the official SDK's, and a raw one.

`SdkPeer` is the official Python SDK's client (`acp.connect_to_agent` over its own
HTTP or WebSocket transport): what an editor built on the SDK does, unchanged.
`RawPeer` speaks the HTTP transport by hand with httpx, so a test can drop a stream,
resume it with `Last-Event-ID` and see every SSE `id:`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import acp
import httpx
from acp.http.client import create_http_stream
from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    ReadTextFileResponse,
    RequestPermissionResponse,
)
from acp.ws.client import create_websocket_stream

from agentao.client.remote import SseParser


class SdkPeer:
    """The SDK's client side: records what the gateway sends; answers as told.

    `answer`: the option id to pick (the first offered when None), or "wait" to leave
    every permission request open until the test sets `release`.
    """

    def __init__(self, answer: str | None = None, files: dict[str, str] | None = None) -> None:
        self.answer = answer
        self.files = files or {}
        self.updates: list[tuple[str, Any]] = []
        self.asked: list[Any] = []
        self.withdrawn = 0  # permission requests cancelled before we answered
        self.read: list[str] = []
        self.release = asyncio.Event()
        self.got_update = asyncio.Event()
        self.got_question = asyncio.Event()
        self.conn: Any = None
        self.transport: Any = None

    @classmethod
    async def connect(
        cls, url: str, *, headers: dict[str, str] | None = None, **kw: Any
    ) -> SdkPeer:
        peer = cls(**kw)
        if url.startswith("ws"):
            peer.transport = await create_websocket_stream(url, headers=headers)
        else:
            peer.transport = create_http_stream(url, headers=headers)
        peer.conn = acp.connect_to_agent(peer, peer.transport)
        return peer

    async def initialize(self, *, fs: bool = False) -> Any:
        caps = {"fs": {"readTextFile": fs, "writeTextFile": False}, "terminal": False}
        return await self.conn.initialize(protocol_version=1, client_capabilities=caps)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.transport.close()

    def texts(self, session_id: str | None = None) -> str:
        return "".join(
            getattr(getattr(u, "content", None), "text", "")
            for sid, u in self.updates
            if getattr(u, "session_update", "") == "agent_message_chunk"
            and session_id in (None, sid)
        )

    def kinds(self) -> list[str]:
        return [getattr(u, "session_update", "?") for _sid, u in self.updates]

    # ---- acp.Client ----------------------------------------------------------------------

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        self.updates.append((session_id, update))
        self.got_update.set()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kw: Any
    ) -> RequestPermissionResponse:
        self.asked.append(tool_call)
        self.got_question.set()
        if self.answer == "wait":
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.withdrawn += 1
                raise
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        option = self.answer or options[0].option_id
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=option)
        )

    async def read_text_file(self, session_id: str, path: str, **kw: Any) -> ReadTextFileResponse:
        self.read.append(path)
        return ReadTextFileResponse(content=self.files[path])

    def on_connect(self, conn: Any) -> None:
        pass


@dataclass(slots=True)
class Event:
    id: int
    message: dict[str, Any]


@dataclass
class RawPeer:
    """The HTTP transport by hand: POSTs and SSE streams, every event with its id."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    http: httpx.AsyncClient = field(init=False)
    connection_id: str | None = None

    def __post_init__(self) -> None:
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(30, read=None), headers=self.headers)
        self._ids = iter(range(1, 1_000_000))

    async def initialize(self, **capabilities: Any) -> httpx.Response:
        body = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": capabilities},
        }
        response = await self.http.post(self.url, json=body)
        self.connection_id = response.headers.get("acp-connection-id")
        return response

    async def post(
        self,
        method: str,
        params: dict[str, Any],
        *,
        session: str | None = None,
        notify: bool = False,
    ) -> tuple[int | None, httpx.Response]:
        request_id = None if notify else next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if request_id is not None:
            message["id"] = request_id
        return request_id, await self.send(message, session=session)

    async def send(self, message: dict[str, Any], *, session: str | None = None) -> httpx.Response:
        headers = {"Acp-Connection-Id": self.connection_id or ""}
        if session is not None:
            headers["Acp-Session-Id"] = session
        return await self.http.post(self.url, json=message, headers=headers)

    @contextlib.asynccontextmanager
    async def stream(
        self, session: str | None = None, last_event_id: int | None = None
    ) -> AsyncIterator[AsyncIterator[Event]]:
        """One SSE stream (the connection's, or a session's), as events with their ids."""
        headers = {"Accept": "text/event-stream", "Acp-Connection-Id": self.connection_id or ""}
        if session is not None:
            headers["Acp-Session-Id"] = session
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        async with self.http.stream("GET", self.url, headers=headers) as response:
            assert response.status_code == 200, response.status_code

            async def events() -> AsyncIterator[Event]:
                parser = SseParser()
                async for chunk in response.aiter_bytes():
                    for event_id, data in parser.feed(chunk):
                        yield Event(int(event_id or 0), json.loads(data))

            yield events()

    async def close(self) -> None:
        if self.http.is_closed:
            return
        if self.connection_id:
            with contextlib.suppress(httpx.HTTPError):
                await self.http.delete(self.url, headers={"Acp-Connection-Id": self.connection_id})
        await self.http.aclose()


async def until(events: AsyncIterator[Event], done: Any) -> list[Event]:
    """Events until (and with) the first for which `done(event)` holds."""
    seen = []
    async for event in events:
        seen.append(event)
        if done(event):
            break
    return seen


def reply_to(request_id: int) -> Any:
    return lambda e: e.message.get("id") == request_id and "method" not in e.message


def chunk_text(events: list[Event]) -> str:
    out = []
    for e in events:
        update = (e.message.get("params") or {}).get("update") or {}
        if update.get("sessionUpdate") == "agent_message_chunk":
            out.append(update["content"]["text"])
    return "".join(out)
