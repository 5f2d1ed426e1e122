"""Compaction: the history made small enough to go on, before the window is full.

Theory of operation
-------------------
Before each model request the turn measures it (`context.ContextMeter`); past
`threshold` x window it compacts first. A provider that refuses a request for its
length compacts it and retries once; `/compact` compacts on demand.

The context is cut in three:

    old      everything before the recent turns (an earlier compaction's prefix too)
    recent   the last `keep_turns` finished turns
    current  the running turn: the user's request and every round since (the task)

and reduced in steps, stopping at the first that brings it under `target` x window:

1. old tool outputs are shortened (head and tail kept, the middle marked): no model call;
2. old is summarized by the model itself (`prompts/compaction.md`), the summary streamed
   as it is written; the plan is restated verbatim beside it;
3. only while still above the threshold (after a refusal: the target): the recent
   turns' tool outputs are shortened as well, then the current turn's, except the latest.

The result is a `Compaction` record (a prefix, and the index of the first turn kept
verbatim) committed with the turn, so `session/load` in another process rebuilds the
compacted context, never the overflowing one. When the summary request fails, a digest
of the old requests stands in for the summary: a session is never left unable to go on.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agentao.agent.context import estimate_messages, positive_int
from agentao.agent.events import (
    CompactionDelta,
    CompactionFinished,
    CompactionStarted,
    CompactionTrigger,
    Notice,
    PlanEntry,
    TurnEvent,
)
from agentao.agent.providers.base import LlmRequest, TextPiece
from agentao.agent.providers.errors import LlmError
from agentao.agent.providers.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
)
from agentao.agent.session import Compaction, TurnRecord

__all__ = [
    "ACK",
    "SUMMARY_HEADER",
    "Compacted",
    "CompactionJob",
    "CompactionSettings",
    "compact",
    "compaction_prompt",
    "digest",
    "render_transcript",
    "shorten",
    "shrink_outputs",
    "summary_messages",
    "summary_request",
]

log = logging.getLogger(__name__)

PROMPT_FILE = Path(__file__).parent / "prompts" / "compaction.md"
SUMMARY_HEADER = (
    "[agentao: the earlier part of this conversation was compacted to fit the context "
    "window. This is its summary.]"
)
PLAN_HEADER = "[The current plan, verbatim:]"
ACK = "Understood. I will continue from this summary."
StreamFn = Callable[[LlmRequest], AsyncIterator[Any]]


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    """When to compact and what to keep. Each has an environment variable."""

    threshold: float = 0.80  # AGENTAO_COMPACT_THRESHOLD: compact past this share of the window
    target: float = 0.50  # AGENTAO_COMPACT_TARGET: aim to bring the context under this share
    keep_turns: int = 2  # AGENTAO_COMPACT_KEEP_TURNS: finished turns kept verbatim
    tool_output_chars: int = 2_000  # AGENTAO_COMPACT_TOOL_OUTPUT_CHARS: an old output's cap
    summary_words: int = 400  # the summary's length, as the prompt asks for it
    transcript_share: float = 0.5  # the summary request's transcript: at most this much window

    _ENV = {
        "threshold": "AGENTAO_COMPACT_THRESHOLD",
        "target": "AGENTAO_COMPACT_TARGET",
        "keep_turns": "AGENTAO_COMPACT_KEEP_TURNS",
        "tool_output_chars": "AGENTAO_COMPACT_TOOL_OUTPUT_CHARS",
    }

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> CompactionSettings:
        values: dict[str, Any] = {}
        for name, var in cls._ENV.items():
            raw = env.get(var, "").strip()
            if not raw:
                continue
            if name in ("threshold", "target"):
                values[name] = _share(raw, var)
            elif name == "keep_turns":
                if not raw.isdigit():
                    raise ValueError(f"{var}={raw!r} is not a whole number >= 0")
                values[name] = int(raw)
            else:
                values[name] = positive_int(raw, var)
        settings = cls(**values)
        if settings.target >= settings.threshold:
            raise ValueError(
                f"AGENTAO_COMPACT_TARGET ({settings.target}) must be below "
                f"AGENTAO_COMPACT_THRESHOLD ({settings.threshold})"
            )
        return settings


def _share(raw: str, var: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{var}={raw!r} is not a number") from None
    if not 0.0 < value <= 1.0:
        raise ValueError(f"{var}={raw!r} must be a share of the window, in (0, 1]")
    return value


@dataclass(frozen=True, slots=True)
class CompactionJob:
    """What one compaction works on."""

    model: str
    turns: Sequence[TurnRecord]  # the session's finished turns
    prefix: tuple[Message, ...]  # the context's current prefix, and the first turn after it
    keep_from: int
    current: tuple[Message, ...]  # the running turn's messages (empty for /compact)
    plan: tuple[PlanEntry, ...]
    overhead: int  # tokens of the system prompt and the tool specs
    window: int
    tokens_before: int
    trigger: CompactionTrigger
    bytes_per_token: float = 3.0


@dataclass(frozen=True, slots=True)
class Compacted:
    """The outcome: the record to commit, and the current turn's messages after it."""

    record: Compaction
    current: tuple[Message, ...]


