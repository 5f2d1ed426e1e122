"""Which network addresses are public, so a URL someone else names cannot reach this host.

A leaf module outside the layers: `web_fetch` (the agent) checks every address of a
page's host with it, the gateway checks the MCP server URLs a remote client names in
`session/new`, and our agent, when the gateway starts it with `MCP_PUBLIC_ONLY_ENV`
set, checks them again when it connects (but for the one URL the gateway names in
`MCP_TRUSTED_URL_ENV`, its own tool bridge).

A host is public when *every* address it resolves to is globally routable: one
loopback, private, link-local, multicast, reserved or unspecified address refuses it.
An IPv6 address that carries an IPv4 one (IPv4-mapped `::ffff:a.b.c.d`, NAT64
`64:ff9b::/96`, 6to4 `2002::/16`, Teredo) is judged by the IPv4 it carries. The host is
resolved with the system resolver, as the connection will be, so `0x7f000001`,
`2130706433`, `017700000001` and `localhost` are all seen as the loopback they are.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket

MCP_PUBLIC_ONLY_ENV = "AGENTAO_MCP_PUBLIC_ONLY"  # "1": our agent connects to public MCP URLs only
# The one MCP URL our agent may reach on a private address all the same: the gateway's own
# tool bridge (gateway/tool_bridge.py), which the gateway, not a client, names in the
# agent's environment. Matched exactly; a conversation's secret travels in a header.
MCP_TRUSTED_URL_ENV = "AGENTAO_MCP_TRUSTED_URL"
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


class AddressRefused(ValueError):
    """A URL whose host is not public (or cannot be resolved); the message says which
    address and why."""


def is_public_address(address: str) -> bool:
    """Whether an IP address is globally routable (an embedded IPv4 judged as IPv4)."""
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address):
        carried = _embedded_ipv4(ip)
        if carried is not None:
            return is_public_address(str(carried))
    return ip.is_global and not (ip.is_multicast or ip.is_reserved or ip.is_unspecified)


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]  # the client's address; the server's is public by definition
    return None


async def resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (OSError when it does not)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses = [str(info[4][0]).split("%")[0] for info in infos]
    if not addresses:
        raise OSError(f"no address for {host}")
    return addresses


async def public_addresses(host: str, port: int) -> list[str]:
    """The addresses of `host`, after checking that every one is public."""
    try:
        addresses = await resolve(host, port)
    except OSError as exc:
        raise AddressRefused(f"cannot resolve {host}: {exc}") from None
    for address in addresses:
        if not is_public_address(address):
            raise AddressRefused(f"{host} resolves to {address}, a private or local address")
    return addresses


def url_host_port(url: str) -> tuple[str, int]:
    """The host and port an http(s) URL connects to, read as httpx (the MCP SDK's HTTP
    client) reads it, so no parser difference picks another host."""
    import httpx  # not needed until a URL is checked

    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise AddressRefused(f"not a usable URL: {exc}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise AddressRefused("only http(s) URLs with a host are allowed")
    return parsed.host, parsed.port or (443 if parsed.scheme == "https" else 80)


async def check_public_url(url: str) -> None:
    """Raise `AddressRefused` unless every address of `url`'s host is public."""
    host, port = url_host_port(url)
    await public_addresses(host, port)


__all__ = [
    "MCP_PUBLIC_ONLY_ENV",
    "MCP_TRUSTED_URL_ENV",
    "AddressRefused",
    "check_public_url",
    "is_public_address",
    "public_addresses",
    "resolve",
    "url_host_port",
]
