"""A provider that plays a script instead of calling an LLM (`LLM_PROVIDER=SCRIPTED`).

For demos, tests and benchmarks: no key, no network, and honest about it (the model is
called `scripted/<file stem>`). `AGENTAO_SCRIPT` names a JSON file:

    {
      "description": "optional, for humans",
      "responses": [                                   (or the file is just this list)
        {"thought": "Let me plan.",
         "text": "I'll write hello.txt.",              a string streams word by word
         "tool_calls": [{"name": "write_file",
                         "arguments": {"file_path": "hello.txt", "content": "hi\\n"}}]},
        {"text": ["Done", "."]},                       a list streams chunk by chunk
        {"text": {"repeat": "x", "count": 20000}},     N identical chunks (benchmarks)
        {"match": "read", "text": "..."},              only when the last user message
                                                       contains "read" (any case)
        {"text": "slow", "delay": 0.5},                seconds before each chunk
        {"error": "transient", "message": "busy"},     raise LlmError ("fatal": not retried)
        {"text": "cut", "finish": "length"}            finish reason (default: tool_calls
      ]                                                when there are calls, else stop)
    }

Each LLM request takes the first unused response that is eligible (no `match`, or a
`match` found in the last user message); responses are used once, in order, across the
whole session (so one provider instance per session). When none is left the reply is
"(scripted provider: script exhausted)". A list of chunks may mix strings and repeats.
Optional `usage` ({"input_tokens", "output_tokens"}) is reported as given.
"""

from __future__ import annotations

import asyncio
import functools
import os
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Literal

import msgspec

from agentao.agent.events import Usage
from agentao.agent.providers.base import (
    LlmEvent,
    LlmFinished,
    LlmRequest,
    TextPiece,
    ThoughtPiece,
    ToolCallRequest,
)
from agentao.agent.providers.errors import LlmError
from agentao.agent.providers.messages import UserMessage

__all__ = ["EXHAUSTED", "ScriptedProvider"]

EXHAUSTED = "(scripted provider: script exhausted)"


class Repeat(msgspec.Struct, forbid_unknown_fields=True):
    repeat: str
    count: int


Chunks = str | list[str | Repeat] | Repeat


class ScriptedCall(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    arguments: dict[str, Any] = {}
    id: str | None = None


class ScriptedUsage(msgspec.Struct, forbid_unknown_fields=True):
    input_tokens: int = 0
    output_tokens: int = 0


class Response(msgspec.Struct, forbid_unknown_fields=True):
    match: str | None = None
    thought: Chunks | None = None
    text: Chunks | None = None
    tool_calls: list[ScriptedCall] = []
    delay: float = 0.0
    error: Literal["transient", "fatal"] | None = None
    message: str | None = None
    finish: Literal["stop", "length", "content_filter", "tool_calls"] | None = None
    usage: ScriptedUsage | None = None


class Script(msgspec.Struct, forbid_unknown_fields=True):
    responses: list[Response]
    description: str = ""


def parse_script(data: Any) -> list[Response]:
    """A script parsed from JSON (the object form or the bare list), checked."""
    try:
        if isinstance(data, list):
            return msgspec.convert(data, list[Response])
        return msgspec.convert(data, Script).responses
    except msgspec.ValidationError as exc:
        raise LlmError(f"bad script: {exc}", reason="bad_script") from None


@functools.lru_cache(maxsize=8)
def _parsed(path: str, size: int, mtime_ns: int) -> tuple[Response, ...]:
    """The responses of one version of a script file (Responses are never mutated)."""
    return tuple(parse_script(msgspec.json.decode(Path(path).read_bytes())))


class ScriptedProvider:
    def __init__(self, responses: list[Response]) -> None:
        self._unused = list(responses)

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedProvider:
        """Load and check a script; LlmError (reason "bad_script") says what is wrong.
        A file is parsed once per version (path, size, mtime): every session of a
        gateway's agent used to parse it again, a third of a cold session's CPU."""
        try:
            st = os.stat(path)
            return cls(list(_parsed(str(path), st.st_size, st.st_mtime_ns)))
        except (OSError, msgspec.DecodeError, LlmError) as exc:
            raise LlmError(f"cannot load script {path}: {exc}", reason="bad_script") from None

    @classmethod
    def from_data(cls, data: Any) -> ScriptedProvider:
        """A script already parsed from JSON: the object form or the bare list."""
        return cls(parse_script(data))

    async def aclose(self) -> None:
        pass

    async def stream(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
        response = self._take(_last_user_text(request))
        if response is None:
            yield TextPiece(EXHAUSTED)
            yield LlmFinished("stop")
            return
        if response.error is not None:
            message = response.message or f"scripted {response.error} error"
            raise LlmError(message, transient=response.error == "transient", reason="scripted")
        for piece_type, chunks in ((ThoughtPiece, response.thought), (TextPiece, response.text)):
            for chunk in _chunks(chunks):
                if response.delay:
                    await asyncio.sleep(response.delay)
                yield piece_type(chunk)
        for call in response.tool_calls:
            yield ToolCallRequest(
                call.id or f"call_{uuid.uuid4().hex[:12]}", call.name, call.arguments
            )
        finish = response.finish or ("tool_calls" if response.tool_calls else "stop")
        yield LlmFinished(finish, _usage(response.usage))

    def _take(self, user_text: str) -> Response | None:
        for i, response in enumerate(self._unused):
            if response.match is None or response.match.lower() in user_text.lower():
                return self._unused.pop(i)
        return None


def _chunks(chunks: Chunks | None) -> Iterator[str]:
    if chunks is None:
        return
    if isinstance(chunks, str):
        yield from re.findall(r"\S+\s*|\s+", chunks)  # word by word, spaces kept
        return
    for item in chunks if isinstance(chunks, list) else [chunks]:
        if isinstance(item, Repeat):
            for _ in range(item.count):
                yield item.repeat
        elif item:
            yield item


def _last_user_text(request: LlmRequest) -> str:
    for message in reversed(request.messages):
        if isinstance(message, UserMessage):
            return message.text
    return ""


def _usage(usage: ScriptedUsage | None) -> Usage | None:
    if usage is None:
        return None
    total = usage.input_tokens + usage.output_tokens
    return Usage(usage.input_tokens, usage.output_tokens, total)
