"""One session's runtime state, free of ACP, and its JSON-safe form for the store.

A session changes in whole turns: `run_turn` stages a turn's messages and events and
hands them over in one `commit_turn(record)`, however the turn ended (done, cancelled, or
failed on an LLM error). The store persists after each commit, so it only ever sees whole
turns. `replay()` gives back what the user saw, for `session/load`.

What the model sees (`messages`) is not always every turn's messages: a turn may carry a
`Compaction` (agent/compaction.py), committed with it, which says "from here on the
context is `prefix` followed by the messages of the turns from `keep_from` on". The
last compaction wins; the turns themselves keep everything, for replay.

For a store that keeps turns as rows: `commit_turn` appends `record.to_dict()` as the
turn's data with `session.state_dict()` as the session state, in one transaction.

Serialized form: dataclasses become objects tagged with `"type"` (their class name), tuples
become lists; `raw_input`, `raw_output` and tool `arguments` are the tool's own data and are
kept as they are. Fields added later get defaults, so older files still load.
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

from agentao.agent import events as ev
from agentao.agent.config import LlmConfig
from agentao.agent.events import PlanEntry, StopReason, TurnEvent
from agentao.agent.providers import messages as msg
from agentao.agent.providers.messages import Message
from agentao.agent.roots import RootReplaced, Roots

__all__ = ["ROOT_KEY", "AgentSession", "Compaction", "TurnRecord", "decode", "encode"]

FORMAT_VERSION = 1
DEFAULT_MODE = "workspace-write"
ROOT_KEY = "root"  # meta: where the cwd resolved when the session was first opened


@dataclass(frozen=True, slots=True)
class Compaction:
    """The context from a turn on: `prefix` (a summary, or older messages with their tool
    outputs shortened), then the messages of the turns from index `keep_from` on."""

    id: str
    keep_from: int
    prefix: tuple[Message, ...] = ()
    summary: str = ""
    tokens_before: int = 0
    tokens_after: int = 0


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One finished turn. `stop_reason` is None when it failed; `error` then says why."""

    prompt: str
    messages: tuple[Message, ...]  # what the model saw this turn, from the UserMessage on
    events: tuple[TurnEvent, ...]  # what the user saw: deltas merged, progress/notices dropped
    stop_reason: StopReason | None = None
    error: str | None = None
    compaction: Compaction | None = None  # the context was compacted during this turn
    cost: float = 0.0  # what its model requests cost, where the catalog has prices

    def to_dict(self) -> dict[str, Any]:
        return encode(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TurnRecord:
        record = decode(data)
        if not isinstance(record, cls):
            raise ValueError("not a turn record")
        return record


@dataclass(slots=True, eq=False)
class AgentSession:
    id: str
    cwd: Path
    provider_id: str  # "OPENAI": credentials are resolved again, never stored
    model: str
    additional_dirs: tuple[Path, ...] = ()
    mode_id: str = DEFAULT_MODE
    plan: tuple[PlanEntry, ...] = ()
    turns: list[TurnRecord] = field(default_factory=list)
    # Per-session tool state (ToolContext.state); persisted, so keep it JSON-safe.
    tool_state: dict[str, Any] = field(default_factory=dict)
    # The server's own JSON-safe data (MCP fingerprint, title, …), persisted as is.
    meta: dict[str, Any] = field(default_factory=dict)
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    messages: list[Message] = field(default_factory=list, init=False)  # the model's context
    # The workspace pinned when the session opened (`pin_roots`); never stored.
    roots: Roots | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.messages = self._context()

    def context_base(self) -> tuple[tuple[Message, ...], int]:
        """(prefix, keep_from) of the last compaction; ((), 0) when there was none."""
        for turn in reversed(self.turns):
            if turn.compaction is not None:
                return turn.compaction.prefix, turn.compaction.keep_from
        return (), 0

    def _context(self) -> list[Message]:
        prefix, keep_from = self.context_base()
        return [*prefix, *(m for turn in self.turns[keep_from:] for m in turn.messages)]

    @property
    def cost(self) -> float:
        """The session's cumulative cost (the catalog's currency)."""
        return sum(turn.cost for turn in self.turns)

    @property
    def title(self) -> str | None:
        """The first line of the first prompt that is not a command, for lists and tabs."""
        for turn in self.turns:
            text = turn.prompt.strip()
            if text and not text.startswith("/"):
                return text.splitlines()[0]
        return None

    @classmethod
    def new(cls, cwd: Path, llm: LlmConfig, additional_dirs: tuple[Path, ...] = ()) -> AgentSession:
        return cls(str(uuid.uuid4()), cwd, llm.provider_id, llm.model, additional_dirs)

    @property
    def workspace(self) -> tuple[Path, ...]:
        return (self.cwd, *self.additional_dirs)

    def pin_roots(self) -> Roots:
        """The roots resolved and pinned once (the first call: when the session opens),
        then held for every later decision (RootError if a root cannot be opened). A
        stored session's cwd must resolve where it did when the session was created:
        a load after a swap is refused, not followed (RootReplaced)."""
        if self.roots is None:
            roots = Roots.pin(self.cwd, self.additional_dirs)
            first = self.meta.setdefault(ROOT_KEY, str(roots.cwd))
            if first != str(roots.cwd):
                raise RootReplaced(self.cwd, f"it resolves to {roots.cwd} now, not {first}")
            self.roots = roots
        return self.roots

    @property
    def model_value(self) -> str:
        return f"{self.provider_id.lower()}/{self.model}"

    def commit_turn(self, record: TurnRecord, plan: tuple[PlanEntry, ...] | None = None) -> None:
        """The turn boundary: history, events and plan change together."""
        self.turns.append(record)
        if record.compaction is not None:
            self.messages = self._context()
        else:
            self.messages.extend(record.messages)
        if plan is not None:
            self.plan = plan
        self.updated_at = time.time()

    def drop_turns_from(self, index: int, plan: tuple[PlanEntry, ...] = ()) -> None:
        """Forget the turns from `index` on (a rewind): the model's context is rebuilt from
        the turns kept, and the plan is `plan` (the one they left)."""
        del self.turns[index:]
        self.messages = self._context()
        self.plan = plan

    def replay(self) -> Iterator[TurnEvent]:
        """Every past turn as the user saw it: UserText, then its events (no TurnEnded)."""
        for turn in self.turns:
            yield ev.UserText(turn.prompt)
            yield from (e for e in turn.events if not isinstance(e, ev.TurnEnded))

    def state_dict(self) -> dict[str, Any]:
        """The state that changes between and across turns (not the id, paths or turns):
        what a store keeps beside the turn records."""
        return {
            "version": FORMAT_VERSION,
            "provider_id": self.provider_id,
            "model": self.model,
            "mode_id": self.mode_id,
            "plan": encode(self.plan),
            "tool_state": _json_safe(self.tool_state),
            "meta": _json_safe(self.meta),
        }

    def to_dict(self, turns: bool = True) -> dict[str, Any]:
        """Everything, JSON-safe; `turns` holds `TurnRecord.to_dict()`s (left out with
        `turns=False`: a store that keeps turns as rows encodes each once, at its commit)."""
        data = {
            "id": self.id,
            "cwd": str(self.cwd),
            "additional_dirs": [str(p) for p in self.additional_dirs],
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            **self.state_dict(),
        }
        if turns:
            data["turns"] = [t.to_dict() for t in self.turns]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentSession:
        """The inverse of `to_dict`; also takes a store's pieces put together:
        {"id", "cwd", "additional_dirs", **state_dict(), "turns": [turn dicts]}."""
        if data.get("version", FORMAT_VERSION) > FORMAT_VERSION:
            raise ValueError(f"session format {data['version']} is newer than this agentao")
        return cls(
            id=data["id"],
            cwd=Path(data["cwd"]),
            provider_id=data["provider_id"],
            model=data["model"],
            additional_dirs=tuple(Path(p) for p in data.get("additional_dirs", ())),
            mode_id=data.get("mode_id", DEFAULT_MODE),
            plan=decode(data.get("plan", [])),
            turns=[TurnRecord.from_dict(t) for t in data.get("turns", [])],
            tool_state=dict(data.get("tool_state", {})),
            meta=dict(data.get("meta", {})),
            created_at=data.get("created_at", 0.0),
            updated_at=data.get("updated_at", 0.0),
        )


# --- the codec -------------------------------------------------------------------------

_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        *(getattr(ev, name) for name in ev.__all__),
        *(getattr(msg, name) for name in msg.__all__),
        TurnRecord,
        Compaction,
    )
    if isinstance(cls, type) and is_dataclass(cls)
}
_OPAQUE = {"raw_input", "raw_output", "arguments"}  # the tool's data: stored as is


