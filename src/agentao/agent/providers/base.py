"""The LLM seam: one method that streams typed events.

A provider turns an `LlmRequest` into a stream of `TextPiece` / `ThoughtPiece` as they
arrive, then every `ToolCallRequest` (assembled, arguments parsed), then exactly one
`LlmFinished`. Failures raise `LlmError`. Closing the stream early (`aclose()`, or
cancelling the task that iterates it) must close the underlying HTTP response at once:
that is how a cancelled turn stops paying for tokens.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

from agentao.agent.events import Usage
from agentao.agent.providers.messages import Message

__all__ = [
    "LlmEvent",
    "LlmFinished",
    "LlmProvider",
    "LlmRequest",
    "TextPiece",
    "ThoughtPiece",
    "ToolCallRequest",
]


@dataclass(frozen=True, slots=True)
class LlmRequest:
    model: str
    messages: tuple[Message, ...]
    tools: tuple[dict[str, Any], ...] = ()  # OpenAI-style function specs (`Tool.schema()`)


@dataclass(frozen=True, slots=True)
class TextPiece:
    text: str


@dataclass(frozen=True, slots=True)
class ThoughtPiece:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """A whole tool call. `raw_arguments` holds the text when it was not a JSON object."""

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str | None = None

    @classmethod
    def from_json(cls, call_id: str, name: str, arguments: str) -> ToolCallRequest:
        """Parse the streamed argument text; anything but a JSON object is kept raw."""
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            return cls(call_id, name, parsed)
        return cls(call_id, name, {}, raw_arguments=arguments)


@dataclass(frozen=True, slots=True)
class LlmFinished:
    """`finish_reason`: "stop", "tool_calls", "length" or "content_filter" (as the API said)."""

    finish_reason: str
    usage: Usage | None = None


LlmEvent = TextPiece | ThoughtPiece | ToolCallRequest | LlmFinished


class LlmProvider(Protocol):
    def stream(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
        """Stream one reply (implementations are `async def` generators)."""
        ...

    async def aclose(self) -> None:
        """Release connections (session closed, provider switched); no stream is open."""
        ...
