"""What can go wrong reaching an LLM.

    LlmError                  a call (or its setup) failed; `.transient`: retrying may help,
    │                         `.reason`: short machine-readable tag (JSON-RPC `data.reason`)
    ├── MissingCredentials    the environment lacks the variables to reach the provider
    └── ProviderNotFound      no provider by that id can be resolved

Messages never embed secrets: providers pass on the SDK's message, which masks keys.
"""

from __future__ import annotations

import re

__all__ = ["LlmError", "MissingCredentials", "ProviderNotFound", "status_error"]


class LlmError(Exception):
    """An LLM call failed. `retry_after` (seconds) when the provider said when to come back."""

    def __init__(
        self,
        message: str,
        *,
        transient: bool = False,
        reason: str = "llm_error",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.transient = transient
        self.reason = reason
        self.retry_after = retry_after


class MissingCredentials(LlmError):
    """`variables`: the environment variables that must be set."""

    def __init__(self, variables: list[str], optional: list[str] | None = None) -> None:
        message = f"set {', '.join(variables)}"
        if optional:
            message += f" (and optionally {', '.join(optional)})"
        super().__init__(message, reason="missing_credentials")
        self.variables = variables


class ProviderNotFound(LlmError):
    def __init__(self, provider_id: str) -> None:
        super().__init__(f"cannot resolve provider '{provider_id}'", reason="provider_not_found")
        self.provider_id = provider_id


# HTTP statuses a retry may cure (the SDKs' own retry set), and the tags of the ones it won't.
_TRANSIENT = {408: "timeout", 409: "conflict", 429: "rate_limited"}
_FATAL = {400: "bad_request", 401: "auth", 403: "auth", 404: "not_found", 413: "too_large"}


def status_error(status: int, message: str, retry_after: str | None = None) -> LlmError:
    """The LlmError for an HTTP error status from an LLM API. A refusal for the request's
    length (any 4xx that says so) has the reason "context_length": the turn compacts
    the history and retries once (agent/compaction.py)."""
    if 400 <= status < 500 and status not in _TRANSIENT and _OVERFLOW.search(message):
        return LlmError(message, reason="context_length")
    if status in _TRANSIENT or status >= 500:
        reason = _TRANSIENT.get(status, "server_error")
        return LlmError(message, transient=True, reason=reason, retry_after=_seconds(retry_after))
    return LlmError(message, reason=_FATAL.get(status, f"http_{status}"))


# A refusal for length, in the words providers use (OpenAI and compatibles, vLLM,
# Anthropic, llama.cpp): "context_length_exceeded", "maximum context length is N
# tokens", "prompt is too long: N tokens > M maximum".
_OVERFLOW = re.compile(
    r"context_length_exceeded|maximum context length|context length|context window|"
    r"prompt is too long|too many tokens|input is too long",
    re.IGNORECASE,
)


def _seconds(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:  # an HTTP date: not worth parsing, the backoff applies
        return None
