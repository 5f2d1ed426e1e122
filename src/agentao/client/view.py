"""A session as a reader sees it: the one place an ACP update is folded.

Theory of operation. Agents stream a session as small updates: text in chunks, a tool
call announced once and then patched by id (`tool_call_update` carries only what
changed), a plan replaced whole, usage and title on the side. Every reader wants the
same folded picture: the terminal renderer, the gateway's OpenAI mapping, its task
stream and web UI. So the client folds each update once, here, and readers take the
result. The fold reads only typed values (the schema structs the connection decoded
once, at the edge); the update's bytes are never looked at (but for which fields a
`subagent_update` names: omitted and null differ there):

* `SessionView.fold(session_id, kind, value, wire)` merges a tool call by id, folds the
  update into `entries` (the conversation in order: user and agent messages with
  consecutive chunks joined, thoughts, tool calls, plans, notices) and the session's
  `title`, `mode`, `commands`, `usage`, and returns the `Update` event for the stream.
* A tool call is a `ToolCallState` (events.py) holding a `schema.ToolCall` merged by id
  from every update and permission request that named it (`merge_tool_call`);
  `tool_summary` and `DiffView` read its diffs, output and exit code the same way for
  everyone (one diff algorithm: difflib's), and content becomes text through
  `content.content_text` only.
* Over ACP v2 the client translates each update to the v1 one it means first (`v2.py`), so
  this fold is the same for both versions; chunks with another `messageId` start another
  message, and `state` follows v2's `state_update` (`running`, `requires_action`, `idle`).
* An ACP v2 agent's own terminals (`terminal_update`, `terminal_output_chunk`: v1 has no
  such kinds, so they arrive as v2 values) fold into `terminals` by id (`TerminalView`):
  the command, its output (the last `TERMINAL_OUTPUT_LIMIT` bytes), whether
  `terminal/cancel` may stop it, its exit status; a tool call names its terminal in its
  content (`tool_item`'s `terminals`), and a terminal's updates come as the `Update` of
  that call (`tool_call` set: its live output is `view.terminal_output(tool)`).
* `items()` is the view as keyed, JSON-ready items (`{"id", "kind", ...}`): what the
  gateway sends the web UI, which renders them by id and folds nothing.

Nothing here does I/O or knows about the gateway or the terminal.
"""

from __future__ import annotations

import base64
import difflib
import logging
from dataclasses import dataclass, field
from typing import Any

import msgspec

from agentao.client.content import block_type, content_text, prompt_text, tool_output_text
from agentao.client.events import TEXT_KINDS, ToolCallState, Update
from agentao.protocol import schema
from agentao.protocol.decode import decode_lenient, raw_of, to_builtins

log = logging.getLogger("agentao.client")

# Text chunk kinds -> the role of the message they build.
ROLES = {
    "user_message_chunk": "user",
    "agent_message_chunk": "agent",
    "agent_thought_chunk": "thought",
}
TOOL_KINDS = frozenset({"tool_call", "tool_call_update"})
TERMINAL_KINDS = frozenset({"terminal_update", "terminal_output_chunk"})  # v2 only
SUMMARY_LINE_CHARS = 60  # the first line of a tool's output shown in a one-line summary
# In a diff's `_meta`: the hunk lines (`@@`, `-`, `+`, ` `) of the patch an ACP v2 agent sent
# (v2 diffs carry a git patch, not whole texts; client/v2.py); shown as they are.
PATCH_META = "agentao.cn/patch"
TERMINAL_OUTPUT_LIMIT = 1024 * 1024  # bytes of a terminal's output kept (the last ones)
# The fields a later update of a tool call may change (all but its id).
_PATCHABLE = tuple(
    f.name for f in msgspec.structs.fields(schema.ToolCall) if f.name != "tool_call_id"
)


