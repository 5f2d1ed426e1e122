"""Who is calling, which agents they may use, which policy their turn gets, what they own.

Without keys in the config the gateway listens on loopback only (see
`GatewayConfig.check_bind`) and every caller is the local user, whose ceiling is
`all` and whose default is `reject`. With keys, every `/v1/*` call needs
`Authorization: Bearer <key>`; a WebSocket may pass it as `?api_key=` since
browsers cannot set headers on one.

A request may ask for a policy (`X-Permission-Policy` header, or the body field
`x_permission_policy`); both go through `Principal.choose_policy`, and asking above
the key's ceiling is a 403, not a silent cap.

Every object (conversation, task, response, open permission question) belongs to
the principal that made it, and `owns()` is the one rule for who may see, continue,
cancel, delete or answer it.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

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

POLICY_HEADER = "x-permission-policy"


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
    """Turns an `Authorization` value into a `Principal` (or raises 401)."""

    def __init__(self, config: GatewayConfig) -> None:
        self._keys = config.keys

    @property
    def required(self) -> bool:
        return bool(self._keys)

    def authenticate(self, authorization: str | None, query_key: str | None = None) -> Principal:
        if not self._keys:
            return LOCAL
        secret = _bearer(authorization) or query_key
        if not secret:
            raise Unauthorized(
                "missing API key: send 'Authorization: Bearer <key>'", code="missing_api_key"
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


def _bearer(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


__all__ = ["LOCAL", "POLICY_HEADER", "Authenticator", "Principal", "check_owner", "owns"]
