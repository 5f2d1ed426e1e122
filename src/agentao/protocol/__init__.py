"""The ACP wire: framing, JSON-RPC connection (sans-IO), asyncio endpoint, errors.

Generated wire types live in `agentao.protocol.schema` and the method table in
`agentao.protocol.methods` (ACP v1), `agentao.protocol.v2.schema` and `.v2.methods` (ACP v2);
import those modules directly (see docs/protocol-api.md). `agentao.protocol.versions` says
which versions a connection speaks and how `initialize` settles one.

The asyncio endpoint is imported on first use of its names: importing asyncio costs
more than everything else `agentao --acp` needs to answer `initialize`, and the
handshake runs before any event loop exists (server/handshake.py).
"""

from agentao.protocol.connection import Connection
from agentao.protocol.errors import (
    AcpError,
    AuthRequired,
    ConnectionClosed,
    InternalError,
    InvalidParams,
    InvalidRequest,
    LineTooLong,
    MethodNotFound,
    NotInitialized,
    ParseError,
    PeerError,
    RequestCancelled,
    SessionNotFound,
    UnsupportedVersion,
)

__all__ = [
    "AcpError",
    "AuthRequired",
    "Connection",
    "ConnectionClosed",
    "Endpoint",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "Limits",
    "LineTooLong",
    "MethodNotFound",
    "NotInitialized",
    "ParseError",
    "PeerError",
    "RequestCancelled",
    "SessionNotFound",
    "UnsupportedVersion",
]

_LAZY = {"Endpoint", "Limits"}  # from agentao.protocol.endpoint


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module 'agentao.protocol' has no attribute {name!r}")
    from agentao.protocol import endpoint

    value = getattr(endpoint, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
