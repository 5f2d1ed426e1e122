"""The ACP wire: framing, JSON-RPC connection (sans-IO), asyncio endpoint, errors.

Generated wire types live in `agentao.protocol.schema` and the method table in
`agentao.protocol.methods`; import those modules directly (see docs/protocol-api.md).
"""

from agentao.protocol.connection import Connection
from agentao.protocol.endpoint import Endpoint, Limits, current_message
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
    "current_message",
]
