"""The http/sse MCP servers a remote client names: where they may point, what they carry.

A remote client's `session/new` (or `load`/`resume`) may name MCP servers by URL; the
agent behind the gateway then connects to them *from the gateway's host*, with the
headers the client chose. Unchecked, that lets a client reach what only this host can
(an admin endpoint on loopback, a cloud metadata service, the private network), with
its own `Authorization`. So every such server's host is resolved and refused when any
address is not public (`agentao.addresses`, the rule `web_fetch` applies), unless
`[server] mcp_allow_private` says otherwise; the refusal is -32602 naming the server
and the reason. Its headers are cut to what an MCP server needs: `Authorization` and
`X-…` names, never hop-by-hop, cookie, proxy or forwarding headers, plus the names
`[server] mcp_allowed_headers` lists. A dropped header is logged by name, never value.
"""

from __future__ import annotations

import logging
from typing import Any

from agentao.addresses import AddressRefused, check_public_url
from agentao.gateway.config import McpUrlPolicy
from agentao.protocol.errors import InvalidParams

log = logging.getLogger("agentao.gateway")

# Never passed, whatever the settings say: they would speak for the gateway or its proxy.
NEVER_PASSED_HEADERS = frozenset(
    {
        "host",
        "cookie",
        "connection",
        "content-length",
        "transfer-encoding",
        "te",
        "upgrade",
        "keep-alive",
        "forwarded",
        "agentao-forwarded-by",
        "x-real-ip",
    }
)
_NEVER_PASSED_PREFIXES = ("proxy-", "x-forwarded-")


def header_allowed(name: str, policy: McpUrlPolicy) -> bool:
    """Whether a client's header may go to its MCP server."""
    lower = name.lower()
    if lower in NEVER_PASSED_HEADERS or lower.startswith(_NEVER_PASSED_PREFIXES):
        return False
    return lower == "authorization" or lower.startswith("x-") or lower in policy.allowed_headers


async def checked_mcp_servers(servers: list[Any], policy: McpUrlPolicy) -> list[Any]:
    """`servers` with each http/sse server's address checked and its headers cut."""
    return [await _checked(i, server, policy) for i, server in enumerate(servers)]


async def _checked(index: int, server: Any, policy: McpUrlPolicy) -> Any:
    if not isinstance(server, dict) or "url" not in server:
        return server  # stdio (judged by the ceiling) or malformed (the agent says so)
    name, url = server.get("name"), server.get("url")
    field = f"mcpServers[{index}]"
    if not isinstance(url, str):
        raise InvalidParams(f"Invalid params: {field}.url must be a string", {"field": field})
    if not policy.allow_private:
        try:
            await check_public_url(url)
        except AddressRefused as exc:
            raise InvalidParams(
                f"Invalid params: MCP server {name!r} refused: {exc} (the gateway does not "
                "reach private or local addresses for a client; setting "
                "[server] mcp_allow_private is off)",
                {"field": f"{field}.url", "server": name, "reason": "private_address"},
            ) from None
    return {**server, "headers": _passed_headers(name, server.get("headers"), policy)}


def _passed_headers(server: Any, headers: Any, policy: McpUrlPolicy) -> Any:
    if not isinstance(headers, list):
        return headers  # absent or malformed: the agent answers for its own format
    kept = []
    for header in headers:
        header_name = header.get("name") if isinstance(header, dict) else None
        if isinstance(header_name, str) and header_allowed(header_name, policy):
            kept.append(header)
        else:
            log.info("MCP server %r: header %r not passed", server, header_name)
    return kept


__all__ = ["NEVER_PASSED_HEADERS", "checked_mcp_servers", "header_allowed"]
