"""ACP session updates -> what an OpenAI client may be told (design.md §5).

Theory of operation. ACP tools run *inside* the agent. An OpenAI `tool_calls` /
`function_call` tells the HTTP client to run a tool itself, so agent-run tools
are never sent that way: they become reasoning text ("Running: Write hello.txt",
"Done: Write hello.txt"), like thoughts and the plan. The raw update is always
at hand for the opt-in `x_acp` extension. `TurnMapper.feed()` turns one turn's
updates, one at a time, into `Delta`s. It folds nothing itself: a tool call comes
merged by id with everything said of it before (`Update.tool_call`, from the
client's session model), and its diffs and output are read the way every reader
reads them (`agentao.client.view`), content becomes text the one way
(`agentao.client.content.content_text`); the mapper only remembers which status of
each call it already told.

Stop reasons and usage are mapped by the small functions at the bottom, one
table per API.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from agentao.client import ToolCallState, Update
from agentao.client.content import content_text
from agentao.client.view import diffs, first_line, output_text
from agentao.protocol.schema import TextContentBlock as _TEXT_BLOCK

READ_KINDS = frozenset({"read", "search", "think"})
_PLAN_MARK = {"completed": "x", "in_progress": "~"}
_TOOL_KINDS = frozenset({"tool_call", "tool_call_update"})
FAILURE_CHARS = 200  # of a failed tool's first output line, told in the reasoning


class Delta(msgspec.Struct, frozen=True, gc=False):
    """What one ACP update adds to the answer: message text and/or reasoning text.
    (A Struct: one per streamed update, made in C.)"""

    text: str = ""
    reasoning: str = ""

    def __bool__(self) -> bool:
        return bool(self.text or self.reasoning)


@dataclass(slots=True)
class TurnMapper:
    """One turn's mapping state. `inline=True` writes reasoning into the text with the
    seed's `[Thinking]` / `[Tool: ...]` prefixes, for clients that cannot show reasoning."""

    inline: bool = False
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    told: dict[str, str] = field(default_factory=dict)  # tool call id -> status told
    _last: str = ""  # the kind of the last update that said something (inline mode)

    def feed(self, update: Update) -> Delta:
        """Map one update of the client's stream."""
        kind, value = update.kind, update.value
        if kind == "agent_message_chunk" and not self.inline and value is not None:
            content = value.content  # most updates: the short way, content_text's text inline
            text = content.text if type(content) is _TEXT_BLOCK else content_text(content)
            if text:
                self.text.append(text)
            return Delta(text=text)
        delta = self._map(kind, value, update.tool_call)
        if self.inline:
            delta = self._inline(kind, delta)
        if delta.text:
            self.text.append(delta.text)
        if delta.reasoning:
            self.reasoning.append(delta.reasoning)
        return delta

    def _inline(self, kind: str, delta: Delta) -> Delta:
        # One "[Thinking]" per run of thoughts, and a blank line before the answer resumes.
        text = delta.reasoning
        if kind == "agent_thought_chunk" and self._last != kind:
            text = "[Thinking] " + text
        if delta.text and self._last not in ("", "agent_message_chunk"):
            text += "\n\n"
        if delta:
            self._last = kind
        return Delta(text=text + delta.text)

    @property
    def full_text(self) -> str:
        return "".join(self.text)

    @property
    def full_reasoning(self) -> str:
        return "".join(self.reasoning)

    # ---- one branch per update kind -------------------------------------------------

    def _map(self, kind: str, update: Any, tool: ToolCallState | None) -> Delta:
        if kind in _TOOL_KINDS:
            return Delta(reasoning=self._tool(tool)) if tool is not None else Delta()
        if update is None:  # an unknown kind, or one the client could not decode
            return Delta()
        if kind == "agent_message_chunk":
            return Delta(text=content_text(update.content))
        if kind == "agent_thought_chunk":
            return Delta(reasoning=content_text(update.content))
        if kind == "plan":
            return Delta(reasoning=plan_text(update.entries))
        if kind == "notice":
            detail = f": {update.description}" if getattr(update, "description", None) else ""
            return Delta(reasoning=f"\nNotice ({update.severity}): {update.title}{detail}\n")
        return Delta()

    def _tool(self, tool: ToolCallState) -> str:
        """ "Running: …" the first time a call shows, "Done/Failed: …" when it ends."""
        told = self.told.get(tool.tool_call_id)
        title = tool.title or "tool"
        lines = self._started(title, tool.kind) if told is None else ""
        status = tool.status
        self.told[tool.tool_call_id] = status
        if status == told or status not in ("completed", "failed"):
            return lines
        if status == "failed":
            reason = first_line(output_text(tool), FAILURE_CHARS)
            return lines + f"Failed: {title}{': ' + reason if reason else ''}\n"
        summary = "".join(f"  {diff.summary()}\n" for diff in diffs(tool))
        return lines + f"Done: {title}\n{summary}"

    def _started(self, title: str, kind: str) -> str:
        if self.inline:
            return f"\n[Tool: {title}] ({kind})\n"
        return f"\nRunning: {title} ({kind})\n"