@dataclass(frozen=True, slots=True)
class DiffView:
    """One file change a tool call made (`oldText` None: the file was created)."""

    path: str
    old_text: str | None
    new_text: str
    patch: tuple[str, ...] | None = None  # the agent's own hunk lines (v2), else computed

    @classmethod
    def of(cls, item: Any) -> DiffView | None:
        """From a typed `diff` tool-call content item; None for anything else."""
        if block_type(item) != "diff":
            return None
        patch = (item.meta or {}).get(PATCH_META)
        lines = tuple(p for p in patch if isinstance(p, str)) if isinstance(patch, list) else None
        return cls(item.path, item.old_text, item.new_text, lines)

    @property
    def created(self) -> bool:
        return self.old_text is None

    def lines(self) -> list[str]:
        """The unified diff without its file header (`@@`, `-`, `+`, ` ` lines)."""
        if self.patch is not None:
            return list(self.patch)
        old, new = (self.old_text or "").splitlines(), self.new_text.splitlines()
        return list(difflib.unified_diff(old, new, lineterm="", n=1))[2:]

    def counts(self) -> tuple[int, int]:
        """(lines added, lines removed)."""
        lines = self.lines()
        return (
            sum(1 for line in lines if line.startswith("+")),
            sum(1 for line in lines if line.startswith("-")),
        )

    def summary(self) -> str:
        """`created a/b.txt (+3 -0)` / `edited a/b.txt (+1 -1)`."""
        added, removed = self.counts()
        return f"{'created' if self.created else 'edited'} {self.path} (+{added} -{removed})"

    def item(self) -> dict[str, Any]:
        """JSON for a reader that draws it: the path, and the diff's lines."""
        return {"path": self.path, "created": self.created, "lines": self.lines()}


def diffs(tool: ToolCallState) -> list[DiffView]:
    return [d for d in map(DiffView.of, tool.content) if d is not None]


def output_text(tool: ToolCallState) -> str:
    """The text a tool call returned (its `content` items), joined."""
    return tool_output_text(tool.content)


def exit_code(tool: ToolCallState) -> int | None:
    """A shell command's exit code, where the agent reports one (`rawOutput.exitCode`)."""
    raw = tool.call.raw_output
    code = raw.get("exitCode") if isinstance(raw, dict) else None
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def first_line(text: str, limit: int = SUMMARY_LINE_CHARS) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def tool_summary(tool: ToolCallState) -> list[str]:
    """What a finished tool call did, in short parts: exit code, each diff, first line."""
    parts = [f"exit {code}"] if (code := exit_code(tool)) is not None else []
    parts += [d.summary() for d in diffs(tool)]
    if tool.status in ("completed", "failed") and (line := first_line(output_text(tool))):
        parts.append(line)
    return parts


def merge_tool_call(old: ToolCallState | None, value: Any) -> ToolCallState:
    """A tool call after `value` (a typed `ToolCall` or `ToolCallUpdate`): every field it
    sent replaces the one known so far; a field it left out (None) stays."""
    changes = {name: v for name in _PATCHABLE if (v := getattr(value, name, None)) is not None}
    if old is None:
        changes.setdefault("title", "")
        call = schema.ToolCall(tool_call_id=value.tool_call_id, **changes)
    else:
        call = msgspec.structs.replace(old.call, **changes) if changes else old.call
    return ToolCallState(value.tool_call_id, call)


def tool_call_of(wire: Any) -> Any:
    """A permission request's `toolCall` (wire JSON) as a typed `ToolCallUpdate`, decoded
    once; None when it names no tool call."""
    try:
        return decode_lenient(schema.ToolCallUpdate, wire)
    except (msgspec.ValidationError, TypeError):
        log.warning("a permission request's toolCall does not decode: ignored")
        return None


# ---- the session ---------------------------------------------------------------------


@dataclass(slots=True)
class Message:
    """Consecutive chunks of one kind. Kept as a list: appending to one growing string
    would copy it on every chunk (quadratic over a long answer)."""

    role: str  # "user" | "agent" | "thought"
    chunks: list[str] = field(default_factory=list)
    message_id: str | None = None  # the agent's `messageId`, where it sends one

    def continues(self, role: str, message_id: str | None) -> bool:
        """Whether a chunk of `role` / `message_id` belongs to this message: same role,
        and not another message by id (an id on only one side does not split)."""
        if role != self.role:
            return False
        return message_id is None or self.message_id is None or message_id == self.message_id

    @property
    def text(self) -> str:
        return "".join(self.chunks)


@dataclass(slots=True)
class ToolCallEntry:
    """A tool call's place in the conversation; its state is `SessionView.tool_calls[id]`."""

    tool_call_id: str


@dataclass(slots=True)
class PlanEntry:
    entries: list[schema.PlanEntry]


@dataclass(slots=True)
class NoticeEntry:
    title: str
    description: str = ""