def encode(obj: Any) -> Any:
    """JSON-safe builtins for events, messages, turn records (tagged with "type")."""
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    names = _field_names(type(obj))
    if names is not None:
        out: dict[str, Any] = {"type": type(obj).__name__}
        for name in names:
            value = getattr(obj, name)
            out[name] = _json_safe(value) if name in _OPAQUE else encode(value)
        return out
    if isinstance(obj, list | tuple):
        return [encode(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): encode(v) for k, v in obj.items()}
    return _json_safe(obj)


@functools.cache
def _field_names(cls: type) -> tuple[str, ...] | None:
    """A dataclass's field names (None: `cls` is not one), asked once per class: every
    turn is encoded when it commits, and `fields()` for each of its records and events
    was most of the encoding's cost."""
    return tuple(f.name for f in fields(cls)) if is_dataclass(cls) else None


def decode(data: Any) -> Any:
    """The inverse of `encode`: tagged objects become their dataclass, lists tuples."""
    if isinstance(data, list):
        return tuple(decode(x) for x in data)
    if isinstance(data, dict) and "type" in data:
        cls = _TYPES.get(data["type"])
        if cls is None:
            raise ValueError(f"unknown record type {data['type']!r}")
        known = {f.name for f in fields(cls)}
        return cls(
            **{
                k: (v if k in _OPAQUE else decode(v))
                for k, v in data.items()
                if k in known  # fields we no longer know are dropped
            }
        )
    return data


def _json_safe(value: Any) -> Any:
    """`value` as JSON builtins; anything else becomes its string (never a failed save)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    names = _field_names(type(value))
    if names is not None:
        return {name: _json_safe(getattr(value, name)) for name in names}
    return str(value)
