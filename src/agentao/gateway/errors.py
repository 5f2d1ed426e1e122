"""OpenAI-shaped errors: `{"error": {"message", "type", "param", "code"}}` with a status.

ApiError                       status, OpenAI `type`
├── BadRequest                 400  invalid_request_error (names `param` when one is at fault)
├── Unauthorized               401  authentication_error
├── Forbidden                  403  permission_error
├── NotFound                   404  not_found_error
├── Conflict                   409  conflict_error (the object's state forbids it)
│   ├── SessionBusy            409  ... a busy session, with Retry-After
│   └── SessionLost            409  ... its ACP session is gone and cannot be loaded again
├── NotAcceptable              406  invalid_request_error (a stream read without accepting it)
├── PayloadTooLarge            413  invalid_request_error
├── UnsupportedMediaType       415  invalid_request_error (a body that is not declared JSON)
├── MisdirectedRequest         421  invalid_request_error (a Host this gateway does not serve)
├── TooManyConnections         429  rate_limit_error (a key's remote ACP connections at the limit)
├── NotImplementedApi          501  invalid_request_error (a JSON-RPC batch to remote ACP)
├── AgentFailed                502  agent_error (the turn failed: the agent died or erred)
└── AgentUnavailable           503  agent_error (no agent process could take the request)
    └── TakenElsewhere         503  ... another replica took the conversation meanwhile
"""

from __future__ import annotations

from typing import Any, ClassVar

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Receive, Scope, Send


class ApiError(Exception):
    status: ClassVar[int] = 500
    type: ClassVar[str] = "server_error"

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return error_body(self.message, self.type, param=self.param, code=self.code)

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)

    async def send(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer with this error from ASGI middleware, before any route ran. A WebSocket
        handshake is refused with it too (uvicorn's denial-response extension), or else
        closed, which the server turns into a bare 403."""
        denial = "websocket.http.response" in scope.get("extensions", {})
        if scope["type"] == "websocket" and not denial:
            await send({"type": "websocket.close", "code": 1008})
            return
        await self.response()(scope, receive, send)


class BadRequest(ApiError):
    status = 400
    type = "invalid_request_error"


class Unauthorized(ApiError):
    status = 401
    type = "authentication_error"


class Forbidden(ApiError):
    status = 403
    type = "permission_error"


class NotFound(ApiError):
    status = 404
    type = "not_found_error"


class Conflict(ApiError):
    status = 409
    type = "conflict_error"


class SessionBusy(Conflict):
    def __init__(self, retry_after: int) -> None:
        super().__init__(
            "this conversation's agent session is busy with another request; retry later",
            code="session_busy",
            headers={"Retry-After": str(retry_after)},
        )


class NotAcceptable(ApiError):
    status = 406


class PayloadTooLarge(ApiError):
    status = 413
    type = "invalid_request_error"


class UnsupportedMediaType(ApiError):
    status = 415
    type = "invalid_request_error"


class MisdirectedRequest(ApiError):
    status = 421
    type = "invalid_request_error"


class AgentFailed(ApiError):
    status = 502
    type = "agent_error"


class SessionLost(Conflict):
    """The conversation's ACP session is gone and the agent cannot load it again."""


class TooManyConnections(ApiError):
    status = 429
    type = "rate_limit_error"


class NotImplementedApi(ApiError):
    status = 501


class AgentUnavailable(ApiError):
    status = 503
    type = "agent_error"


class TakenElsewhere(AgentUnavailable):
    """Another live replica took the conversation's lease while this request was on its
    way to its turn (after the holder step, `holders.py`, found it free or ours): the
    client sends it again, and the holder step passes it on then. Rare, and an answer,
    not a detour: requests are passed to a holder before any route runs."""

    def __init__(self, owner_url: str) -> None:
        super().__init__(
            f"another gateway replica ({owner_url}) took this conversation over while the "
            "request was on its way; send it again",
            code="conversation_elsewhere",
            headers={"Retry-After": "1"},
        )
        self.owner_url = owner_url


class Unavailable(ApiError):
    """This gateway cannot serve the request now (it is stopping, say): 503."""

    status = 503


class StoreFailed(ApiError):
    """The gateway's store refused a write this request needed (code `store_failed`)."""

    status = 503


def error_body(
    message: str, type_: str, *, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def unsupported(param: str, why: str = "is not supported by this gateway") -> BadRequest:
    """A 400 that names the parameter the gateway cannot honour."""
    return BadRequest(f"'{param}' {why}", param=param, code="unsupported_parameter")


async def _api_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return exc.response()


async def _validation_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    first = exc.errors()[0] if exc.errors() else {}
    loc = [str(p) for p in first.get("loc", ()) if p != "body"]
    return BadRequest(
        f"invalid request: {first.get('msg', 'malformed body')}",
        param=".".join(loc) or None,
        code="invalid_value",
    ).response()


async def _http_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    return http_error_response(exc)


def http_error_response(exc: StarletteHTTPException) -> JSONResponse:
    """An HTTP exception's answer, OpenAI-shaped."""
    types = {401: "authentication_error", 403: "permission_error", 404: "not_found_error"}
    body = error_body(str(exc.detail), types.get(exc.status_code, "invalid_request_error"))
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


def install(app: Any) -> None:
    """Make every error the app returns OpenAI-shaped."""
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)


__all__ = [
    "AgentFailed",
    "AgentUnavailable",
    "ApiError",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "MisdirectedRequest",
    "NotAcceptable",
    "NotFound",
    "NotImplementedApi",
    "PayloadTooLarge",
    "SessionBusy",
    "SessionLost",
    "StoreFailed",
    "TakenElsewhere",
    "TooManyConnections",
    "Unauthorized",
    "Unavailable",
    "UnsupportedMediaType",
    "error_body",
    "http_error_response",
    "install",
    "unsupported",
]
