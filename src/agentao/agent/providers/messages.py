"""The conversation as the agent keeps it, independent of any LLM API.

Providers translate these to their wire format; the session stores them. A turn is
`UserMessage`, then rounds of `AssistantMessage` (text and/or tool calls) each followed
by one `ToolResultMessage` per call. Thoughts are kept for the record but not sent back.
A user message may carry images (`ImagePart`: base64 data and its MIME type), sent only
to models that take them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "AssistantMessage",
    "ImagePart",
    "Message",
    "SystemMessage",
    "ToolCall",
    "ToolResultMessage",
    "UserMessage",
]


@dataclass(frozen=True, slots=True)
class SystemMessage:
    text: str


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image in a prompt: base64 `data` of `mime_type` ("image/png")."""

    mime_type: str
    data: str
    uri: str | None = None


@dataclass(frozen=True, slots=True)
class UserMessage:
    text: str
    images: tuple[ImagePart, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    thought: str = ""


@dataclass(frozen=True, slots=True)
class ToolResultMessage:
    call_id: str
    name: str
    text: str
    is_error: bool = False


Message = SystemMessage | UserMessage | AssistantMessage | ToolResultMessage
