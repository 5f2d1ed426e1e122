"""The gateway's log lines carry no secret: no query string, no Authorization, no key.

uvicorn logs every WebSocket handshake with its path *and query string* at INFO,
and at DEBUG the websockets library logs each handshake header, Authorization
and the `agentao.key.` subprotocol included. Keys are refused in URLs (see
`guard.py`), but the refusal itself is logged with the URL that carried one.
`RedactSecrets` rewrites each record on its way to a handler: query strings are
cut to `?…`, and the values of credential headers and bearer keys are replaced.
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

REDACTED = "[redacted]"
# Header names whose value is a secret, when a library logs `name: value` as two args.
SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "cookie", "sec-websocket-protocol"}
)
_RULES = (
    (re.compile(r"(/[^\s?\"']*)\?[^\s\"']*"), r"\1?…"),  # `/v1/x?api_key=...` -> `/v1/x?…`
    (re.compile(r"\b(bearer\s+)\S+", re.I), rf"\1{REDACTED}"),
    (re.compile(r"agentao\.key\.[A-Za-z0-9_=-]+"), f"agentao.key.{REDACTED}"),
    (re.compile(r"\b((?:proxy-)?authorization|cookie)(\s*:\s*)\S.*", re.I), rf"\1\2{REDACTED}"),
)


def redact(text: str) -> str:
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text


class RedactSecrets(logging.Filter):
    """A handler filter: each string argument (or an argument-less message) redacted.

    Arguments are rewritten one by one, not formatted into the message, because
    uvicorn's access formatter unpacks them.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and record.args:
            record.args = tuple(_redact_args(record.args))
        elif not record.args and isinstance(record.msg, str):
            record.msg = redact(record.msg)
        return True


def _redact_args(args: tuple[Any, ...]) -> list[Any]:
    out: list[Any] = []
    secret_next = False
    for arg in args:
        if secret_next:
            out.append(REDACTED)
        else:
            out.append(redact(arg) if isinstance(arg, str) else arg)
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
    filters["redact_secrets"] = {"()": RedactSecrets}
    filters["drop_denial_noise"] = {"()": DropDenialNoise}
    for handler in config["handlers"].values():
        handler.setdefault("filters", []).append("redact_secrets")
    config["loggers"]["uvicorn.error"]["filters"] = ["drop_denial_noise"]
    return config


def redact_root_handlers() -> None:
    """Put `RedactSecrets` on the root logger's handlers (ours and propagated records)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactSecrets) for f in handler.filters):
            handler.addFilter(RedactSecrets())


__all__ = [
    "REDACTED",
    "SECRET_HEADERS",
    "DropDenialNoise",
    "RedactSecrets",
    "redact",
    "redact_root_handlers",
    "uvicorn_log_config",
]
