"""Identifiers a client sends, checked before anything runs.

Every identifier ends up somewhere it must be safe. A session key is echoed back as
the `X-Session-Id` header: with CR, LF or NUL in it h11 refused to write the answer,
and the connection dropped *after* the turn had run and written files, so a client
that retries repeats the side effects. A model's own part goes to the agent as a
config value. Ids name store rows and appear in logs. So each is checked at the
edge, and a bad one is a 400 naming the field (`param`), before a session is opened:

    check_session_key(value, param, max_length)   visible ASCII (0x21-0x7E), 1..max chars
    check_id(value, param)                        [A-Za-z0-9_.-], 1..MAX_ID_LENGTH chars
    check_model(value, param)                     `agent` or `agent/model...`: segments of
                                                  visible ASCII, never empty, "." or ".."
                                                  (agents name models `sonnet[1m]`, ...)

A well-formed id that names nothing is still a 404: the shape is checked here, the
existence where the row is read.
"""

from __future__ import annotations

import re

from agentao.gateway.errors import BadRequest

MAX_ID_LENGTH = 128  # our ids are 37 characters (`resp_` + 32 hex digits)
MAX_MODEL_LENGTH = 256
_ID = re.compile(r"[A-Za-z0-9_.-]+")
_SESSION_KEY = re.compile(r"[\x21-\x7e]+")
_MODEL_SEGMENT = re.compile(r"[\x21-\x2e\x30-\x7e]+")  # visible ASCII but "/"


def check_session_key(value: str, param: str, max_length: int) -> str:
    """A conversation key from `X-Session-Id` or `x_session_id`."""
    if not value or len(value) > max_length or not _SESSION_KEY.fullmatch(value):
        raise BadRequest(
            f"{param} must be 1 to {max_length} visible ASCII characters (no spaces or "
            f"control characters): {_shown(value)}",
            param=param,
            code="invalid_session_key",
        )
    return value


def check_id(value: str, param: str) -> str:
    """An id of ours (response, task, conversation, permission request)."""
    if not value or len(value) > MAX_ID_LENGTH or not _ID.fullmatch(value):
        raise BadRequest(
            f"{param} {_shown(value)} is not a valid id", param=param, code="invalid_id"
        )
    return value


def check_model(value: str, param: str = "model") -> str:
    """`agent` or `agent/model`, where the model's own id may hold more slashes."""
    segments = value.split("/")
    if len(value) > MAX_MODEL_LENGTH or not all(_model_segment(s) for s in segments):
        raise BadRequest(
            f"{param} {_shown(value)} is not a model name: `agent` or `agent/model`, visible "
            "ASCII characters between the slashes (no empty, '.' or '..' part)",
            param=param,
            code="invalid_model",
        )
    return value


def _model_segment(segment: str) -> bool:
    return segment not in (".", "..") and _MODEL_SEGMENT.fullmatch(segment) is not None


def _shown(value: str) -> str:
    # repr() escapes control characters, so the error itself is safe to log and show.
    return repr(value[:80] + ("…" if len(value) > 80 else ""))


__all__ = ["MAX_ID_LENGTH", "MAX_MODEL_LENGTH", "check_id", "check_model", "check_session_key"]
