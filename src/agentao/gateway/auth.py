"""Who is calling, which agents they may use, which policy their turn gets, what they own.

Without keys in the config the gateway listens on loopback only (see
`GatewayConfig.check_bind`) and every caller is the local user, whose ceiling is
`all` and whose default is `reject`; but loopback is not authentication on a machine
with other users, so `serve` gives such a gateway its local token (`login.py`), which
every call must then carry as it would carry a key (or, from the web UI, the session
cookie of a login link). With keys, every `/v1/*` call needs
`Authorization: Bearer <key>` (or `x-api-key: <key>`, as Anthropic's API takes it).
Browsers cannot set headers on a WebSocket, so a handshake may offer the key as a
subprotocol instead, next to `agentao.v1`:

    new WebSocket(url, ["agentao.v1", "agentao.key." + base64url(key)])

and the server answers `agentao.v1`, never the key. Never in the URL: the guard
refuses `?api_key=` (URLs end in logs).

A request may ask for a policy (`X-Permission-Policy` header, or the body field
`x_permission_policy`); both go through `Principal.choose_policy`, and asking above
the key's ceiling is a 403, not a silent cap.

Every object (conversation, task, response, open permission question) belongs to
the principal that made it, and `owns()` is the one rule for who may see, continue,
cancel, delete or answer it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass

from starlette.requests import HTTPConnection

from agentao.gateway.config import (
    LOCAL_NAME,
    ApiKey,
    ConfigError,
    GatewayConfig,
    Policy,
    check_policy,
    policy_rank,
)
from agentao.gateway.errors import BadRequest, Forbidden, NotFound, Unauthorized
from agentao.gateway.login import COOKIE_NAME, WebLogin

POLICY_HEADER = "x-permission-policy"
API_KEY_HEADER = "x-api-key"  # how Anthropic's API takes a key
# The web UI marks its own requests `X-Agentao-Client: web`: no cross-origin page can send
# it without a CORS preflight, and a person's answer through the UI is named as such.
CLIENT_HEADER = "x-agentao-client"
WEB_CLIENT = "web"
WS_PROTOCOL = "agentao.v1"  # the subprotocol a WebSocket is accepted with
KEY_PROTOCOL = "agentao.key."  # + the key in base64url without padding


@dataclass(frozen=True, slots=True)
class Principal:
    """The caller: a key's name (or "local"), its agents, its permission bounds."""

    name: str
    agents: frozenset[str] | None
    ceiling: Policy
    policy: Policy

    def check_agent(self, agent: str) -> None:
        if self.agents is not None and agent not in self.agents:
            raise Forbidden(
                f"this API key may not use the agent {agent!r}", param="model", code="agent_denied"
            )

    def choose_policy(self, requested: str | None) -> Policy:
        """The policy for one turn: the key's default, or what was asked within the ceiling."""
        if requested is None or requested == "":
            return self.policy
        try:
            policy = check_policy(requested, "permission policy")
        except ConfigError as exc:
            raise BadRequest(str(exc), param="x_permission_policy") from None
        if policy_rank(policy) > policy_rank(self.ceiling):
            raise Forbidden(
                f"permission policy {policy!r} is above this key's ceiling {self.ceiling!r}",
                param="x_permission_policy",
                code="policy_above_ceiling",
            )
        return policy


LOCAL = Principal(LOCAL_NAME, None, "all", "reject")


