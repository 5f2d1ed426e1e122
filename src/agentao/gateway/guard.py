"""What a web page may do to the gateway: Host, Origin and secrets in URLs, checked first.

Theory of operation. A server on loopback is reachable by every page the user's
browser opens (design.md §7), so each HTTP request and WebSocket handshake passes
three checks, in this order, before any route runs:

1. *Host.* DNS rebinding points a page's own name (evil.example) at 127.0.0.1: the
   browser then thinks our answers are the page's to read. Such requests still say
   `Host: evil.example`, so only allowed names are served: the loopback names on
   the port we are bound to, the address we bound, our `advertise_url` (the name
   other replicas call us by) and `WebPolicy.allowed_hosts`.
   Anything else is a 421.
2. *No secret in the URL.* Query strings end up in logs, proxies and browser
   history: `?api_key=` is a 401 on every route, even a correct one.
3. *Origin.* A page on another origin can POST to us without asking first (a
   "simple" text/plain request needs no CORS preflight) and can open a WebSocket;
   the browser says who it is in `Origin`. Every request that may change state
   (any method but GET and HEAD, preflights included) and every WebSocket handshake
   must come from our own origin (the scheme, host and port of the request itself)
   or from `WebPolicy.allowed_origins`; else 403. Without `Origin` (curl, the SDKs,
   server to server) it passes, since browsers always send one on these requests;
   a browser's `Sec-Fetch-Site` saying another site or origin is refused all the same.

Why not Starlette's TrustedHostMiddleware: it answers a bare 400 text (not our error
shape), ignores the port, and cuts `[::1]:8765` at its first colon. CORS for the
configured origins is Starlette's CORSMiddleware, mounted inside this guard (see
`app.py`): nobody else ever gets a positive preflight.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from agentao.gateway.config import LOOPBACK_HOSTS, WILDCARD_HOSTS, GatewayConfig
from agentao.gateway.errors import ApiError, Forbidden, MisdirectedRequest, Unauthorized
from agentao.gateway.hosts import WEB_SCHEME, Authority, Origin, split_host

SAFE_METHODS = frozenset({"GET", "HEAD"})  # read-only: their answers are not the page's to read
SECRET_PARAMS = frozenset({"api_key"})  # refused in any query string
# Without Origin, these say the request came from a page: only our own may change state.
TRUSTED_FETCH_SITES = frozenset({"same-origin", "none"})


@dataclass(frozen=True, slots=True)
class HostAllowlist:
    """Host names served: `pinned` ones on the bound port only, `listed` ones as configured."""

    pinned: frozenset[str]
    listed: tuple[tuple[str, int | None], ...]  # (name, port or None: any port)

    @classmethod
    def of(cls, config: GatewayConfig) -> HostAllowlist:
        pinned = {_as_host(h) for h in LOOPBACK_HOSTS}
        if config.host not in WILDCARD_HOSTS:
            pinned.add(_as_host(config.host.lower()))
        listed = [split_host(h) for h in config.web.allowed_hosts]
        if config.advertise_url:  # the other replicas call us by it
            url = urlsplit(config.advertise_url)
            own = Authority.parse(url.netloc.rpartition("@")[2], url.scheme)
            if own is not None:
                listed.append((own.host, own.port))
        return cls(frozenset(pinned), tuple(listed))

    def allows(self, host: Authority, bound_port: int | None) -> bool:
        if host.host in self.pinned and bound_port in (None, host.port):
            return True
        return any(host.host == name and port in (None, host.port) for name, port in self.listed)


class Guard:
    """Pure ASGI middleware: refuses a request (HTTP or WebSocket) that fails a check."""

    def __init__(self, app: ASGIApp, config: GatewayConfig) -> None:
        self.app = app
        self.hosts = HostAllowlist.of(config)
        self.origins = frozenset(config.web.allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            error = self.check(scope)
            if error is not None:
                await error.send(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def check(self, scope: Scope) -> ApiError | None:
        """The refusal for this request, or None when it may go on."""
        headers = Headers(scope=scope)
        scheme = WEB_SCHEME.get(scope.get("scheme", "http"), "http")
        host = Authority.parse(headers.get("host", ""), scheme)
        server = scope.get("server")
        if host is None or not self.hosts.allows(host, server[1] if server else None):
            return MisdirectedRequest(
                f"this gateway does not serve the host {headers.get('host', '')!r}; add it "
                "with --allowed-host or allowed_hosts in [server]",
                code="host_not_allowed",
            )
        if _secret_in_query(scope):
            return Unauthorized(
                "API keys are not accepted in URLs: send 'Authorization: Bearer <key>' (a "
                "WebSocket: the subprotocol 'agentao.key.<base64url key>')",
                code="api_key_in_url",
            )
        if _changes_state(scope) and not self._trusted(headers, Origin(scheme, host)):
            return Forbidden(
                f"cross-origin request refused (Origin {headers.get('origin')!r}); allow an "
                "origin with --allowed-origin or allowed_origins in [server]",
                code="origin_not_allowed",
            )
        return None

    def _trusted(self, headers: Headers, own: Origin) -> bool:
        value = headers.get("origin")
        if value is None:
            return headers.get("sec-fetch-site", "none") in TRUSTED_FETCH_SITES
        origin = Origin.parse(value)  # "null" (sandboxed frames, files) never parses
        return origin is not None and (origin == own or str(origin) in self.origins)


def _as_host(address: str) -> str:
    """A bind address as a Host header spells it: IPv6 literals in brackets."""
    return f"[{address}]" if ":" in address and not address.startswith("[") else address


def _changes_state(scope: Scope) -> bool:
    return scope["type"] == "websocket" or scope["method"] not in SAFE_METHODS


def _secret_in_query(scope: Scope) -> bool:
    query = scope.get("query_string", b"").decode("latin-1")
    return any(name in SECRET_PARAMS for name, _ in parse_qsl(query, keep_blank_values=True))


__all__ = ["Guard", "HostAllowlist"]