@dataclass(slots=True)
class ChildEntry:
    """A child session the agent announced (`subagent_update`, client/children.py): its
    place in the conversation, and its title and state as they now stand. Its own
    updates are folded in its own session's view."""

    session_id: str
    title: str | None = None
    description: str | None = None  # the child's role (codex-acp: its task, no title)
    state: str | None = None  # running, requires_action, idle (or unknown/unset)
    stop_reason: str | None = None


Entry = Message | ToolCallEntry | PlanEntry | NoticeEntry | ChildEntry


@dataclass(slots=True)
class TerminalView:
    """An agent-owned terminal (ACP v2) as its updates left it; `exited` once its
    `exitStatus` came (with a code, a signal, or neither known)."""

    terminal_id: str
    command: str | None = None
    cwd: str | None = None
    output: bytearray = field(default_factory=bytearray)
    exited: bool = False
    exit_code: int | None = None
    signal: str | None = None
    cancellable: bool = False  # `capabilities.cancel`: terminal/cancel may stop it now
    chunks: int = 0  # `terminal_output_chunk`s received
    received: int = 0  # bytes they carried (the output keeps only the last ones)
    last_chunk: int = 0  # bytes the latest one carried

    def upsert(self, value: Any) -> None:
        """A `terminal_update`: patch semantics (omitted: unchanged; output replaced). The
        typed value cannot tell a `null` from an omitted field: neither clears here."""
        self.command = value.command if value.command is not None else self.command
        self.cwd = value.cwd if value.cwd is not None else self.cwd
        if value.output is not None:
            self.output = bytearray()
            self.append(_b64(value.output.data))
        if value.capabilities is not None or value.exit_status is not None:
            self.cancellable = getattr(value.capabilities, "cancel", None) is not None
        if value.exit_status is not None:
            self.exited = True
            self.exit_code = value.exit_status.exit_code
            self.signal = value.exit_status.signal

    def append(self, data: bytes) -> None:
        self.output += data
        if len(self.output) > TERMINAL_OUTPUT_LIMIT:
            del self.output[: len(self.output) - TERMINAL_OUTPUT_LIMIT]

    @property
    def text(self) -> str:
        return self.output.decode("utf-8", "replace")


def _b64(data: str) -> bytes:
    """A terminal's base64 bytes; undecodable data (a faulty agent) is shown as nothing."""
    try:
        return base64.b64decode(data, validate=True)
    except (ValueError, TypeError):
        log.info("terminal output that is not base64: ignored")
        return b""


