"""A session as a reader sees it: the one place an ACP update is translated.

Theory of operation. Agents stream a session as small updates: text in chunks, a tool
call announced once and then patched by id (`tool_call_update` carries only what
changed), a plan replaced whole, usage and title on the side. Every reader wants the
same folded picture: the terminal renderer, the gateway's OpenAI mapping, its task
stream and web UI. So the client folds each update once, here, and readers take the
result:

* `SessionView.apply(update)` folds one `Update` into `entries` (the conversation in
  order: user and agent messages with consecutive chunks joined, thoughts, tool calls,
  plans, notices) and the session's `title`, `mode`, `commands`, `usage`.
* A tool call is a `ToolCallState` (events.py), merged by id from every update and
  permission request that named it; `tool_summary` and `DiffView` read its diffs,
  output and exit code the same way for everyone (one diff algorithm: difflib's).

Nothing here does I/O or knows about the gateway or the terminal.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from agentao.client.events import TEXT_KINDS, ToolCallState, Update

# Text chunk kinds -> the role of the message they build.
ROLES = {
    "user_message_chunk": "user",
    "agent_message_chunk": "agent",
    "agent_thought_chunk": "thought",
}
SUMMARY_LINE_CHARS = 60  # the first line of a tool's output shown in a one-line summary


@dataclass(frozen=True, slots=True)
class DiffView:
    """One file change a tool call made (`oldText` None: the file was created)."""

    path: str
    old_text: str | None
    new_text: str

    @classmethod
    def of(cls, item: Any) -> DiffView | None:
        """From a `diff` tool-call content item (wire dict); None for anything else."""
        if not isinstance(item, dict) or item.get("type") != "diff":
            return None
        old = item.get("oldText")
        return cls(
            str(item.get("path", "")),
            old if isinstance(old, str) else None,
            str(item.get("newText") or ""),
        )

    @property
    def created(self) -> bool:
        return self.old_text is None

    def lines(self) -> list[str]:
        """The unified diff without its file header (`@@`, `-`, `+`, ` ` lines)."""
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


def diffs(tool: ToolCallState) -> list[DiffView]:
    return [d for d in map(DiffView.of, tool.content) if d is not None]


def output_text(tool: ToolCallState) -> str:
    """The text a tool call returned (its `content` items), joined."""
    parts = []
    for item in tool.content:
        if isinstance(item, dict) and item.get("type") == "content":
            block = item.get("content")
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
    return "".join(parts)


def exit_code(tool: ToolCallState) -> int | None:
    """A shell command's exit code, where the agent reports one (`rawOutput.exitCode`)."""
    raw = tool.raw.get("rawOutput")
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


# ---- the session ---------------------------------------------------------------------


@dataclass(slots=True)
class Message:
    """Consecutive chunks of one kind. Kept as a list: appending to one growing string
    would copy it on every chunk (quadratic over a long answer)."""

    role: str  # "user" | "agent" | "thought"
    chunks: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.chunks)


@dataclass(slots=True)
class ToolCallEntry:
    """A tool call's place in the conversation; its state is `SessionView.tool_calls[id]`."""

    tool_call_id: str


@dataclass(slots=True)
class PlanEntry:
    entries: list[dict[str, Any]]


@dataclass(slots=True)
class NoticeEntry:
    title: str
    description: str = ""


Entry = Message | ToolCallEntry | PlanEntry | NoticeEntry


@dataclass(slots=True)
class SessionView:
    """Everything a session showed so far, folded (see the module docstring)."""

    entries: list[Entry] = field(default_factory=list)
    tool_calls: dict[str, ToolCallState] = field(default_factory=dict)
    plan: list[dict[str, Any]] = field(default_factory=list)
    mode: str | None = None
    title: str | None = None
    commands: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] | None = None  # the latest `usage_update` (used, size, cost)

    def apply(self, update: Update) -> None:
        """Fold one update in (an unknown kind changes nothing)."""
        kind, raw = update.kind, update.raw
        if kind in TEXT_KINDS:
            self._text(ROLES[kind], update.text or "")
        elif update.tool_call is not None:
            self.put_tool_call(update.tool_call)
        elif kind == "plan":
            self.plan = _dicts(raw.get("entries"))
            self.entries.append(PlanEntry(self.plan))
        elif kind == "notice":
            self.entries.append(
                NoticeEntry(str(raw.get("title", "")), str(raw.get("description") or ""))
            )
        else:
            self._side(kind, raw)

    def _text(self, role: str, text: str) -> None:
        last = self.entries[-1] if self.entries else None
        if isinstance(last, Message) and last.role == role:
            last.chunks.append(text)
        elif text:
            self.entries.append(Message(role, [text]))

    def put_tool_call(self, tool: ToolCallState) -> None:
        """A tool call's latest merged state; the first one takes its place in `entries`."""
        if tool.tool_call_id not in self.tool_calls:
            self.entries.append(ToolCallEntry(tool.tool_call_id))
        self.tool_calls[tool.tool_call_id] = tool

    def _side(self, kind: str, raw: dict[str, Any]) -> None:
        if kind == "current_mode_update" and isinstance(raw.get("currentModeId"), str):
            self.mode = raw["currentModeId"]
        elif kind == "session_info_update" and isinstance(raw.get("title"), str):
            self.title = raw["title"]
        elif kind == "available_commands_update":
            self.commands = _dicts(raw.get("availableCommands"))
        elif kind == "usage_update":
            self.usage = {k: v for k, v in raw.items() if k != "sessionUpdate"}

    def prompted(self, blocks: list[Any]) -> None:
        """The user's own prompt (agents do not echo it; a reader shows it all the same)."""
        text = "".join(_block_text(b) for b in blocks)
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
                updates.append({"sessionUpdate": "plan", "entries": entry.entries})
            else:
                notice = {"sessionUpdate": "notice", "severity": "info", "title": entry.title}
                updates.append(
                    {**notice, **({"description": entry.description} if entry.description else {})}
                )
        return updates

    @property
    def text(self) -> str:
        """Every agent message so far, joined."""
        return "".join(e.text for e in self.entries if isinstance(e, Message) and e.role == "agent")


_REPLAY_KINDS = {role: kind for kind, role in ROLES.items()}


def _block_text(block: Any) -> str:
    """A prompt content block as text (a dict or a schema struct): text, or a link."""
    get = block.get if isinstance(block, dict) else lambda k: getattr(block, k, None)
    kind = get("type")
    if kind == "text":
        return str(get("text") or "")
    if kind == "resource_link":
        return f"[{get('name')}]({get('uri')})"
    return f"[{kind}]" if kind else ""


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


__all__ = [
    "DiffView",
    "Entry",
    "Message",
    "NoticeEntry",
    "PlanEntry",
    "SessionView",
    "ToolCallEntry",
    "diffs",
    "exit_code",
    "first_line",
    "output_text",
    "tool_summary",
]
