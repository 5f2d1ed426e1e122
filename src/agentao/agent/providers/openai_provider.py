"""Any OpenAI-compatible Chat Completions endpoint (OpenAI, DeepSeek, Qwen, vLLM, Ollama, …).

The `openai` SDK is imported on the first request, never at import time. Its own retries
are off: the turn loop retries, visibly. Reasoning arrives as `delta.reasoning_content`
(DeepSeek, Qwen) or `delta.reasoning` (OpenRouter, vLLM) and becomes `ThoughtPiece`s.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from agentao.agent.config import LlmConfig
from agentao.agent.events import Usage
from agentao.agent.providers.base import (
    LlmEvent,
    LlmFinished,
    LlmRequest,
    TextPiece,
    ThoughtPiece,
    ToolCallRequest,
)
from agentao.agent.providers.errors import LlmError, status_error
from agentao.agent.providers.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
)

__all__ = ["OpenAIProvider", "ToolCallAssembler", "chat_body", "to_openai_messages", "usage_of"]


class OpenAIProvider:
    def __init__(self, config: LlmConfig) -> None:
        self._config = config
        self._client: Any = None

    def _get_client(self) -> Any:
        if self._client is None:
            from openai import AsyncOpenAI

            self._client = AsyncOpenAI(
                api_key=self._config.api_key,
                base_url=self._config.base_url,
                timeout=self._config.limits.request_timeout,
                max_retries=0,
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()

    async def stream(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
        import openai

        try:
            response = await self._get_client().chat.completions.create(**chat_body(request))
        except openai.OpenAIError as exc:
            raise _llm_error(exc) from exc
        calls = ToolCallAssembler()
        finish, usage = None, None
        try:
            async for chunk in response:
                if chunk.usage is not None:
                    usage = usage_of(chunk.usage)
                for choice in chunk.choices[:1]:
                    delta = choice.delta
                    thought = getattr(delta, "reasoning_content", None) or getattr(
                        delta, "reasoning", None
                    )
                    if isinstance(thought, str) and thought:
                        yield ThoughtPiece(thought)
                    if delta.content:
                        yield TextPiece(delta.content)
                    for part in delta.tool_calls or ():
                        calls.add(part)
                    finish = choice.finish_reason or finish
        except openai.OpenAIError as exc:
            raise _llm_error(exc) from exc
        finally:
            await response.close()  # on cancel too: the HTTP connection goes with it
        for call in calls.finish():
            yield call
        yield LlmFinished(finish or "stop", usage)


def chat_body(request: LlmRequest) -> dict[str, Any]:
    """The streamed Chat Completions request both OpenAI-compatible providers send."""
    body: dict[str, Any] = {
        "model": request.model,
        "messages": to_openai_messages(request.messages),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = list(request.tools)
    return body


def to_openai_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        match m:
            case SystemMessage(text):
                out.append({"role": "system", "content": text})
            case UserMessage(text, images) if images:
                parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
                parts += [
                    {
                        "type": "image_url",
                        "image_url": {"url": f"data:{i.mime_type};base64,{i.data}"},
                    }
                    for i in images
                ]
                out.append({"role": "user", "content": parts})
            case UserMessage(text):
                out.append({"role": "user", "content": text})
            case AssistantMessage(text, calls):
                msg: dict[str, Any] = {"role": "assistant", "content": text or None}
                if calls:
                    msg["tool_calls"] = [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                        }
                        for c in calls
                    ]
                out.append(msg)
            case ToolResultMessage(call_id, _, text):
                out.append({"role": "tool", "tool_call_id": call_id, "content": text})
    return out


class ToolCallAssembler:
    """Tool calls arrive in pieces keyed by `index`: id and name first, then argument text."""

    def __init__(self) -> None:
        self._parts: dict[int, dict[str, Any]] = {}

    def add(self, part: Any) -> None:
        index = part.index if part.index is not None else len(self._parts)
        call = self._parts.setdefault(index, {"id": None, "name": "", "arguments": ""})
        call["id"] = call["id"] or part.id
        if part.function is not None:
            call["name"] += part.function.name or ""
            call["arguments"] += part.function.arguments or ""

    def finish(self) -> list[ToolCallRequest]:
        return [
            ToolCallRequest.from_json(c["id"] or f"call_{i}", c["name"], c["arguments"])
            for i, c in sorted(self._parts.items())
        ]


def usage_of(u: Any) -> Usage:
    """Chat Completions `usage` (an SDK model or a msgspec struct) as our Usage."""
    details = getattr(u, "completion_tokens_details", None)
    cached = getattr(u, "prompt_tokens_details", None)
    return Usage(
        input_tokens=u.prompt_tokens or 0,
        output_tokens=u.completion_tokens or 0,
        total_tokens=u.total_tokens or 0,
        thought_tokens=getattr(details, "reasoning_tokens", None),
        cached_read_tokens=getattr(cached, "cached_tokens", None),
    )


def _llm_error(exc: Exception) -> LlmError:
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return LlmError(f"LLM request timed out: {exc}", transient=True, reason="timeout")
    if isinstance(exc, openai.APIConnectionError):
        return LlmError(f"cannot reach the LLM: {exc}", transient=True, reason="connection")
    if isinstance(exc, openai.APIStatusError):
        return status_error(exc.status_code, str(exc), exc.response.headers.get("retry-after"))
    return LlmError(f"LLM error: {exc}", reason="api_error")