@dataclass(slots=True)
class SessionView:
    """Everything a session showed so far, folded (see the module docstring)."""

    entries: list[Entry] = field(default_factory=list)
    tool_calls: dict[str, ToolCallState] = field(default_factory=dict)
    plan: list[schema.PlanEntry] = field(default_factory=list)
    mode: str | None = None
    title: str | None = None
    commands: list[schema.AvailableCommand] = field(default_factory=list)
    usage: schema.UsageUpdate | None = None  # the latest `usage_update` (used, size, cost)
    state: str | None = None  # v2's latest `state_update`: running, requires_action, idle
    terminals: dict[str, TerminalView] = field(default_factory=dict)  # v2: agent-owned
    children: dict[str, ChildEntry] = field(default_factory=dict)  # by child session id
    terminal_calls: dict[str, str] = field(default_factory=dict)  # terminal id -> its call

    def fold(self, session_id: str, kind: str, value: Any, wire: Any) -> Update:
        """Fold one decoded update in (`value` None: unknown or undecodable, changes
        nothing) and return it as the stream's event; `wire`, the update as received
        (its bytes, or JSON values made bytes here), only rides along. A terminal's
        update comes with the tool call that names the terminal, if one does."""
        tool_call = None
        if kind in TOOL_KINDS and value is not None:
            tool_call = self.upsert_tool_call(value, announced=kind == "tool_call")
        elif kind in TERMINAL_KINDS and value is not None:
            tool_call = self.tool_calls.get(self.terminal_calls.get(value.terminal_id, ""))
        if type(wire) is not msgspec.Raw:  # made by the client itself, or repaired
            wire = raw_of(wire)
        update = Update(session_id, kind, value, wire, tool_call)
        self.apply(update)
        return update

    def apply(self, update: Update) -> None:
        """Fold one update whose tool call, if any, is merged already (`fold`)."""
        kind, value = update.kind, update.value
        if value is None or kind in TOOL_KINDS:
            return
        if kind in TEXT_KINDS:
            message_id = getattr(value, "message_id", None)
            content = value.content
            # content_text's text case, inline: most updates are text chunks
            text = content.text if type(content) is _TEXT_BLOCK else content_text(content)
            self._text(ROLES[kind], text, message_id)
        elif kind == "plan":
            self.plan = list(value.entries)
            self.entries.append(PlanEntry(self.plan))
        elif kind == "notice":
            self.entries.append(NoticeEntry(value.title, value.description or ""))
        elif kind == "subagent_update":
            self._child(value, update.raw)
        else:
            self._side(kind, value)

    def _child(self, value: Any, raw: dict[str, Any]) -> None:
        """A child announced or patched: omitted fields keep their values, null clears."""
        child = self.children.get(value.session_id)
        if child is None:
            child = self.children[value.session_id] = ChildEntry(value.session_id)
            self.entries.append(child)
        if "title" in raw:
            child.title = value.title
        if "description" in raw:
            child.description = value.description
        if "state" in raw:
            state = value.state
            child.state = _tag(state)
            child.stop_reason = getattr(state, "stop_reason", None)

    def _text(self, role: str, text: str, message_id: str | None = None) -> None:
        last = self.entries[-1] if self.entries else None
        if isinstance(last, Message) and last.continues(role, message_id):
            last.chunks.append(text)
            last.message_id = last.message_id or message_id
        elif text:
            self.entries.append(Message(role, [text], message_id))

    def upsert_tool_call(self, value: Any, *, announced: bool) -> ToolCallState:
        """Merge a typed `ToolCall`/`ToolCallUpdate` by id; the first sight of an id takes
        its place in `entries`."""
        old = self.tool_calls.get(value.tool_call_id)
        if old is None and not announced:
            log.info("tool call %s updated before it was announced; adding it", value.tool_call_id)
        elif old is not None and announced:
            log.info("tool call %s announced twice; merging", value.tool_call_id)
        state = merge_tool_call(old, value)
        for block in value.content or ():
            if block_type(block) == "terminal":
                self.terminal_calls.setdefault(block.terminal_id, state.tool_call_id)
        if old is None:
            self.entries.append(ToolCallEntry(state.tool_call_id))
        self.tool_calls[state.tool_call_id] = state
        return state

    def _side(self, kind: str, value: Any) -> None:
        if kind == "current_mode_update":
            self.mode = value.current_mode_id
        elif kind == "session_info_update" and isinstance(value.title, str):
            self.title = value.title
        elif kind == "available_commands_update":
            self.commands = list(value.available_commands)
        elif kind == "usage_update":
            self.usage = value
        elif kind == "state_update":  # v2 only
            self.state = getattr(value, "state", None)
        elif kind == "terminal_update":  # v2 only
            self._terminal(value.terminal_id).upsert(value)
        elif kind == "terminal_output_chunk":  # v2 only
            terminal = self._terminal(value.terminal_id)
            data = _b64(value.data)
            terminal.chunks += 1
            terminal.received += len(data)
            terminal.last_chunk = len(data)
            terminal.append(data)

    def terminal_output(self, tool: ToolCallState) -> str:
        """What the terminals a tool call names have printed so far (its live output)."""
        ids = [c.terminal_id for c in tool.content if block_type(c) == "terminal"]
        return "".join(self.terminals[i].text for i in ids if i in self.terminals)

    def _terminal(self, terminal_id: str) -> TerminalView:
        terminal = self.terminals.get(terminal_id)
        if terminal is None:
            terminal = self.terminals[terminal_id] = TerminalView(terminal_id)
        return terminal

    def prompted(self, blocks: list[Any]) -> None:
        """The user's own prompt (agents do not echo it; a reader shows it all the same)."""
        text = prompt_text(blocks)
        if text:
            self.entries.append(Message("user", [text]))

    def replay(self) -> list[dict[str, Any]]:
        """The entries as ACP updates, for a reader that arrives late (a remote client
        attaching to a live session): messages whole, each tool call as it now stands."""
        updates: list[dict[str, Any]] = []
        for entry in self.entries:
            if isinstance(entry, Message):
                kind = _REPLAY_KINDS[entry.role]
                updates.append(
                    {"sessionUpdate": kind, "content": {"type": "text", "text": entry.text}}
                )
            elif isinstance(entry, ToolCallEntry):
                tool = self.tool_calls[entry.tool_call_id]
                updates.append({**tool.raw, "sessionUpdate": "tool_call"})
            elif isinstance(entry, PlanEntry):
                updates.append({"sessionUpdate": "plan", "entries": to_builtins(entry.entries)})
            elif isinstance(entry, ChildEntry):
                updates.append({"sessionUpdate": "subagent_update", **_child_fields(entry)})
            else:
                notice = {"sessionUpdate": "notice", "severity": "info", "title": entry.title}
                updates.append(
                    {**notice, **({"description": entry.description} if entry.description else {})}
                )
        return updates

    def items(self) -> list[dict[str, Any]]:
        """Every entry as a keyed item (`entry_item`), in order."""
        return [self.entry_item(i) for i in range(len(self.entries))]

    def entry_item(self, index: int) -> dict[str, Any]:
        """Entry `index` as JSON a reader draws without folding: id `e<index>` (stable: the
        entries only grow), its kind, and what it shows. A tool call's diffs come as
        lines, its output as text; a plan as its entries."""
        entry, key = self.entries[index], f"e{index}"
        if isinstance(entry, Message):
            return {"id": key, "kind": "message", "role": entry.role, "text": entry.text}
        if isinstance(entry, ToolCallEntry):
            return {"id": key, **tool_item(self.tool_calls[entry.tool_call_id])}
        if isinstance(entry, PlanEntry):
            return {"id": key, "kind": "plan", "entries": to_builtins(entry.entries)}
        if isinstance(entry, ChildEntry):
            return {"id": key, "kind": "subagent", **_child_fields(entry)}
        return {"id": key, "kind": "notice", "title": entry.title, "text": entry.description}

    def side_items(self) -> list[dict[str, Any]]:
        """The session-wide items: the latest plan and usage (ids `plan`, `usage`)."""
        usage = to_builtins(self.usage) if self.usage is not None else None
        return [
            {"id": "plan", "kind": "plan", "entries": to_builtins(self.plan)},
            {"id": "usage", "kind": "usage", "usage": usage},
        ]

    @property
    def text(self) -> str:
        """Every agent message so far, joined."""
        return "".join(e.text for e in self.entries if isinstance(e, Message) and e.role == "agent")