async def compact(
    job: CompactionJob, stream: StreamFn, settings: CompactionSettings
) -> AsyncIterator[TurnEvent | Compacted]:
    """Compact `job` (see the module docstring): events, then one `Compacted`; nothing at
    all when there is nothing to reduce. `stream` is the turn's LLM stream, with retries."""
    s, bpt = settings, job.bytes_per_token
    n = len(job.turns)
    recent_from = max(job.keep_from, n - s.keep_turns)
    old = (*job.prefix, *_messages(job.turns[job.keep_from : recent_from]))
    recent = tuple(_messages(job.turns[recent_from:]))
    cid = f"compaction_{uuid.uuid4().hex[:12]}"

    def size(*parts: Sequence[Message]) -> int:
        return job.overhead + sum(estimate_messages(p, bpt) for p in parts)

    prefix = shrink_outputs(old, s.tool_output_chars)
    keep_from, current, summary = recent_from, job.current, ""
    done: list[str] = []
    started = False
    folded = recent_from - job.keep_from  # finished turns that become old now
    foldable = folded > 0 or not _is_summary(job.prefix)  # a bare summary is not redone
    summarize = (
        bool(old)
        and foldable
        and (job.trigger == "command" or size(prefix, recent, current) > s.target * job.window)
    )
    if summarize:
        yield CompactionStarted(cid, job.trigger, job.tokens_before)
        started = True
        async for item in _summarize(cid, job, old, stream, s):
            if isinstance(item, str):
                summary = item
            else:
                yield item
        prefix = summary_messages(summary, job.plan)
        done.append(f"{_count(folded)} summarized" if folded else "the earlier summary renewed")
    elif prefix != old:
        done.append("older tool outputs shortened")
    limit = (s.target if job.trigger == "refusal" else s.threshold) * job.window
    if recent and size(prefix, recent, current) > limit:
        prefix, keep_from = (*prefix, *shrink_outputs(recent, s.tool_output_chars)), n
        done.append("the recent turns' tool outputs shortened")
    kept = recent if keep_from == recent_from else ()
    if size(prefix, kept, current) > limit:
        shrunk = shrink_outputs(current, s.tool_output_chars, keep_last=1)
        if shrunk != current:
            current = shrunk
            done.append("this turn's earlier tool outputs shortened")
    if not done:
        return
    after = size(prefix, _messages(job.turns[keep_from:]), current)
    if not started:
        yield CompactionStarted(cid, job.trigger, job.tokens_before)
    detail = f"{_k(job.tokens_before)} -> {_k(after)} tokens: " + "; ".join(done)
    yield CompactionFinished(cid, "completed", job.tokens_before, after, summary, detail)
    record = Compaction(cid, keep_from, tuple(prefix), summary, job.tokens_before, after)
    yield Compacted(record, tuple(current))


def _messages(turns: Sequence[TurnRecord]) -> list[Message]:
    return [m for turn in turns for m in turn.messages]


def _count(turns: int) -> str:
    return "1 earlier turn" if turns == 1 else f"{turns} earlier turns"


def _is_summary(prefix: Sequence[Message]) -> bool:
    """Whether `prefix` is a summary alone (nothing more to fold into it)."""
    return (
        len(prefix) == 2
        and isinstance(prefix[0], UserMessage)
        and prefix[0].text.startswith(SUMMARY_HEADER)
        and prefix[1] == AssistantMessage(ACK)
    )


def _k(tokens: int) -> str:
    return f"{tokens / 1000:.1f}k" if tokens >= 1000 else str(tokens)


async def _summarize(
    cid: str, job: CompactionJob, old: Sequence[Message], stream: StreamFn, s: CompactionSettings
) -> AsyncIterator[TurnEvent | str]:
    """The model's summary of `old`, streamed as deltas; last, the whole text."""
    request = summary_request(job.model, old, job.window, s, job.bytes_per_token)
    pieces: list[str] = []
    try:
        async with aclosing(stream(request)) as events:
            async for item in events:
                if isinstance(item, TextPiece):
                    pieces.append(item.text)
                    yield CompactionDelta(cid, item.text)
                elif isinstance(item, Notice):
                    yield item
    except LlmError as exc:
        log.warning("compaction %s: the summary request failed (%s)", cid, exc.reason)
        yield digest(old, f"the summary request failed: {exc.reason}")
        return
    text = "".join(pieces).strip()
    yield text or digest(old, "the model wrote an empty summary")


# --- the pieces, each tested on its own -----------------------------------------------


