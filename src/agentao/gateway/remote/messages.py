"""What the remote ACP service reads off a client's message: a prompt's blocks, whether it
is a reply to one of our requests, and the stream its reply goes to."""

from __future__ import annotations

from typing import Any

from agentao.client.remote import SESSION_SCOPED  # their replies go to the session's stream
from agentao.protocol.connection import params_of
from agentao.protocol.errors import InvalidParams


def prompt_of(params: dict[str, Any]) -> list[dict[str, Any]]:
    prompt = params.get("prompt")
    if not isinstance(prompt, list) or not all(isinstance(b, dict) for b in prompt):
        raise InvalidParams(
            "Invalid params: prompt must be a list of content blocks", {"field": "prompt"}
        )
    return prompt


def is_response(message: Any) -> bool:
    """A reply to one of our requests: no method, an id, and a result or an error."""
    return (
        isinstance(message, dict)
        and message.get("jsonrpc") == "2.0"
        and "method" not in message
        and "id" in message
        and ("result" in message) != ("error" in message)
    )


def reply_scope_of(message: Any) -> str:
    """The stream a reply to `message` goes to (the connection's if it has no method)."""
    method = message.get("method") if isinstance(message, dict) else None
    return reply_scope(method, params_of(message)) if isinstance(method, str) else ""


def reply_scope(method: str, params: dict[str, Any]) -> str:
    session_id = params.get("sessionId")
    return session_id if method in SESSION_SCOPED and isinstance(session_id, str) else ""


__all__ = ["is_response", "prompt_of", "reply_scope", "reply_scope_of"]
