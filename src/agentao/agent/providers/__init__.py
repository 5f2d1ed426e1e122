"""LLM providers behind one seam (`LlmProvider.stream`), and `make_provider` to pick one.

Importing this package loads no SDK: each provider module imports its SDK on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentao.agent.providers.base import (
    LlmEvent,
    LlmFinished,
    LlmProvider,
    LlmRequest,
    TextPiece,
    ThoughtPiece,
    ToolCallRequest,
)
from agentao.agent.providers.errors import LlmError, MissingCredentials, ProviderNotFound
from agentao.agent.providers.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

if TYPE_CHECKING:
    from agentao.agent.config import LlmConfig

__all__ = [
    "AssistantMessage",
    "LlmError",
    "LlmEvent",
    "LlmFinished",
    "LlmProvider",
    "LlmRequest",
    "Message",
    "MissingCredentials",
    "ProviderNotFound",
    "SystemMessage",
    "TextPiece",
    "ThoughtPiece",
    "ToolCall",
    "ToolCallRequest",
    "ToolResultMessage",
    "UserMessage",
    "make_provider",
]


def make_provider(config: LlmConfig, openai_client: str = "http") -> LlmProvider:
    """A provider for `config` (cheap: no SDK import, no connection until the first stream).

    Make one per session: the scripted provider keeps its place in the script.
    OpenAI-compatible endpoints get the lean streaming client (`openai_http.py`) unless
    `openai_client` is "sdk" (see that module for why it is the default)."""
    if config.api == "scripted":
        from agentao.agent.providers.scripted import ScriptedProvider

        return ScriptedProvider.from_file(config.script or "")
    if config.api == "anthropic":
        from agentao.agent.providers.anthropic_provider import AnthropicProvider

        return AnthropicProvider(config)
    if openai_client == "sdk":
        from agentao.agent.providers.openai_provider import OpenAIProvider

        return OpenAIProvider(config)
    from agentao.agent.providers.openai_http import HttpOpenAIProvider

    return HttpOpenAIProvider(config)
