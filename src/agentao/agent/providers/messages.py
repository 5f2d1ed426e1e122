"""The conversation as the agent keeps it, independent of any LLM API.

Providers translate these to their wire format; the session stores them. A turn is
`UserMessage`, then rounds of `AssistantMessage` (text and/or tool calls) each followed
by one `ToolResultMessage` per call. Thoughts are kept for the record but not sent back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "AssistantMessage",
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
class UserMessage:
    text: str


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
