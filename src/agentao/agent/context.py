"""The context window: how many tokens a model takes, and how many a request holds.

Theory of operation
-------------------
A window's size comes from the first source that knows it (`resolve_window`):
`AGENTAO_CONTEXT_TOKENS` (the user said so), the model catalog (`catalog.py`), the
provider's model list (`/v1/models` entries with `context_length` or `max_model_len`),
and otherwise `ContextSettings.default_window`. A provider that refuses a request for
its length teaches us better: `learned_window` reads "maximum context length is N
tokens" (or Anthropic's "N tokens > M maximum") from the refusal, `WindowMemory`
keeps it in the state directory, and from then on the window is at most that.

How full a request is (`ContextMeter`): the provider reports the tokens of each
request it answered; the next request is that count plus an *estimate* of what was
appended since (a tool result, a prompt). With no report at all (a fresh process, a
provider that reports nothing, a rewritten history after compaction) the whole
request is estimated, and the measure says so (`Measure.estimated`). The estimate
is deliberately conservative, with no tokenizer: UTF-8 bytes / `bytes_per_token`
(3.0 by default: English prose runs ~4 bytes a token, code ~3, CJK ~3 bytes a
character and about a token each), plus a few tokens per message and a flat
`IMAGE_TOKENS` per image.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentao.agent.catalog import ModelInfo
from agentao.agent.events import Usage
from agentao.agent.providers.base import LlmRequest
from agentao.agent.providers.errors import LlmError
from agentao.agent.providers.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
)

__all__ = [
    "IMAGE_TOKENS",
    "MESSAGE_TOKENS",
    "ContextBudget",
    "ContextMeter",
    "ContextSettings",
    "Measure",
    "Window",
    "WindowMemory",
    "estimate_messages",
    "estimate_request",
    "estimate_text",
    "is_context_overflow",
    "learned_window",
    "resolve_window",
]

log = logging.getLogger(__name__)

MESSAGE_TOKENS = 4  # per message: role and framing
IMAGE_TOKENS = 1_000  # per image (providers charge ~85 to ~1,600 by size)
WINDOW_FILE = "context_windows.json"  # in the state directory: windows learned from refusals


@dataclass(frozen=True, slots=True)
class ContextSettings:
    """How the window is known and how tokens are estimated."""

    window_tokens: int | None = None  # AGENTAO_CONTEXT_TOKENS: overrides every other source
    default_window: int = 128_000  # AGENTAO_DEFAULT_CONTEXT_TOKENS: when no source knows
    bytes_per_token: float = 3.0  # the estimate's divisor (conservative: real text runs 3-4.5)

    _ENV = {
        "window_tokens": "AGENTAO_CONTEXT_TOKENS",
        "default_window": "AGENTAO_DEFAULT_CONTEXT_TOKENS",
    }

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> ContextSettings:
        values: dict[str, Any] = {}
        for name, var in cls._ENV.items():
            if raw := env.get(var, "").strip():
                values[name] = positive_int(raw, var)
        return cls(**values)


def positive_int(raw: str, var: str) -> int:
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        raise ValueError(f"{var}={raw!r} is not a whole number") from None
    if value <= 0:
        raise ValueError(f"{var}={raw!r} must be positive")
    return value


# --- the window ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Window:
    """A model's context window in tokens, and where that number came from."""

    tokens: int
    source: str  # "AGENTAO_CONTEXT_TOKENS", "catalog", "provider", "learned", "default"


def resolve_window(
    settings: ContextSettings,
    *,
    catalog: int | None = None,
    provider: int | None = None,
    learned: int | None = None,
) -> Window:
    """The window from the first source that knows it; a learned refusal caps the rest."""
    if settings.window_tokens:
        return Window(settings.window_tokens, "AGENTAO_CONTEXT_TOKENS")
    known = (
        Window(catalog, "catalog")
        if catalog
        else Window(provider, "provider")
        if provider
        else Window(settings.default_window, "default")
    )
    if learned and learned < known.tokens:
        return Window(learned, "learned")
    return known