# ---- content helpers -----------------------------------------------------------------


def plan_text(entries: Any) -> str:
    lines = [f"  [{_PLAN_MARK.get(_str(e.status, ''), ' ')}] {e.content}" for e in entries]
    return "\nPlan:\n" + "\n".join(lines) + "\n"


def _str(value: Any, default: str) -> str:
    if value is None:
        return default
    return str(getattr(value, "value", value))


# ---- stop reasons and usage ------------------------------------------------------------

CHAT_FINISH = {
    "end_turn": "stop",
    "max_tokens": "length",
    "max_turn_requests": "length",
    "refusal": "content_filter",
}


def chat_finish_reason(stop_reason: str) -> str | None:
    """Chat Completions `finish_reason`; None for `cancelled` (no OpenAI equivalent)."""
    return CHAT_FINISH.get(stop_reason, "stop" if stop_reason != "cancelled" else None)


def response_status(stop_reason: str) -> tuple[str, str | None]:
    """Responses API (status, incomplete_details.reason)."""
    if stop_reason == "max_tokens":
        return "incomplete", "max_output_tokens"
    if stop_reason == "max_turn_requests":
        return "incomplete", "max_turn_requests"
    if stop_reason == "cancelled":
        return "cancelled", None
    return "completed", None


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Token counts of one turn; `estimated` when the agent reported none."""

    input_tokens: int
    output_tokens: int
    reasoning_tokens: int = 0
    cached_tokens: int = 0
    estimated: bool = False
    cost_usd: float | None = None  # priced by `[prices]` (prices.py); None: not priced

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def chat(self) -> dict[str, Any]:
        usage: dict[str, Any] = {
            "prompt_tokens": self.input_tokens,
            "completion_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "prompt_tokens_details": {"cached_tokens": self.cached_tokens},
            "completion_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
        }
        return self._marked(usage)

    def responses(self) -> dict[str, Any]:
        usage: dict[str, Any] = {
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": self.cached_tokens},
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
            "total_tokens": self.total_tokens,
        }
        return self._marked(usage)

    def _marked(self, usage: dict[str, Any]) -> dict[str, Any]:
        """`usage` with our extensions: an estimate said to be one, and the turn's cost."""
        if self.estimated:
            usage["x_estimated"] = True
        if self.cost_usd is not None:
            usage["x_cost_usd"] = self.cost_usd
        return usage


def usage_from_agent(usage: Any) -> TokenUsage | None:
    """ACP `PromptResponse.usage` (unstable schema), typed or raw; None when absent."""
    if usage is None:
        return None
    get = usage.get if isinstance(usage, dict) else lambda k, d=None: getattr(usage, k, d)
    inp = get("inputTokens", None) if isinstance(usage, dict) else get("input_tokens")
    out = get("outputTokens", None) if isinstance(usage, dict) else get("output_tokens")
    if not isinstance(inp, int) or not isinstance(out, int):
        return None
    if isinstance(usage, dict):
        thought, cached = usage.get("thoughtTokens"), usage.get("cachedReadTokens")
    else:
        thought, cached = get("thought_tokens"), get("cached_read_tokens")
    return TokenUsage(inp, out, thought or 0, cached or 0)


class Said(Protocol):
    """What an agent said in a turn: a `TurnMapper`, or what a reader folded (budgets.py)."""

    @property
    def full_text(self) -> str: ...
    @property
    def full_reasoning(self) -> str: ...


def estimate_usage(prompt_chars: int, mapper: Said) -> TokenUsage:
    """About four characters a token: an estimate, and flagged as one."""
    out = len(mapper.full_text)
    reasoning = len(mapper.full_reasoning)
    return TokenUsage(
        input_tokens=max(1, prompt_chars // 4),
        output_tokens=(out + reasoning + 3) // 4,
        reasoning_tokens=(reasoning + 3) // 4,
        estimated=True,
    )


__all__ = [
    "READ_KINDS",
    "Delta",
    "Said",
    "TokenUsage",
    "TurnMapper",
    "chat_finish_reason",
    "estimate_usage",
    "plan_text",
    "response_status",
    "usage_from_agent",
]
