"""A lean OpenAI-compatible streaming provider: httpx for the request, msgspec for each chunk.

Why it exists. The `openai` SDK builds a pydantic model per streamed chunk (~0.3 ms
each) and costs ~25 MB to import; relaying a long reply, that was most of the
agent's CPU, and most of its memory after one session. The request goes through
`agentao/http1.py` (httptools over asyncio streams), or through httpx when a proxy is set. This provider speaks the
same Chat Completions wire (`stream: true`, `stream_options.include_usage`) with
one typed msgspec decode per SSE line, and keeps the SDK provider's behaviour:
reasoning from `delta.reasoning_content` or `delta.reasoning`, tool calls
assembled by `index`, HTTP errors through `status_error` (so retries and
`data.reason` are the same), the response closed when the stream is abandoned.

`make_provider(config, openai_client="http")` (the default) picks it; "sdk" picks
the SDK provider (`openai_provider.py`), e.g. for a feature this one lacks.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec

from agentao.agent.config import LlmConfig
from agentao.agent.events import Usage
from agentao.agent.providers.base import (
    LlmEvent,
    LlmFinished,
    LlmRequest,
    TextPiece,
    ThoughtPiece,
)
from agentao.agent.providers.errors import LlmError, status_error
from agentao.agent.providers.openai_provider import ToolCallAssembler, chat_body, usage_of
from agentao.http1 import Http1Client, HttpError, HttpTimeout, proxy_configured

CONNECT_TIMEOUT = 30.0  # seconds to open the connection (the read timeout is the config's)
ERROR_BODY_CHARS = 2000  # of an error response, kept in the message


class _Function(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class _ToolCallPart(msgspec.Struct):
    index: int | None = None
    id: str | None = None
    function: _Function | None = None


class _Delta(msgspec.Struct):
    content: Any = None
    reasoning_content: Any = None
    reasoning: Any = None
    tool_calls: list[_ToolCallPart] | None = None


class _Choice(msgspec.Struct):
    delta: _Delta | None = None
    finish_reason: str | None = None


class _Details(msgspec.Struct):
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None


class _Usage(msgspec.Struct):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    completion_tokens_details: _Details | None = None
    prompt_tokens_details: _Details | None = None


class _Chunk(msgspec.Struct):
    choices: list[_Choice] | None = None
    usage: _Usage | None = None
    error: Any = None


_decode_chunk = msgspec.json.Decoder(_Chunk).decode
_encode = msgspec.json.Encoder().encode


class HttpOpenAIProvider:
    """`LlmProvider` for an OpenAI-compatible `/chat/completions` endpoint."""

    def __init__(self, config: LlmConfig) -> None:
        self._config = config
        self._client: Any = None

    def _get_client(self) -> Any:
        if self._client is None:
            timeout = self._config.limits.request_timeout
            connect = min(CONNECT_TIMEOUT, timeout)
            auth = {"Authorization": f"Bearer {self._config.api_key}"}
            if proxy_configured():
                httpx = _httpx()
                self._client = _HttpxClient(
                    httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=connect), headers=auth)
                )
            else:
                self._client = Http1Client(timeout, connect, auth)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()

    async def stream(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
        body = chat_body(request)
        url = (self._config.base_url or "https://api.openai.com/v1").rstrip("/")
        calls = ToolCallAssembler()
        finish: str | None = None
        usage: Usage | None = None
        client = self._get_client()
        try:
            async with client.post(f"{url}/chat/completions", _encode(body), _HEADERS) as response:
                if response.status_code >= 400:
                    raise await _status(response)
                async for data in _sse_data(response):
                    chunk = _parse(data)
                    if chunk.usage is not None:
                        usage = usage_of(chunk.usage)
                    for choice in (chunk.choices or ())[:1]:
                        for event in _events(choice, calls):
                            yield event
                        finish = choice.finish_reason or finish
        except Exception as exc:
            error = _transport_error(exc)
            if error is exc:
                raise
            raise error from exc
        for call in calls.finish():
            yield call
        yield LlmFinished(finish or "stop", usage)


_HEADERS = {"Content-Type": "application/json", "Accept": "text/event-stream"}


class _HttpxClient:
    """httpx behind the same `post()` as Http1Client (used when a proxy is configured)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    @asynccontextmanager
    async def post(self, url: str, body: bytes, headers: dict[str, str]) -> AsyncIterator[Any]:
        async with self._client.stream("POST", url, content=body, headers=headers) as response:
            yield response

    async def aclose(self) -> None:
        await self._client.aclose()


def _transport_error(exc: Exception) -> Exception:
    """The LlmError for a failure below HTTP (anything else is passed through)."""
    if isinstance(exc, LlmError):
        return exc
    timeout = isinstance(exc, HttpTimeout) or type(exc).__name__.endswith("Timeout")
    if timeout:
        return LlmError(f"LLM request timed out: {exc}", transient=True, reason="timeout")
    if isinstance(exc, HttpError | OSError) or type(exc).__module__.startswith("httpx"):
        return LlmError(f"cannot reach the LLM: {exc}", transient=True, reason="connection")
    return exc


def _httpx() -> Any:
    """httpx, without its command-line module: that one pulls in rich, click and pygments
    (~5 MB resident) when they are installed, and the agent never uses it."""
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
    import httpx

    return httpx


async def _sse_data(response: Any) -> AsyncIterator[bytes]:
    """The `data:` payloads of a server-sent event stream, until `[DONE]`.

    Bytes are split here rather than by `aiter_lines()`: whatever one read brought
    (often many events when the server is ahead of us) is handled in one pass."""
    pending = b""
    async for chunk in response.aiter_bytes():
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        for line in lines:
            if not line.startswith(b"data:"):
                continue  # comments, `event:` and blank lines
            data = line[5:].strip()
            if data == b"[DONE]":
                return
            if data:
                yield data


def _parse(data: bytes) -> _Chunk:
    try:
        chunk = _decode_chunk(data)
    except msgspec.DecodeError as exc:
        raise LlmError(f"malformed stream chunk: {exc}", reason="bad_response") from None
    if chunk.error is not None:
        message = chunk.error.get("message") if isinstance(chunk.error, dict) else chunk.error
        raise LlmError(f"LLM error: {message}", reason="api_error")
    return chunk


def _events(choice: _Choice, calls: ToolCallAssembler) -> list[LlmEvent]:
    delta = choice.delta
    if delta is None:
        return []
    out: list[LlmEvent] = []
    thought = delta.reasoning_content or delta.reasoning
    if isinstance(thought, str) and thought:
        out.append(ThoughtPiece(thought))
    if isinstance(delta.content, str) and delta.content:
        out.append(TextPiece(delta.content))
    for part in delta.tool_calls or ():
        calls.add(part)
    return out


async def _status(response: Any) -> LlmError:
    body = (await response.aread()).decode("utf-8", "replace")
    try:
        error = msgspec.json.decode(body)["error"]
        message = error["message"] if isinstance(error, dict) else str(error)
        code = error.get("code") if isinstance(error, dict) else None
        if isinstance(code, str) and code not in message:
            message = f"{message} ({code})"  # e.g. context_length_exceeded
    except (msgspec.DecodeError, KeyError, TypeError):
        message = body[:ERROR_BODY_CHARS]
    text = f"Error code: {response.status_code} - {message}"
    return status_error(response.status_code, text, response.headers.get("retry-after"))


__all__ = ["HttpOpenAIProvider"]
