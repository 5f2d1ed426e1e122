"""The gateway's log lines carry no secret: no query string, no Authorization, no key.

uvicorn logs every WebSocket handshake with its path *and query string* at INFO,
and at DEBUG the websockets library logs each handshake header, Authorization
and the `agentao.key.` subprotocol included. Keys are refused in URLs (see
`guard.py`), but the refusal itself is logged with the URL that carried one.
`GatewayRedactSecrets` rewrites each record, its traceback included, on its way to a
handler: query strings are cut to `?…`, and the rest goes through the one redaction
function every layer uses (`agentao.credentials.redact_secrets`: URL userinfo, bearer
keys, credential headers).
It is put on every handler `serve()` installs, so records that propagate from any
logger (uvicorn's, websockets', ours) pass through it.

`DropDenialNoise` removes one false alarm: uvicorn's websockets-sansio protocol
logs "ASGI callable returned without completing handshake" at ERROR after every
WebSocket denial response it did send (Kludex/uvicorn#3138, open). The gateway
refuses handshakes that way on purpose (401, 403, 421 with an error body), and an
ERROR per refused page would bury real ones.
"""

from __future__ import annotations

import copy
import logging
import re
from typing import Any

from agentao.credentials import REDACTED, RedactSecrets, redact_secrets

# Header names whose value is a secret, when a library logs `name: value` as two args.
SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "cookie", "sec-websocket-protocol"}
)
_QUERY = re.compile(r"(/[^\s?\"']*)\?[^\s\"']*")  # `/v1/x?api_key=...` -> `/v1/x?…`


def redact(text: str) -> str:
    """A gateway log line: no query string at all, then `redact_secrets` (userinfo,
    bearer tokens, credential headers, the key subprotocol)."""
    return redact_secrets(_QUERY.sub(r"\1?…", text))


class GatewayRedactSecrets(RedactSecrets):
    """`RedactSecrets` with the gateway's stricter rule (`redact`), and the value that
    follows a credential header's name, when a library logs them as two arguments."""

    def redact(self, text: str) -> str:
        return redact(text)

    def redact_args(self, args: tuple[Any, ...]) -> list[Any]:
        out: list[Any] = []
        secret_next = False
        for arg in args:
            out.append(REDACTED if secret_next else self.redact_arg(arg))
            secret_next = isinstance(arg, str) and arg.lower() in SECRET_HEADERS
        return out


class DropDenialNoise(logging.Filter):
    """A logger filter for `uvicorn.error`: drops uvicorn's false "incomplete handshake"."""

    MESSAGE = "ASGI callable returned without completing handshake."

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != self.MESSAGE


def uvicorn_log_config() -> dict[str, Any]:
    """uvicorn's own logging config, with `RedactSecrets` on each of its handlers."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    filters = config.setdefault("filters", {})
    filters["redact_secrets"] = {"()": GatewayRedactSecrets}
    filters["drop_denial_noise"] = {"()": DropDenialNoise}
    for handler in config["handlers"].values():
        handler.setdefault("filters", []).append("redact_secrets")
    config["loggers"]["uvicorn.error"]["filters"] = ["drop_denial_noise"]
    return config


def redact_root_handlers() -> None:
    """Put `RedactSecrets` on the root logger's handlers (ours and propagated records)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, GatewayRedactSecrets) for f in handler.filters):
            handler.addFilter(GatewayRedactSecrets())


__all__ = [
    "SECRET_HEADERS",
    "DropDenialNoise",
    "GatewayRedactSecrets",
    "redact",
    "redact_root_handlers",
    "uvicorn_log_config",
]
