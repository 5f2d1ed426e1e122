"""One LLM reply: the provider's stream with visible retries, and the reply as it builds.

`llm_events` retries a transient error only while the reply has shown nothing (the user
saw the rest), announcing each wait with a Notice. `Reply` gathers the streamed text,
thought and tool calls, and says which of them the user should see now.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field

from agentao.agent.config import Limits
from agentao.agent.events import Notice, TextDelta, ThoughtDelta, TurnEvent
from agentao.agent.providers.base import (
    LlmEvent,
    LlmFinished,
    LlmProvider,
    LlmRequest,
    TextPiece,
    ThoughtPiece,
    ToolCallRequest,
)
from agentao.agent.providers.errors import LlmError
from agentao.agent.providers.messages import AssistantMessage, ToolCall

__all__ = ["Reply", "llm_events"]


async def llm_events(
    provider: LlmProvider, limits: Limits, request: LlmRequest
) -> AsyncIterator[LlmEvent | Notice]:
    """The provider's stream, with transient errors retried (a Notice before each wait).
    Only a reply that has shown nothing yet is retried: the user saw the rest."""
    for attempt in range(limits.max_retries + 1):
        shown = False
        try:
            async with aclosing(provider.stream(request)) as stream:
                async for event in stream:
                    shown = shown or isinstance(event, TextPiece | ThoughtPiece)
                    yield event
            return
        except LlmError as exc:
            if not exc.transient or shown or attempt == limits.max_retries:
                raise
            wait = (
                exc.retry_after
                if exc.retry_after is not None
                else limits.retry_backoff * 2**attempt
            )
            wait = min(wait, limits.max_retry_wait)
            yield Notice(
                f"LLM error ({exc.reason}): {exc}. Retrying in {wait:.1f}s "
                f"(retry {attempt + 1} of {limits.max_retries})."
            )
            await asyncio.sleep(wait)


@dataclass(slots=True)
class Reply:
    """One LLM reply as it streams in."""

    text: list[str] = field(default_factory=list)
    thought: list[str] = field(default_factory=list)
    calls: list[ToolCallRequest] = field(default_factory=list)
    finish: LlmFinished | None = None
    lead: str = ""  # shown before this reply's first text (a paragraph break)

    def take(self, item: LlmEvent | Notice) -> TurnEvent | None:
        """Record `item`; return the event the user should see now, if any."""
        match item:
            case TextPiece(text):
                self.text.append(text)
                shown, self.lead = self.lead + text, ""
                return TextDelta(shown)
            case ThoughtPiece(text):
                self.thought.append(text)
                return ThoughtDelta(text)
            case ToolCallRequest():
                self.calls.append(item)
            case LlmFinished():
                self.finish = item
            case Notice():
                return item
        return None

    def message(self, with_calls: bool) -> AssistantMessage:
        calls = tuple(ToolCall(c.id, c.name, c.arguments) for c in self.calls) if with_calls else ()
        return AssistantMessage("".join(self.text), calls, "".join(self.thought))
