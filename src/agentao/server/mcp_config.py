"""ACP `mcpServers` (seed C.2) checked field by field and turned into the runtime's config.

The rules, each a -32602 naming the offending field when broken:

    mcpServers          a list (`[]` is fine)
    [i]                 an object with a non-empty string `name`, unique in the list
    [i].type            "stdio" (also when absent), "sse" or "http"; a transport this
                        agent does not advertise in `mcpCapabilities` is refused
    stdio               `command` a non-empty string, `args` a list of strings,
                        `env` a list of {name, value} strings (not a map)
    sse / http          `url` an http(s) URL, `headers` a list of {name, value} strings

The raw request is read (not the decoded struct) so that the untagged stdio
variant and a `type: "stdio"` tag are treated alike, and so the message can say
exactly which field is wrong.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from agentao.agent.mcp import (
    HttpServer,
    McpServerConfig,
    McpServerRefused,
    SseServer,
    StdioServer,
    check_server_addresses,
)
from agentao.protocol.errors import InvalidParams
from agentao.server.capabilities import SUPPORTED_TRANSPORTS


def parse_mcp_servers(raw: Any, cwd: str) -> list[McpServerConfig]:
    """The validated servers, in order; InvalidParams on the first bad field."""
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise _bad("mcpServers", "must be a list")
    servers: list[McpServerConfig] = []
    names: set[str] = set()
    for i, item in enumerate(raw):
        server = _server(item, f"mcpServers[{i}]", cwd)
        if server.name in names:
            raise _bad(f"mcpServers[{i}].name", f"duplicate server name {server.name!r}")
        names.add(server.name)
        servers.append(server)
    return servers


async def checked_mcp_servers(raw: Any, cwd: str) -> list[McpServerConfig]:
    """`parse_mcp_servers`, then each http/sse server's address checked when this agent
    reaches public addresses only (-32602 naming the server and why)."""
    servers = parse_mcp_servers(raw, cwd)
    try:
        await check_server_addresses(servers)
    except McpServerRefused as exc:
        raise InvalidParams(
            f"Invalid params: {exc}",
            {"field": "mcpServers", "server": exc.server, "reason": "private_address"},
        ) from None
    return servers


def fingerprint(raw: Any) -> str:
    """A stable hash of the servers as the client declared them (seed C.7)."""
    return hashlib.sha256(msgspec.json.encode(raw or [], order="sorted")).hexdigest()[:16]


def _server(item: Any, where: str, cwd: str) -> McpServerConfig:
    if not isinstance(item, dict):
        raise _bad(where, "must be an object")
    name = item.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _bad(f"{where}.name", "must be a non-empty string")
    kind = item.get("type", "stdio")
    if kind not in SUPPORTED_TRANSPORTS:
        raise _bad(f"{where}.type", f"must be one of {', '.join(SUPPORTED_TRANSPORTS)}")
    if not SUPPORTED_TRANSPORTS[kind]:
        raise _bad(
            f"{where}.type", f"the {kind!r} MCP transport is not supported (mcpCapabilities)"
        )
    if kind == "stdio":
        command = item.get("command")
        if not isinstance(command, str) or not command.strip():
            raise _bad(f"{where}.command", "must be a non-empty string")
        args = item.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise _bad(f"{where}.args", "must be a list of strings")
        env = _pairs(item.get("env", []), f"{where}.env")
        return StdioServer(name, command, tuple(args), env, cwd)
    url = item.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise _bad(f"{where}.url", "must be an http(s) URL")
    headers = _pairs(item.get("headers", []), f"{where}.headers")
    return SseServer(name, url, headers) if kind == "sse" else HttpServer(name, url, headers)


def _pairs(raw: Any, where: str) -> tuple[tuple[str, str], ...]:
    if isinstance(raw, dict):
        raise _bad(where, "must be a list of {name, value} objects, not a map")
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _bad(where, "must be a list of {name, value} objects")
    out = []
    for j, pair in enumerate(raw):
        if not isinstance(pair, dict) or not all(
            isinstance(pair.get(k), str) for k in ("name", "value")
        ):
            raise _bad(f"{where}[{j}]", "must be an object with string name and value")
        out.append((pair["name"], pair["value"]))
    return tuple(out)


def _bad(field: str, problem: str) -> InvalidParams:
    return InvalidParams(f"Invalid params: {field} {problem}", {"field": field})


__all__ = ["checked_mcp_servers", "fingerprint", "parse_mcp_servers"]
