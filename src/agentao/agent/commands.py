"""Slash commands: a prompt that starts with one runs it, instead of going to the model.

    /compact        compact the context now (agent/compaction.py)
    /clear          a fresh context in the same session; the history stays for replay
    /init           read the project and propose an AGENTS.md (written under the usual
                    permission: it is an ordinary turn with a prompt of ours)
    /model <id>     switch the model: "provider/model", or a model of the current provider
    /mode <id>      switch the mode: read-only, workspace-write, full-access, plan

The runtime runs /compact, /clear and /init; /model and /mode change what the server
owns (the provider, the permission engine), so the server runs those. A prompt that
starts with "/" but names no command (a path, say) goes to the model as it is.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

from agentao.agent.events import PlanChanged, TextDelta, TurnEnded, TurnEvent
from agentao.agent.session import AgentSession, Compaction, TurnRecord

__all__ = [
    "COMMANDS",
    "Command",
    "Invocation",
    "clear_context",
    "init_prompt",
    "parse_command",
    "say",
]

INIT_PROMPT_FILE = Path(__file__).parent / "prompts" / "init.md"
CLEARED = "Context cleared: the model starts afresh; the history above stays for reference."


@dataclass(frozen=True, slots=True)
class Command:
    name: str  # without the slash
    description: str
    hint: str | None = None  # what to type after it, when it takes an argument


COMMANDS: tuple[Command, ...] = (
    Command("compact", "Summarize the older conversation now, to free the context window"),
    Command("clear", "Start a fresh context in this session (the history stays visible)"),
    Command("init", "Read the project and propose an AGENTS.md with its instructions"),
    Command("model", "Switch the model", "provider/model, or a model id"),
    Command("mode", "Switch the mode", "read-only, workspace-write, full-access or plan"),
)
_BY_NAME = {c.name: c for c in COMMANDS}


@dataclass(frozen=True, slots=True)
class Invocation:
    command: Command
    argument: str  # the text after the name, stripped

    @property
    def name(self) -> str:
        return self.command.name


def parse_command(text: str) -> Invocation | None:
    """The command `text` invokes ("/model gpt-4o"), or None for an ordinary prompt."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    name, _, argument = stripped[1:].partition(" ")
    command = _BY_NAME.get(name.strip().lower())
    return Invocation(command, argument.strip()) if command is not None else None


def clear_context(session: AgentSession, shown: str) -> list[TurnEvent]:
    """`/clear`: commit a turn after which the model's context is empty (and the plan
    with it); the turns before stay in the session, for replay. Its events, TurnEnded last."""
    events: list[TurnEvent] = [TextDelta(CLEARED), PlanChanged(())]
    fresh = Compaction(f"clear_{uuid.uuid4().hex[:12]}", keep_from=len(session.turns) + 1)
    session.commit_turn(TurnRecord(shown, (), tuple(events), "end_turn", compaction=fresh), ())
    return [*events, TurnEnded("end_turn")]


def say(session: AgentSession, shown: str, text: str) -> list[TurnEvent]:
    """Commit a turn in which the agent only says `text` (a command's answer); the model
    never sees it. Its events, TurnEnded last."""
    events: list[TurnEvent] = [TextDelta(text)]
    session.commit_turn(TurnRecord(shown, (), tuple(events), "end_turn"))
    return [*events, TurnEnded("end_turn")]


def init_prompt() -> str:
    """What the model is asked for `/init`."""
    return INIT_PROMPT_FILE.read_text(encoding="utf-8")