class Authenticator:
    """Turns the key a request carries into a `Principal` (or raises 401).

    `local_token`: the keyless gateway's token (ignored when the config has keys);
    None leaves a keyless gateway open to every local user, for embedding only.
    """

    def __init__(self, config: GatewayConfig, local_token: str | None = None) -> None:
        self._keys = config.keys
        self.login = (
            WebLogin(local_token, config.limits) if local_token and not self._keys else None
        )

    @property
    def required(self) -> bool:
        return bool(self._keys) or self.login is not None

    def principal(self, conn: HTTPConnection) -> Principal:
        """The caller of an HTTP request or a WebSocket handshake."""
        if not self._keys and self.login is None:
            return LOCAL
        secret = _bearer(conn.headers.get("authorization")) or _api_key(conn)
        if secret is None and conn.scope["type"] == "websocket":
            secret = key_from_subprotocols(conn.scope.get("subprotocols", ()))
        if self.login is not None:
            return self._local(conn, self.login, secret)
        return self.authenticate(secret)

    def _local(self, conn: HTTPConnection, login: WebLogin, secret: str | None) -> Principal:
        """A keyless gateway's caller: the local user, if it holds the token or a session."""
        if secret is not None:
            if login.matches(secret):
                return LOCAL
            raise Unauthorized("invalid local token", code="invalid_api_key")
        if _from_web_ui(conn) and login.cookie_valid(conn.cookies.get(COOKIE_NAME)):
            return LOCAL
        raise Unauthorized(
            "missing local token: send 'Authorization: Bearer <token>' with the token from "
            "the gateway's token file (`agentao doctor` shows where), or open the login "
            "link `agentao serve` printed",
            code="missing_api_key",
        )

    def authenticate(self, secret: str | None) -> Principal:
        if not self._keys:
            return LOCAL
        if not secret:
            raise Unauthorized(
                "missing API key: send 'Authorization: Bearer <key>' or 'x-api-key: <key>'",
                code="missing_api_key",
            )
        key = self._match(secret)
        if key is None:
            raise Unauthorized("invalid API key", code="invalid_api_key")
        return Principal(key.name, key.agents, key.ceiling, key.policy)

    def _match(self, secret: str) -> ApiKey | None:
        digest = hashlib.sha256(secret.encode()).hexdigest()
        found = None
        for key in self._keys:  # compare against every key: no early exit to time
            if hmac.compare_digest(digest, key.sha256):
                found = key
        return found


def owns(principal: Principal, owner: str) -> bool:
    """Whether `principal` may see, continue, cancel, delete or answer an object of `owner`.

    Its own objects only; no name is special. (The keyless local user owns what was made
    without keys; `local` is refused as a key name, so no key inherits those.) Lookups
    scoped by owner (the conversation list, the transcript index) follow the same rule.
    """
    return principal.name == owner


def check_owner(principal: Principal, owner: str, what: str) -> None:
    """Another key's object is reported as missing, not as forbidden."""
    if not owns(principal, owner):
        raise NotFound(f"no such {what}")


def key_from_subprotocols(offered: Sequence[str]) -> str | None:
    """The key a WebSocket handshake offers as `agentao.key.<base64url>`, if any."""
    for protocol in offered:
        if protocol.startswith(KEY_PROTOCOL):
            encoded = protocol[len(KEY_PROTOCOL) :]
            try:
                raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
                return raw.decode("utf-8")
            except (binascii.Error, ValueError):
                raise Unauthorized(
                    "the key subprotocol must be 'agentao.key.' + the key in base64url",
                    code="invalid_api_key",
                ) from None
    return None


def _from_web_ui(conn: HTTPConnection) -> bool:
    """A session cookie counts only on the web UI's own requests: its marked fetches, and
    WebSocket handshakes (which the guard admits from our own origin only)."""
    return conn.scope["type"] == "websocket" or conn.headers.get(CLIENT_HEADER) == WEB_CLIENT


def _api_key(conn: HTTPConnection) -> str | None:
    """The key as Anthropic's API takes it (`x-api-key`), on any route, as a bearer."""
    value = conn.headers.get(API_KEY_HEADER, "").strip()
    return value or None


def _bearer(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


__all__ = [
    "API_KEY_HEADER",
    "CLIENT_HEADER",
    "KEY_PROTOCOL",
    "LOCAL",
    "POLICY_HEADER",
    "WEB_CLIENT",
    "WS_PROTOCOL",
    "Authenticator",
    "Principal",
    "check_owner",
    "key_from_subprotocols",
    "owns",
]
