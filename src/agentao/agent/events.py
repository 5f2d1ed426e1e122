"""What a turn yields: typed events, with no knowledge of ACP.

`agent/turn.py` yields these; `server/` maps them to `session/update`s and
`gateway/` (through the client) to OpenAI chunks. They are plain frozen
dataclasses so they can be stored, replayed and compared in tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

ToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
ToolStatus = Literal["pending", "in_progress", "completed", "failed", "cancelled"]
StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]
PlanStatus = Literal["pending", "in_progress", "completed"]
PlanPriority = Literal["high", "medium", "low"]


@dataclass(frozen=True, slots=True)
class Location:
    """A file a tool call touches, for the editor to follow."""

    path: str
    line: int | None = None


@dataclass(frozen=True, slots=True)
class TextOutput:
    text: str


@dataclass(frozen=True, slots=True)
class DiffOutput:
    """An edit: `old_text` is None for a file the edit created."""

    path: str
    old_text: str | None
    new_text: str


@dataclass(frozen=True, slots=True)
class TerminalOutput:
    """A terminal the client owns (`terminal/create`), embedded in the tool call."""

    terminal_id: str


ToolOutput = TextOutput | DiffOutput | TerminalOutput


@dataclass(frozen=True, slots=True)
class UserText:
    """The user's words: a prompt when replaying history, or a steering message where it
    reached the running turn (turn.py)."""

    text: str


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ThoughtDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    call_id: str
    tool_name: str
    title: str
    kind: ToolKind
    raw_input: dict[str, Any]
    locations: tuple[Location, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolCallProgress:
    """A running tool's live state: `in_progress`, with output so far (replaces earlier).
    `cancellable`: the bare "running now" of a tool the user may stop alone."""

    call_id: str
    content: tuple[ToolOutput, ...] = ()
    title: str | None = None
    cancellable: bool = False


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    """The call's end; "cancelled" when the user stopped it alone (v1 shows "failed")."""

    call_id: str
    status: Literal["completed", "failed", "cancelled"]
    content: tuple[ToolOutput, ...] = ()
    raw_output: Any = None


@dataclass(frozen=True, slots=True)
class PlanEntry:
    content: str
    status: PlanStatus = "pending"
    priority: PlanPriority = "medium"


@dataclass(frozen=True, slots=True)
class PlanChanged:
    entries: tuple[PlanEntry, ...]


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the user should see while waiting (an LLM retry, a slow tool, an MCP failure)."""

    text: str


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    thought_tokens: int | None = None
    cached_read_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class ContextUsage:
    """How full the context window is after a model reply (or a compaction).
    `estimated`: no provider count stands behind `used` (agent/context.py).
    `cost`: the session's cumulative cost, when the catalog has prices."""

    used: int
    size: int
    estimated: bool = False
    cost: float | None = None
    currency: str = "USD"


CompactionTrigger = Literal["threshold", "refusal", "command"]
CompactionStatus = Literal["completed", "failed", "cancelled"]


@dataclass(frozen=True, slots=True)
class CompactionStarted:
    """The history is being compacted (agent/compaction.py)."""

    compaction_id: str
    trigger: CompactionTrigger
    tokens_before: int


@dataclass(frozen=True, slots=True)
class CompactionDelta:
    """A piece of the summary, as the model writes it."""

    compaction_id: str
    text: str


@dataclass(frozen=True, slots=True)
class CompactionFinished:
    """The compaction is over; `summary` is the whole summary ("" when only old tool
    outputs were shortened), `detail` one line on what was done."""

    compaction_id: str
    status: CompactionStatus
    tokens_before: int = 0
    tokens_after: int = 0
    summary: str = ""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class TerminalStarted:
    """A command the agent runs itself, shown live as a terminal of its own (ACP v2's
    agent-owned terminal) in `call_id`'s tool call; nothing stores it (live only)."""

    call_id: str
    terminal_id: str
    command: str
    cwd: str
    cancellable: bool = True  # `StoppableCalls.stop_terminal` may stop it


@dataclass(frozen=True, slots=True)
class TerminalChunk:
    """Bytes the terminal's command wrote (stdout and stderr merged), as they came."""

    terminal_id: str
    data: bytes


@dataclass(frozen=True, slots=True)
class TerminalExited:
    """The terminal's command is over. `snapshot`: the whole output as kept (head and
    tail), sent when the live chunks stopped at their limit, so a viewer ends whole."""

    terminal_id: str
    exit_code: int | None
    signal: str | None = None
    snapshot: bytes | None = None


TerminalEvent = TerminalStarted | TerminalChunk | TerminalExited


SubagentState = Literal["running", "requires_action", "idle"]


@dataclass(frozen=True, slots=True)
class ChildUpdate:
    """News of a child agent working for tool call `call_id` (agent/subagents.py): its
    state (`running` announces it; `idle` ends it, with `stop_reason`), or one `event`
    of its own turn. `child_id` is the child's own session id, `title` its task's name."""

    call_id: str
    child_id: str
    title: str
    event: TurnEvent | None = None
    state: SubagentState | None = None
    stop_reason: StopReason | None = None


@dataclass(frozen=True, slots=True)
class TurnEnded:
    stop_reason: StopReason
    usage: Usage | None = field(default=None)


TurnEvent = (
    UserText
    | TextDelta
    | ThoughtDelta
    | ToolCallStarted
    | ToolCallProgress
    | ToolCallFinished
    | PlanChanged
    | Notice
    | ContextUsage
    | CompactionStarted
    | CompactionDelta
    | CompactionFinished
    | TerminalStarted
    | TerminalChunk
    | TerminalExited
    | ChildUpdate
    | TurnEnded
)

__all__ = [
    "ChildUpdate",
    "CompactionDelta",
    "CompactionFinished",
    "CompactionStarted",
    "CompactionStatus",
    "CompactionTrigger",
    "ContextUsage",
    "DiffOutput",
    "Location",
    "Notice",
    "PlanChanged",
    "PlanEntry",
    "PlanPriority",
    "PlanStatus",
    "StopReason",
    "SubagentState",
    "TerminalChunk",
    "TerminalEvent",
    "TerminalExited",
    "TerminalOutput",
    "TerminalStarted",
    "TextDelta",
    "TextOutput",
    "ThoughtDelta",
    "ToolCallFinished",
    "ToolCallProgress",
    "ToolCallStarted",
    "ToolKind",
    "ToolOutput",
    "ToolStatus",
    "TurnEnded",
    "TurnEvent",
    "Usage",
    "UserText",
]
