"""The tool seam: what a tool is, and the two small Protocols it runs against.

A tool never talks to ACP. It reads and writes through a `ToolEnv` (local disk
and processes, or the editor's `fs/*` and `terminal/*` behind the same methods,
implemented in `server/`), and asks the human through an `Interaction`
(`session/request_permission` and `_agentao.cn/ask_user` in `server/`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from agentao.agent.events import (
    ChildUpdate,
    Location,
    PlanEntry,
    TerminalEvent,
    ToolCallStarted,
    ToolKind,
    ToolOutput,
)
from agentao.agent.roots import Roots
from agentao.agent.sandbox import Confinement
from agentao.agent.stoppable import StoppableCalls

PermissionOutcome = Literal["allow", "allow_always", "reject", "cancelled"]
ASK_USER_UNAVAILABLE = "(user unavailable)"


@dataclass(frozen=True, slots=True)
class PermissionReply:
    """How a permission request was answered, and why when the answerer said so."""

    outcome: PermissionOutcome
    reason: str = ""  # e.g. "the client's policy approves only read and search tools"

    @classmethod
    def of(cls, answer: PermissionReply | PermissionOutcome) -> PermissionReply:
        """A bare outcome (what a simple Interaction returns) as a reply without a reason."""
        return answer if isinstance(answer, PermissionReply) else cls(answer)


@dataclass(frozen=True, slots=True)
class CommandResult:
    """A finished shell command. `terminal_id` is set when the client ran it."""

    output: str
    exit_code: int | None
    signal: str | None = None
    truncated: bool = False
    timed_out: bool = False
    terminal_id: str | None = None


class ToolEnv(Protocol):
    """Where file and process I/O happens: locally, or in the client (editor)."""

    async def read_text(self, path: Path, line: int | None = None, limit: int | None = None) -> str:
        """Text from 1-based `line`, at most `limit` lines; FileNotFoundError if absent."""
        ...

    async def write_text(self, path: Path, content: str) -> None: ...

    async def run_command(
        self,
        command: str,
        cwd: Path,
        timeout: float,
        output_limit: int,
        on_start: Callable[[str | None], Awaitable[None]] | None = None,
        confinement: Confinement | None = None,
        on_output: Callable[[bytes], None] | None = None,
    ) -> CommandResult:
        """Run `command` in a shell; `on_start(terminal_id)` fires once it runs. With a
        `confinement` it runs in the sandbox, or not at all (SandboxUnavailable).
        `on_output` sees each piece of output as it is read (where the agent reads it:
        not for a command in the client's terminal)."""
        ...


class Interaction(Protocol):
    """The human on the other side of the session."""

    async def request_permission(
        self, call: ToolCallStarted
    ) -> PermissionReply | PermissionOutcome: ...

    async def ask_user(self, question: str) -> str:
        """The answer, or ASK_USER_UNAVAILABLE when nobody can answer."""
        ...


@dataclass(slots=True)
class ToolContext:
    """Everything a running tool may touch, scoped to one session and one call."""

    cwd: Path
    env: ToolEnv
    interaction: Interaction
    workspace: tuple[Path, ...] = ()
    call_id: str = ""
    # Lets a tool publish live output (`in_progress` with content) while it runs.
    report: Callable[[tuple[ToolOutput, ...]], Awaitable[None]] | None = None
    # Shows a command the tool runs itself as a live terminal (events.TerminalStarted…);
    # None: no one to show it to (the command's output is in the result alone).
    show: Callable[[TerminalEvent | ChildUpdate], None] | None = None
    # The session's stoppable calls and terminals (stoppable.py), for a terminal's command.
    stoppable: StoppableCalls | None = None
    # Per-session state a tool keeps between calls (e.g. todo_write's plan).
    state: dict[str, Any] = field(default_factory=dict)
    # What the permission decision let this call's command reach (None: unconfined).
    confinement: Confinement | None = None
    # The session's pinned roots; a context made without them pins `cwd` and
    # `workspace` on first use and holds them (`pinned_roots`).
    roots: Roots | None = None
    # Waits until everything `report`ed and `show`n so far is out (a child's question
    # must follow the updates it names: agent/subagents.py); None: nothing to wait for.
    flush: Callable[[], Awaitable[None]] | None = None
    # The turn's session and `TurnDeps` (typed loosely: they import this module), for a
    # tool that runs a turn of its own (agent/subagents.py).
    session: Any = None
    deps: Any = None

    def pinned_roots(self) -> Roots:
        """The workspace roots as pinned (never resolved again once held)."""
        if self.roots is None:
            self.roots = Roots.pin(self.cwd, self.workspace)
        return self.roots

    def resolve(self, path: str) -> Path:
        """`path` made absolute against the session cwd (not yet sandbox-checked)."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else self.cwd / p


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool produced: `content` for the editor, `model_text` for the LLM."""

    model_text: str
    content: tuple[ToolOutput, ...] = ()
    is_error: bool = False
    raw_output: Any = None
    # A new plan (todo_write): the turn loop stores it and yields PlanChanged.
    plan: tuple[PlanEntry, ...] | None = None
    stopped: bool = False  # the user stopped the call while it ran (agent/stoppable.py)


class ToolError(Exception):
    """A tool failed in a way the model should be told about (bad args, missing file)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """A permission verdict for one tool call, with the reason the model is told on deny,
    and for a shell command the sandbox it runs in once allowed (None: unconfined)."""

    verdict: Literal["allow", "ask", "deny"]
    reason: str = ""
    confinement: Confinement | None = None


class PermissionGate(Protocol):
    """One per session (agent/permissions.py). The turn loop asks it before every tool call."""

    def decide(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> Decision: ...

    def remember(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> None:
        """The user chose "allow always": allow this tool with this path / command prefix."""
        ...


class Tool(ABC):
    """One tool as the model sees it: a name, a JSON-schema of arguments, a kind."""

    name: str
    kind: ToolKind
    description: str
    parameters: dict[str, Any]
    # True when the user sees this tool's effect as a plan update, not as a tool call
    # (todo_write): the turn loop then yields no ToolCallStarted/Finished for it.
    plan_only: bool = False
    # True when the call can be stopped alone mid-way, the turn going on (a command, a
    # fetch, an MCP call): cancelling its task leaves nothing half-written.
    cancellable: bool = False
    # True when calls to it in one model step may run side by side (agent/parallel_calls.py).
    parallel: bool = False

    def title(self, args: dict[str, Any]) -> str:
        """A human title for the editor: "Read hello.txt", "Run `ls -la`"."""
        return self.name

    def locations(self, args: dict[str, Any], cwd: Path) -> tuple[Location, ...]:
        return ()

    @abstractmethod
    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult: ...

    def schema(self) -> dict[str, Any]:
        """The OpenAI-style function spec offered to the model."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


__all__ = [
    "ASK_USER_UNAVAILABLE",
    "CommandResult",
    "Decision",
    "Interaction",
    "PermissionGate",
    "PermissionOutcome",
    "PermissionReply",
    "Tool",
    "ToolContext",
    "ToolEnv",
    "ToolError",
    "ToolResult",
]
