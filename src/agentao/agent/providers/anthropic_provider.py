"""Claude through the Anthropic Messages API (the optional `anthropic` extra).

The SDK is imported on the first request. Raw stream events are folded into our events:
`text_delta` → TextPiece, `thinking_delta` → ThoughtPiece, a `tool_use` block plus its
`input_json_delta`s → one ToolCallRequest when the block stops.

Not done: extended thinking is not switched on (it would need the thinking blocks and
their signatures sent back with every tool result), so thoughts appear only from models
that emit them unasked.
"""

from __future__ import annotations

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

__all__ = ["AnthropicProvider", "to_anthropic_messages"]

_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop",
           "max_tokens": "length", "tool_use": "tool_calls", "refusal": "content_filter"}  # fmt: skip


class AnthropicProvider:
    def __init__(self, config: LlmConfig) -> None:
        self._config = config
        self._client: Any = None

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                from anthropic import AsyncAnthropic
            except ImportError:
                raise LlmError(
                    "the anthropic provider needs the anthropic package: pip install anthropic "
                    "(or, in the agentao checkout, pip install '.[anthropic]')",
                    reason="missing_dependency",
                ) from None
            self._client = AsyncAnthropic(
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
        client = self._get_client()
        import anthropic

        system, messages = to_anthropic_messages(request.messages)
        params: dict[str, Any] = {
            "model": request.model,
            "max_tokens": self._config.limits.max_output_tokens,
            "messages": messages,
            "stream": True,
        }
        if system:
            params["system"] = system
        if request.tools:
            params["tools"] = [_tool(spec) for spec in request.tools]
        try:
            response = await client.messages.create(**params)
        except anthropic.AnthropicError as exc:
            raise _llm_error(exc) from exc
        state = _Folding()
        try:
            async for event in response:
                for out in state.fold(event):
                    yield out
        except anthropic.AnthropicError as exc:
            raise _llm_error(exc) from exc
        finally:
            await response.close()
        yield LlmFinished(_FINISH.get(state.stop_reason or "", "stop"), state.usage())


class _Folding:
    """The state of one streamed message: open tool_use blocks, stop reason, token counts."""

    def __init__(self) -> None:
        self.tools: dict[int, dict[str, str]] = {}
        self.stop_reason: str | None = None
        self.input_tokens = 0
        self.output_tokens = 0
        self.cached: int | None = None

    def fold(self, event: Any) -> list[LlmEvent]:
        kind = event.type
        if kind == "message_start":
            self._count(event.message.usage)
        elif kind == "content_block_start" and event.content_block.type == "tool_use":
            block = event.content_block
            self.tools[event.index] = {"id": block.id, "name": block.name, "json": ""}
        elif kind == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                return [TextPiece(delta.text)]
            if delta.type == "thinking_delta":
                return [ThoughtPiece(delta.thinking)]
            if delta.type == "input_json_delta" and event.index in self.tools:
                self.tools[event.index]["json"] += delta.partial_json
        elif kind == "content_block_stop" and event.index in self.tools:
            tool = self.tools.pop(event.index)
            return [ToolCallRequest.from_json(tool["id"], tool["name"], tool["json"])]
        elif kind == "message_delta":
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            self._count(event.usage)
        return []

    def _count(self, usage: Any) -> None:
        # Counts are cumulative: message_start has the input, message_delta the output so far.
        self.input_tokens = getattr(usage, "input_tokens", None) or self.input_tokens
        self.output_tokens = getattr(usage, "output_tokens", None) or self.output_tokens
        self.cached = getattr(usage, "cache_read_input_tokens", None) or self.cached

    def usage(self) -> Usage:
        total = self.input_tokens + self.output_tokens
        return Usage(self.input_tokens, self.output_tokens, total, cached_read_tokens=self.cached)


def to_anthropic_messages(messages: tuple[Message, ...]) -> tuple[str, list[dict[str, Any]]]:
    """(system text, messages): tool results ride in user messages, and consecutive
    messages of one role are merged, as the API wants strict alternation."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for m in messages:
        match m:
            case SystemMessage(text):
                system.append(text)
            case UserMessage(text, images):
                blocks = [
                    {"type": "image",
                     "source": {"type": "base64", "media_type": i.mime_type, "data": i.data}}
                    for i in images
                ]  # fmt: skip
                _append(out, "user", [*blocks, {"type": "text", "text": text or "(image)"}])
            case AssistantMessage(text, calls):
                blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
                blocks += [
                    {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                    for c in calls
                ]
                _append(out, "assistant", blocks or [{"type": "text", "text": "(no reply)"}])
            case ToolResultMessage(call_id, _, text, is_error):
                block = {"type": "tool_result", "tool_use_id": call_id, "content": text}
                _append(out, "user", [block | ({"is_error": True} if is_error else {})])
    return "\n\n".join(system), out


def _append(out: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    if out and out[-1]["role"] == role:
        out[-1]["content"].extend(blocks)
    else:
        out.append({"role": role, "content": blocks})


def _tool(spec: dict[str, Any]) -> dict[str, Any]:
    fn = spec["function"]
    schema = fn.get("parameters") or {"type": "object", "properties": {}}
    return {"name": fn["name"], "description": fn.get("description", ""), "input_schema": schema}


def _llm_error(exc: Exception) -> LlmError:
    import anthropic

    if isinstance(exc, anthropic.APITimeoutError):
        return LlmError(f"LLM request timed out: {exc}", transient=True, reason="timeout")
    if isinstance(exc, anthropic.APIConnectionError):
        return LlmError(f"cannot reach the LLM: {exc}", transient=True, reason="connection")
    if isinstance(exc, anthropic.APIStatusError) and exc.status_code < 400:
        return _midstream_error(exc)
    if isinstance(exc, anthropic.APIStatusError):
        return status_error(exc.status_code, str(exc), exc.response.headers.get("retry-after"))
    return LlmError(f"LLM error: {exc}", reason="api_error")


# An `error` event inside a 200 stream: overloaded and internal errors are worth a retry.
_MIDSTREAM = {"overloaded_error": "overloaded", "api_error": "server_error",
              "rate_limit_error": "rate_limited"}  # fmt: skip


def _midstream_error(exc: Any) -> LlmError:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error") if isinstance(body.get("error"), dict) else body
    reason = _MIDSTREAM.get(str(error.get("type", "")))
    return LlmError(str(exc), transient=reason is not None, reason=reason or "api_error")
