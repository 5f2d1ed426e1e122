"""JSON-RPC / ACP errors: the code lives on the class, the details in `data`.

Exception
├── AcpError                     an error that travels on the wire as {code, message, data}
│   ├── ParseError               -32700  the line is not JSON (or not UTF-8, or too deep)
│   ├── InvalidRequest           -32600  JSON, but not a JSON-RPC 2.0 message
│   │   └── LineTooLong          -32600  the line is above Limits.max_line_bytes
│   ├── MethodNotFound           -32601
│   ├── InvalidParams            -32602  names the offending field
│   ├── InternalError            -32603  a handler crashed; no traceback on the wire
│   ├── AuthRequired             -32000
│   ├── NotInitialized           -32002  "Server not initialized" (seed C.2/C.12)
│   ├── SessionNotFound          -32002  same code; message and data={"sessionId"} differ
│   ├── UnsupportedVersion       -32022  no version we speak is at or below the one asked (v2)
│   ├── RequestCancelled         -32800  the request was cancelled ($/cancel_request)
│   └── PeerError                (any)   an error response the *peer* sent us
└── ConnectionClosed             local: EOF or a dead peer; pending requests fail with it
"""

from __future__ import annotations

from typing import Any, ClassVar


class AcpError(Exception):
    """An error with a JSON-RPC code, a message and optional structured `data`."""

    code: ClassVar[int] = -32603
    default_message: ClassVar[str] = "Internal error"

    def __init__(self, message: str | None = None, data: Any = None) -> None:
        self.message = message or self.default_message
        self.data = data
        super().__init__(self.message)

    def to_wire(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ParseError(AcpError):
    code = -32700
    default_message = "Parse error"


class InvalidRequest(AcpError):
    code = -32600
    default_message = "Invalid Request"


class LineTooLong(InvalidRequest):
    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            f"Invalid Request: line of {size} bytes exceeds max_line_bytes ({limit})",
            {"lineBytes": size, "maxLineBytes": limit},
        )


class MethodNotFound(AcpError):
    code = -32601
    default_message = "Method not found"

    def __init__(self, method: str) -> None:
        super().__init__(f"Method not found: {method}", {"method": method})


class InvalidParams(AcpError):
    code = -32602
    default_message = "Invalid params"


class InternalError(AcpError):
    code = -32603
    default_message = "Internal error"


class AuthRequired(AcpError):
    code = -32000
    default_message = "Authentication required"


class NotInitialized(AcpError):
    code = -32002
    default_message = "Server not initialized"


class SessionNotFound(AcpError):
    code = -32002

    def __init__(self, session_id: str) -> None:
        super().__init__(f"Session not found: {session_id}", {"sessionId": session_id})


class UnsupportedVersion(AcpError):
    """ACP v2's -32022: data is UnsupportedProtocolVersionErrorData {requested, supported}."""

    code = -32022

    def __init__(self, requested: int, supported: tuple[int, ...]) -> None:
        listed = ", ".join(map(str, supported))
        super().__init__(
            f"Unsupported protocol version {requested}: this agent speaks {listed}",
            {"requested": requested, "supported": list(supported)},
        )


class RequestCancelled(AcpError):
    code = -32800
    default_message = "Request cancelled"


class PeerError(AcpError):
    """An error response received from the peer; its code is per instance."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message, data)
        self.code = code  # type: ignore[misc]  # instance code shadows the class default

    def __repr__(self) -> str:
        return f"PeerError(code={self.code}, message={self.message!r}, data={self.data!r})"


class ConnectionClosed(Exception):
    """The connection ended (EOF, peer exit) while something still waited on it."""


__all__ = [
    "AcpError",
    "AuthRequired",
    "ConnectionClosed",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "LineTooLong",
    "MethodNotFound",
    "NotInitialized",
    "ParseError",
    "PeerError",
    "RequestCancelled",
    "SessionNotFound",
    "UnsupportedVersion",
]