def shorten(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters: its head and tail, the middle marked."""
    if len(text) <= limit:
        return text
    head, tail = limit * 2 // 3, limit // 3
    cut = len(text) - head - tail
    marker = f"\n[... {cut} characters shortened by compaction ...]\n"
    return text[:head] + marker + text[len(text) - tail :]


def shrink_outputs(
    messages: Sequence[Message], limit: int, keep_last: int = 0
) -> tuple[Message, ...]:
    """`messages` with each tool output longer than `limit` shortened, except the last
    `keep_last` tool outputs. Unchanged messages are the same objects."""
    results = [i for i, m in enumerate(messages) if isinstance(m, ToolResultMessage)]
    spared = set(results[len(results) - keep_last :]) if keep_last else set()
    out: list[Message] = []
    for i, m in enumerate(messages):
        if isinstance(m, ToolResultMessage) and i not in spared and len(m.text) > limit:
            m = replace(m, text=shorten(m.text, limit))
        out.append(m)
    return tuple(out)


def compaction_prompt(settings: CompactionSettings) -> str:
    return PROMPT_FILE.read_text(encoding="utf-8").replace(
        "{summary_words}", str(settings.summary_words)
    )


def summary_request(
    model: str,
    old: Sequence[Message],
    window: int,
    settings: CompactionSettings,
    bytes_per_token: float = 3.0,
) -> LlmRequest:
    """The request that asks the model for the summary: no tools, the prompt, and the
    transcript of `old`, capped to `transcript_share` of the window."""
    budget = int(settings.transcript_share * window * bytes_per_token)
    transcript = render_transcript(old, budget, min(settings.tool_output_chars, 1_000))
    user = (
        f"<transcript>\n{transcript}\n</transcript>\n\n"
        "Write the summary of this transcript now, as instructed."
    )
    messages = (SystemMessage(compaction_prompt(settings)), UserMessage(user))
    return LlmRequest(model, messages)


def render_transcript(messages: Sequence[Message], budget_chars: int, output_chars: int) -> str:
    """`messages` as plain text for the summarizer; tool outputs cut to `output_chars`.
    Over `budget_chars`, the oldest entries go first (an earlier summary stays)."""
    entries = [e for m in messages if (e := _entry(m, output_chars))]
    keep_first = bool(entries) and entries[0].startswith("EARLIER SUMMARY")
    head = entries[:1] if keep_first else []
    body = entries[1:] if keep_first else entries
    total = sum(len(e) + 2 for e in (*head, *body))
    dropped = 0
    while body and total > budget_chars:
        total -= len(body.pop(0)) + 2
        dropped += 1
    if dropped:
        body.insert(0, f"[... {dropped} earlier entries left out to fit the summary request ...]")
    return "\n\n".join((*head, *body))


def _entry(m: Message, output_chars: int) -> str:
    match m:
        case UserMessage(text) if text.startswith(SUMMARY_HEADER):
            return "EARLIER SUMMARY:\n" + text[len(SUMMARY_HEADER) :].strip()
        case UserMessage(text, images):
            return "USER: " + text + (f" [{len(images)} image(s)]" if images else "")
        case AssistantMessage(text, calls) if text != ACK or calls:
            lines = [f"AGENT: {text}"] if text else []
            for call in calls:
                args = shorten(json.dumps(call.arguments, ensure_ascii=False), 300)
                lines.append(f"AGENT CALLED {call.name}({args})")
            return "\n".join(lines)
        case ToolResultMessage(_, name, text, is_error):
            label = f"RESULT of {name}" + (" (error)" if is_error else "")
            return f"{label}: {shorten(text, output_chars)}"
    return ""


def summary_messages(summary: str, plan: Sequence[PlanEntry]) -> tuple[Message, ...]:
    """The prefix that stands for the old history: the summary (and the plan, verbatim)
    as a user message, acknowledged, so roles keep alternating."""
    text = f"{SUMMARY_HEADER}\n\n{summary}"
    if plan:
        entries = "\n".join(f"- [{e.status}] {e.content}" for e in plan)
        text += f"\n\n{PLAN_HEADER}\n{entries}"
    return (UserMessage(text), AssistantMessage(ACK))


def digest(old: Sequence[Message], reason: str) -> str:
    """A summary written without the model: the earlier summary and the user's requests."""
    lines = [f"(No summary could be written: {reason}. The earlier requests were:)"]
    for m in old:
        if isinstance(m, UserMessage) and m.text.startswith(SUMMARY_HEADER):
            lines.append("Earlier summary: " + shorten(m.text[len(SUMMARY_HEADER) :].strip(), 2000))
        elif isinstance(m, UserMessage):
            lines.append("- " + shorten(m.text, 300))
    return "\n".join(lines[:1] + lines[-40:] if len(lines) > 41 else lines)
