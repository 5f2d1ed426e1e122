"""Request bodies capped while they arrive, chunked ones included.

A route reads its body with `request.body()`, which gathers every chunk before
anyone can look at the size, and a chunked upload declares no Content-Length to
check first: a 1 GiB chunked POST was held in memory (twice over) before its 413.

`BodyLimit` sits in front of the routes. A declared Content-Length above
`Limits.max_request_bytes` is answered 413 before the app runs; otherwise the
bytes are counted as uvicorn hands them over, and the chunk that crosses the
limit raises `PayloadTooLarge` inside the route that is reading, which answers
413 at once. What the client still sends is read and dropped by uvicorn, never
stored, so a body costs at most the limit in memory, whatever its size.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentao.gateway.errors import PayloadTooLarge


class BodyLimit:
    """Pure ASGI middleware: no HTTP request body beyond `max_bytes`."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await self._too_large().send(scope, receive, send)
            return
        await self.app(scope, self._counting(receive), send)

    def _counting(self, receive: Receive) -> Receive:
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise self._too_large()
            return message

        return counted

    def _too_large(self) -> PayloadTooLarge:
        return PayloadTooLarge(
            f"request body above {self.max_bytes} bytes (max_request_bytes)",
            code="body_too_large",
        )


__all__ = ["BodyLimit"]