class WindowMemory:
    """Windows learned from refusals, by "provider/model", kept across sessions."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def get(self, model_value: str) -> int | None:
        value = self._read().get(model_value)
        return value if isinstance(value, int) and value > 0 else None

    def remember(self, model_value: str, tokens: int) -> None:
        data = self._read()
        data[model_value] = tokens
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
            os.replace(tmp, self.path)
        except OSError as exc:  # remembering is a nicety: the session goes on
            log.warning("cannot remember the window of %s: %s", model_value, exc)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}


_WINDOW_PATTERNS = (
    re.compile(r"maximum context length is (\d[\d,]*) tokens", re.IGNORECASE),
    re.compile(r"\d[\d,]* tokens > (\d[\d,]*) maximum", re.IGNORECASE),
    re.compile(r"context (?:window|length|size) (?:is |of )(\d[\d,]*)", re.IGNORECASE),
)


def is_context_overflow(exc: BaseException) -> bool:
    """Whether `exc` is a provider refusing a request for its length."""
    return isinstance(exc, LlmError) and exc.reason == "context_length"


def learned_window(message: str) -> int | None:
    """The window a refusal names ("maximum context length is 12000 tokens"), if any."""
    for pattern in _WINDOW_PATTERNS:
        if match := pattern.search(message):
            return int(match.group(1).replace(",", ""))
    return None


# --- the estimate ----------------------------------------------------------------------


def estimate_text(text: str, bytes_per_token: float = 3.0) -> int:
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    return math.ceil(size / bytes_per_token)


def estimate_message(message: Message, bytes_per_token: float = 3.0) -> int:
    tokens = MESSAGE_TOKENS
    match message:
        case SystemMessage(text) | ToolResultMessage(text=text):
            tokens += estimate_text(text, bytes_per_token)
        case UserMessage():
            tokens += estimate_text(message.text, bytes_per_token)
            tokens += IMAGE_TOKENS * len(message.images)
        case AssistantMessage(text, calls):
            tokens += estimate_text(text, bytes_per_token)
            for call in calls:
                args = json.dumps(call.arguments, ensure_ascii=False)
                tokens += MESSAGE_TOKENS + estimate_text(call.name + args, bytes_per_token)
    return tokens


def estimate_messages(messages: Sequence[Message], bytes_per_token: float = 3.0) -> int:
    return sum(estimate_message(m, bytes_per_token) for m in messages)


def estimate_tools(tools: Sequence[dict[str, Any]], bytes_per_token: float = 3.0) -> int:
    if not tools:
        return 0
    return math.ceil(_tool_sizes.size(tools) / bytes_per_token)


class _ToolSizes:
    """The JSON size in bytes of the last few tool lists measured.

    A turn measures its tool list before each request and after each reply, and every
    session of a process offers the same built-ins: encoding them (some 6 KB of JSON,
    ~75 us) was most of what measuring a request cost. A list is known again by equality
    (~1 us) with a snapshot decoded from its own JSON, never with the caller's dicts, so
    a list changed in place after it was measured is measured again. (JSON's size does
    not depend on key order, which equality ignores too.)"""

    def __init__(self, keep: int) -> None:
        self._keep = keep
        self._recent: list[tuple[list[Any], int]] = []  # (snapshot, size), newest first

    def size(self, tools: Sequence[dict[str, Any]]) -> int:
        listed = list(tools)
        for i, (snapshot, size) in enumerate(self._recent):
            if snapshot == listed:
                self._recent.insert(0, self._recent.pop(i))
                return size
        text = json.dumps(listed, ensure_ascii=False)
        size = len(text) if text.isascii() else len(text.encode("utf-8"))
        self._recent.insert(0, (json.loads(text), size))
        del self._recent[self._keep :]
        return size


_tool_sizes = _ToolSizes(keep=8)  # a process's tool lists: its sessions' MCP sets differ


def estimate_request(request: LlmRequest, bytes_per_token: float = 3.0) -> int:
    return estimate_messages(request.messages, bytes_per_token) + estimate_tools(
        request.tools, bytes_per_token
    )


# --- the meter -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Measure:
    """Tokens in a request (or in context after a reply); `estimated` when no provider
    count stands behind the number."""

    tokens: int
    estimated: bool


class ContextMeter:
    """How full the context is, for one session (see the module docstring)."""

    def __init__(self, bytes_per_token: float = 3.0) -> None:
        self.bytes_per_token = bytes_per_token
        self._counted: tuple[Message, ...] = ()  # the last request the provider counted
        self._tools: tuple[dict[str, Any], ...] = ()
        self._tokens = 0  # its input + output tokens, as reported
        self.last: Measure | None = None

    def measure(self, request: LlmRequest) -> Measure:
        """The tokens `request` holds: the last count plus an estimate of what is new."""
        start = self._covered(request)
        if start is None:
            measure = Measure(estimate_request(request, self.bytes_per_token), True)
        else:
            rest = estimate_messages(request.messages[start:], self.bytes_per_token)
            measure = Measure(self._tokens + rest, rest > 0)
        return measure

    def observe(self, request: LlmRequest, usage: Usage | None) -> Measure:
        """A reply to `request` arrived: what is in context now (request and reply)."""
        if usage is None or usage.input_tokens <= 0:
            self.forget()
            self.last = self.measure(request)
            return self.last
        self._counted, self._tools = request.messages, request.tools
        self._tokens = usage.input_tokens + usage.output_tokens
        self.last = Measure(self._tokens, False)
        return self.last

    def forget(self) -> None:
        """The history was rewritten (compaction, /clear): estimate until the next count."""
        self._counted, self._tools, self._tokens = (), (), 0
        self.last = None

    def _covered(self, request: LlmRequest) -> int | None:
        """How many of `request`'s messages the last count covers (None: not a prefix)."""
        counted = self._counted
        if not counted or len(request.messages) < len(counted) or request.tools != self._tools:
            return None
        for ours, theirs in zip(counted, request.messages, strict=False):
            if ours is not theirs and ours != theirs:
                return None
        start = len(counted)
        if start < len(request.messages) and isinstance(request.messages[start], AssistantMessage):
            start += 1  # the reply to the counted request: its output tokens were counted
        return start


@dataclass(eq=False)
class ContextBudget:
    """One session's window, meter and prices; a refusal for length teaches the window."""

    window: Window
    meter: ContextMeter = field(default_factory=ContextMeter)
    model: ModelInfo | None = None  # the catalog's entry: prices
    memory: WindowMemory | None = None
    model_value: str = ""  # "provider/model", the memory's key

    @property
    def bytes_per_token(self) -> float:
        return self.meter.bytes_per_token

    def learn(self, refusal: BaseException, refused_tokens: int) -> Window:
        """The window after a refusal: the one it names, else a tenth less than the
        refused request (by our count); remembered for later sessions."""
        named = learned_window(str(refusal))
        tokens = named or max(1, min(self.window.tokens, int(refused_tokens * 0.9)))
        self.window = Window(tokens, "learned")
        log.info("%s: context window learned from a refusal: %d tokens", self.model_value, tokens)
        if self.memory is not None and self.model_value:
            self.memory.remember(self.model_value, tokens)
        return self.window

    def refused(self, refusal: BaseException, request: LlmRequest) -> Window:
        """The provider refused `request` for its length: learn the window from it, and
        estimate afresh (the history is about to be rewritten)."""
        window = self.learn(refusal, self.meter.measure(request).tokens)
        self.meter.forget()
        return window
