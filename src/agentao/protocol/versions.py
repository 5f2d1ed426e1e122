"""Protocol versions: which ones we speak, how `initialize` settles one, each one's table.

A connection starts version-agnostic. The agent side reads `initialize`'s `protocolVersion`
before anything else of its params (strictly: a bool, a string or a number out of uint16 range
is -32602, as in every version), answers with the highest version it speaks that is at or
below the one asked (v2's rule; asked 7, it answers 2), and from then on decodes params and
results with that version's generated method table. Asked a version below every one it
speaks, it answers -32022 with `{requested, supported}` (v2 schema's
UnsupportedProtocolVersionErrorData). The version is data on the one `Connection` class:
`Connection.version`, `Connection.methods`.

Imported by the connection when `initialize` arrives (with the generated types it needs then);
the v2 tables are imported on first use, so a v1 connection never pays for them.
"""

from __future__ import annotations

from typing import Any

import msgspec

from agentao.protocol.decode import decode_strict
from agentao.protocol.errors import InvalidParams, UnsupportedVersion
from agentao.protocol.schema import ProtocolVersion

SUPPORTED: tuple[int, ...] = (1, 2)  # every version we speak, oldest first
LATEST = SUPPORTED[-1]
INITIALIZE = "initialize"


class _VersionProbe(msgspec.Struct, forbid_unknown_fields=False, rename="camel"):
    """`initialize` params as far as `protocolVersion`, read before the version's own
    InitializeRequest is known: the same type (uint16) as every version's, so the same
    errors as before versions were negotiated."""

    protocol_version: ProtocolVersion


def requested_version(params: Any) -> int:
    """`initialize`'s `protocolVersion`, strictly; InvalidParams naming it otherwise."""
    try:
        probe = decode_strict(_VersionProbe, {} if params is None else params)
    except msgspec.ValidationError as exc:
        raise InvalidParams(f"Invalid params: {exc}") from None
    return probe.protocol_version


def negotiate(requested: int, speaks: tuple[int, ...] = SUPPORTED) -> int:
    """The highest version of `speaks` at or below `requested`; -32022 when there is none."""
    at_or_below = [v for v in speaks if v <= requested]
    if not at_or_below:
        raise UnsupportedVersion(requested, speaks)
    return at_or_below[-1]


def method_table(version: int) -> dict[str, Any]:
    """That version's generated `METHODS` (wire name -> MethodSpec)."""
    if version == 1:
        from agentao.protocol.methods import METHODS
    elif version == 2:
        from agentao.protocol.v2.methods import METHODS
    else:
        raise ValueError(f"no method table for protocol version {version}")
    return METHODS


__all__ = ["INITIALIZE", "LATEST", "SUPPORTED", "method_table", "negotiate", "requested_version"]
