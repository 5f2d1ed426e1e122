"""A gateway error (`ApiError`, an HTTP status) met while serving a remote ACP request,
as the JSON-RPC error the client is answered with.

The code is the nearest ACP has: a bad parameter -32602, an unknown session -32002, a
state that forbids it (a busy session) -32600, and "not now" (a key's spent budget:
budgets.py) -32600 too, ACP having no code of its own for it; anything else -32603.
`data.reason` is the gateway's error code (`token_budget_exceeded`, ...), and
`data.retryAfter` the seconds of the HTTP faces' `Retry-After`, where it has one.
"""

from __future__ import annotations

from typing import Any

from agentao.gateway.errors import ApiError
from agentao.protocol.errors import InternalError, InvalidParams, InvalidRequest, SessionNotFound

API_CODES = {
    400: InvalidParams.code,
    404: SessionNotFound.code,
    409: InvalidRequest.code,
    429: InvalidRequest.code,
}


def api_error_wire(exc: ApiError) -> dict[str, Any]:
    """The JSON-RPC `error` object for `exc`."""
    data: dict[str, Any] = {"reason": exc.code or exc.type}
    if retry := exc.headers.get("Retry-After"):
        data["retryAfter"] = int(retry)
    code = API_CODES.get(exc.status, InternalError.code)
    return {"code": code, "message": str(exc), "data": data}


__all__ = ["API_CODES", "api_error_wire"]