def _tag(state: Any) -> str | None:
    """A state snapshot's `state` tag (a struct variant's tag, or None when unset)."""
    config = getattr(type(state), "__struct_config__", None)
    return getattr(config, "tag", None) if state is not None else None


def _child_fields(child: ChildEntry) -> dict[str, Any]:
    state: dict[str, Any] | None = None
    if child.state is not None:
        state = {"state": child.state}
        if child.stop_reason is not None:
            state["stopReason"] = child.stop_reason
    return {
        "sessionId": child.session_id,
        "title": child.title,
        "description": child.description,
        "state": state,
    }


def tool_item(tool: ToolCallState) -> dict[str, Any]:
    """A tool call as a reader shows it: title, kind, status, diffs, output, command."""
    raw_input = tool.call.raw_input
    return {
        "kind": "tool_call",
        "toolCallId": tool.tool_call_id,
        "title": tool.title,
        "toolKind": tool.kind,
        "status": tool.status,
        "diffs": [d.item() for d in diffs(tool)],
        "output": output_text(tool),
        "terminals": [c.terminal_id for c in tool.content if block_type(c) == "terminal"],
        "input": raw_input if isinstance(raw_input, dict) else {},
        "exitCode": exit_code(tool),
    }


_REPLAY_KINDS = {role: kind for kind, role in ROLES.items()}
_TEXT_BLOCK = schema.TextContentBlock


__all__ = [
    "PATCH_META",
    "TERMINAL_KINDS",
    "TERMINAL_OUTPUT_LIMIT",
    "ChildEntry",
    "DiffView",
    "Entry",
    "Message",
    "NoticeEntry",
    "PlanEntry",
    "SessionView",
    "TerminalView",
    "ToolCallEntry",
    "diffs",
    "exit_code",
    "first_line",
    "merge_tool_call",
    "output_text",
    "tool_call_of",
    "tool_item",
    "tool_summary",
]
