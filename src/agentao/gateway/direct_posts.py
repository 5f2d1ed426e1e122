"""The POSTs every turn makes go straight to their handler, past FastAPI's routing.

A chat completion, a Responses or Messages request, and every message of a remote ACP
client over HTTP is a POST; FastAPI reaches its handler through the routing (matching
the app's routes in turn), its exception and exit-stack layers and the endpoint
wrapper, which cost the gateway about as much CPU as the rest of a remote ACP message
and a tenth of a millisecond of a turn's time to first token. `DirectPosts`, the
innermost middleware, hands a POST to one of those paths to its handler itself. Every
middleware outside it (Guard, CORS, BodyLimit, HolderRouting) runs as before; an
`ApiError` or an HTTP exception is answered as the app's handlers answer it
(errors.py), anything else reaches the server's error middleware as before; any other
request, one under a root path included, goes on to the routes, which stay (and
document these paths).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from agentao.gateway.errors import ApiError, http_error_response

Handler = Callable[[Request], Awaitable[Response]]
FindHandler = Callable[[str], Handler | None]


class DirectPosts:
    """Pure ASGI middleware: a POST whose path `find` knows goes to its handler."""

    def __init__(self, app: ASGIApp, find: FindHandler) -> None:
        self.app = app
        self.find = find

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handler = _direct(scope, self.find)
        if handler is None:
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        try:
            response = await handler(request)
        except ApiError as exc:
            response = exc.response()
        except HTTPException as exc:
            response = http_error_response(exc)
        await response(scope, receive, send)


def _direct(scope: Scope, find: FindHandler) -> Handler | None:
    if scope["type"] != "http" or scope["method"] != "POST" or scope.get("root_path"):
        return None
    return find(scope["path"])


__all__ = ["DirectPosts", "FindHandler", "Handler"]
