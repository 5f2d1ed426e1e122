"""Showing a turn: plain text for pipes (`ConsoleView`), JSON lines for scripts (`JsonView`).

ConsoleView: agent text is written as it arrives; thoughts are dimmed; each
tool call is one status line (title, kind, status, result, diff summary)
that is rewritten in place while it is the last thing on screen; a finished
one keeps what it did below it (`tool_details`): a read its path and line
count, an edit its diff, a command its output (cut at `OUTPUT_LINES` with
"… N more lines"). A command an ACP v2 agent runs in its own terminal shows its output
as it comes instead (`LiveOutput`: whole lines under its tool line, the first
`OUTPUT_LINES` of them, then "… more output"), and not again when it ends; a plan is a checklist; permission answers get their own
line (with the reason); the turn's token usage closes it. A person at a
terminal gets `live.TerminalView`, which renders markdown and a spinner on top
of this. `replayed` shows a resumed session's history, each old prompt
labelled `you>` before its answer, and a rule between it and the new turn.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import sys
from typing import IO, Any

from agentao.client.events import Event, PermissionDecision, ToolCallState, TurnEnd, Update
from agentao.client.view import diffs, exit_code, first_line, output_text, tool_summary
from agentao.protocol.decode import to_builtins

DIFF_LINES = 20  # lines of each edit's diff shown under its tool line (0: summary only)
OUTPUT_LINES = 10  # lines of a command's output shown under its tool line
PARTIAL_LINE_BYTES = 4096  # of a live output line with no newline yet, kept before it is shown
REPLAY_RULE = "── earlier in this session ↑ · new turn ↓ ──"
# C0 and C1 control characters but tab and newline: an agent's text shows them, never obeys
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
STATUS_MARK = {"pending": "…", "in_progress": "⋯", "completed": "✓", "failed": "✗"}
PLAN_BOX = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}
DIFF_STYLES = {"+": "green", "-": "red", "@": "cyan"}  # a diff line's style by its first char
_FINAL = frozenset({"completed", "failed", "cancelled"})  # a tool call that has ended


class ConsoleView:
    def __init__(
        self, console: Any = None, *, diff_lines: int = DIFF_LINES, output_lines: int = OUTPUT_LINES
    ) -> None:
        from rich.console import Console

        self.console = console or Console(highlight=False, soft_wrap=True)
        self.diff_lines = diff_lines
        self.output_lines = output_lines
        self._live_tool: str | None = None  # tool call whose status line is the last line
        self._mid_line = False  # the cursor is not at the start of a line
        self._stream: str | None = None  # the chunk kind being written on the current line
        self._children: dict[str, str] = {}  # child session id -> its title (subagents)
        self._live_output: dict[str, LiveOutput] = {}  # tool call id -> its terminal's lines
        self._depth: dict[str, int] = {}  # child session id -> 1 for a child, 2 for its child

    # ---- entry points ---------------------------------------------------------------

    def event(self, event: Event) -> None:
        if isinstance(event, Update):
            self._update(event)
        elif isinstance(event, PermissionDecision):
            self._permission(event)
        elif isinstance(event, TurnEnd):
            self._line(f"[dim]— {event.stop_reason}{' (forced)' if event.forced else ''}[/]")

    def turn_started(self) -> None:
        """The prompt is sent (the terminal view starts its spinner here)."""

    def pause(self) -> None:
        """A question is asked at the terminal (the terminal view stops its spinner)."""
        self._end_line()

    def resume(self) -> None:
        """The question is answered."""

    def end_note(self, end: TurnEnd, context: Any) -> None:
        """The turn's token usage, and the context meter (a `schema.UsageUpdate`) where
        the agent reports one."""
        line = usage_line(end.usage, context)
        if line:
            self.info(line)

    def info(self, text: str) -> None:

        self._line(f"[dim]{shown(text)}[/]")

    def started(self, client: Any, session: Any) -> None:
        info = client.agent_info
        name = f"{getattr(info, 'name', '?')} {getattr(info, 'version', '')}".strip()
        self.info(f"{name} · session {session.id} · {session.cwd}")

    def error(self, text: str) -> None:

        self._line(f"[bold red]error:[/] {shown(text)}", stderr=True)

    def replayed(self, events: list[Event]) -> None:
        """History replayed by `session/load` (or a resume), shown compactly: each old
        prompt labelled as the user's before its answer, then a rule before the new turn."""
        prompt = ""  # a prompt may come in several chunks: one labelled line for them all
        for event in events:
            if isinstance(event, Update) and event.kind == "user_message_chunk":
                prompt += event.text or ""
                continue
            if prompt:
                self._line(f"[bold cyan]you>[/] {shown(prompt.rstrip())}")
                prompt = ""
            self.event(event)
        if prompt:
            self._line(f"[bold cyan]you>[/] {shown(prompt.rstrip())}")
        if any(isinstance(e, Update) and e.kind == "user_message_chunk" for e in events):
            self._line(f"[dim]{REPLAY_RULE}[/]")
        else:
            self._end_line()

    def local_answer(self, lines: list[str]) -> None:
        """What a local command (`/help`, `/model`) answered."""
        for line in lines:
            self.console.print(printable(line), markup=False, emoji=False)

    # ---- updates --------------------------------------------------------------------

    def is_child(self, event: Event) -> bool:
        """An update or question of a child session (a subagent), shown indented."""
        session_id = event.request.session_id if isinstance(event, PermissionDecision) else None
        session_id = event.session_id if isinstance(event, Update) else session_id
        return session_id in self._children

    def _update(self, update: Update) -> None:
        kind = update.kind
        if update.session_id in self._children:
            self._child_update(update)
        elif kind == "subagent_update" and update.value is not None:
            self._subagent(update.value, update.raw, update.session_id)
        elif kind == "agent_message_chunk" and update.text is not None:
            self._write(update.text, kind)
        elif kind == "agent_thought_chunk" and update.text is not None:
            self._write(update.text, kind, style="dim italic")
        elif kind in ("tool_call", "tool_call_update") and update.tool_call is not None:
            self._tool(update.tool_call)
        elif kind == "terminal_output_chunk" and update.tool_call and update.value is not None:
            self._output(update.tool_call.tool_call_id, update.value.data)
        elif kind == "plan":
            self._plan(update.value.entries if update.value is not None else [])
        elif kind == "current_mode_update" and update.value is not None:
            self._line(f"[dim]mode: {update.value.current_mode_id}[/]")

    def _subagent(self, value: Any, raw: dict[str, Any], parent: str) -> None:
        """A child announced (its title), and its end: one line each, under the tool call
        that runs it, indented one step more than `parent` (a child's child deeper); its
        steps come between (`_child_update`)."""
        child = value.session_id
        if child not in self._children:
            self._children[child] = child_name(value)
            self._depth[child] = self._depth.get(parent, 0) + 1
            head = f"{self._indent(child)}[bold magenta]↳ subagent[/]"
            self._line(f"{head} {shown(self._children[child])}")
        if (stop := child_end(raw)) is not None:
            name = shown(self._children[child])
            self._line(f"{self._indent(child)}[magenta]↳[/] {name} [dim]{shown(stop)}[/]")

    def _indent(self, child: str) -> str:
        return "  " * self._depth.get(child, 1)

    def _child_update(self, update: Update) -> None:
        """A child's step, indented: its tool calls as they are announced and end (its
        words reach the parent as the tool call's result)."""
        tool = update.tool_call
        if tool is not None and (update.kind == "tool_call" or tool.status in _FINAL):
            self._line(f"{self._indent(update.session_id)}[magenta]│[/] {tool_line(tool)}")
        elif update.kind == "subagent_update" and update.value is not None:
            self._subagent(update.value, update.raw, update.session_id)  # a grandchild

    def _write(self, text: str, stream: str, style: str | None = None) -> None:
        if self._live_tool is not None or self._stream != stream:
            self._end_line()  # a thought and the answer never share a line
            text = text.lstrip("\n")  # a paragraph break right after a block is already there
            if not text:
                return
        text = printable(text)
        self.console.print(text, style=style, end="", markup=False, emoji=False, soft_wrap=True)
        self._mid_line = not text.endswith("\n")
        self._stream = stream

    def _tool(self, tool: ToolCallState) -> None:
        text = tool_line(tool)
        if self._live_tool == tool.tool_call_id and self.console.is_terminal:
            self.console.file.write("\r\x1b[2K")  # rewrite the status line in place
            self.console.print(text, end="")
        else:
            self._end_line()
            self.console.print(text, end="")
        self._live_tool, self._mid_line, self._stream = tool.tool_call_id, True, None
        live = self._live_output.get(tool.tool_call_id)
        if live is not None and tool.status in _FINAL:  # its output was shown as it came
            self._shown_lines(live.end())
        output_lines = self.output_lines if live is None else 0
        details = tool_details(tool, self.diff_lines, output_lines)
        if details:
            self._end_line()
            for line in details:
                self.console.print(line)

    def _output(self, call_id: str, data: str) -> None:
        """A chunk of a running command's terminal: its whole lines, below its tool line."""
        live = self._live_output.setdefault(call_id, LiveOutput(self.output_lines))
        self._shown_lines(live.feed(terminal_bytes(data)))

    def _shown_lines(self, lines: list[str]) -> None:
        if lines:
            self._end_line()
            for line in lines:
                self.console.print(f"    [dim]{shown(line)}[/]")

    def _plan(self, entries: Any) -> None:

        lines = ["[bold]Plan[/]"]
        for entry in entries:
            box = PLAN_BOX.get(entry.status, "[ ]")
            lines.append(f"  {shown(box)} {shown(entry.content)}")
        self._line("\n".join(lines))

    def _permission(self, decision: PermissionDecision) -> None:

        request = decision.request
        chosen = next((o for o in request.options if o.option_id == decision.option_id), None)
        if decision.cancelled_by_turn or chosen is None:
            verdict = "[yellow]cancelled[/]"
        elif decision.approved:
            verdict = f"[green]{shown(chosen.name or chosen.kind)}[/]"
        else:
            verdict = f"[red]{shown(chosen.name or chosen.kind)}[/]"
        why = f" [dim]({shown(decision.reason)})[/]" if decision.reason else ""
        child = self._children.get(request.session_id)
        indent = self._indent(request.session_id)
        who = f"{indent}[magenta]│[/] subagent {shown(child)}: " if child is not None else ""
        self._line(
            f"{who}🔒 permission: {shown(request.title)} [dim]({shown(request.kind)})[/]"
            f" → {verdict}{why}"
        )

    # ---- lines ----------------------------------------------------------------------

    def _line(self, markup: str, *, stderr: bool = False) -> None:
        self._end_line()
        if stderr:
            from rich.console import Console

            Console(stderr=True, highlight=False, soft_wrap=True).print(markup)
        else:
            self.console.print(markup)

    def _end_line(self) -> None:
        if self._mid_line:
            self.console.print()
        self._mid_line = False
        self._live_tool = None
        self._stream = None


class LiveOutput:
    """A running command's output as whole lines to show: the first `limit` of them, then
    "… more output" once (the command's end shows the rest in its status: its exit)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.shown = 0
        self.partial = b""  # a line not ended yet
        self.cut = False

    def feed(self, data: bytes) -> list[str]:
        *whole, self.partial = (self.partial + data).split(b"\n")
        if len(self.partial) > PARTIAL_LINE_BYTES:  # no newline coming: cut, not kept
            whole, self.partial = [*whole, self.partial[:PARTIAL_LINE_BYTES]], b""
        return self._lines(whole)

    def end(self) -> list[str]:
        """The last line, if it had no newline."""
        partial, self.partial = self.partial, b""
        return self._lines([partial] if partial else [])

    def _lines(self, lines: list[bytes]) -> list[str]:
        room = max(self.limit - self.shown, 0)
        out = [line.decode("utf-8", "replace") for line in lines[:room]]
        self.shown += len(out)
        if len(lines) > room and not self.cut:
            self.cut = True
            out.append("… more output")
        return out


def terminal_bytes(data: str) -> bytes:
    """A terminal chunk's base64 bytes."""
    try:
        return base64.b64decode(data, validate=True)
    except (ValueError, binascii.Error):
        return b""  # not base64: a faulty agent's, shown as nothing


def child_name(value: Any) -> str:
    """A child session's name for a reader: its title, else its description's first line
    (codex-acp's children have no title), else its id (`subagent_update`'s fields)."""
    return value.title or first_line(value.description or "") or value.session_id


def child_end(raw: dict[str, Any]) -> str | None:
    """The stop reason of a `subagent_update` (wire JSON) that says the child is idle."""
    state = raw.get("state")
    if not isinstance(state, dict) or state.get("state") != "idle":
        return None
    stop = state.get("stopReason")
    return stop if isinstance(stop, str) else "done"


def printable(text: str) -> str:
    """Text from the agent (its answer, a title, a command's output) with its control
    characters shown as `\\xNN`, not obeyed: an escape sequence in it must not move the
    cursor, clear the screen, retitle the window or overwrite a permission question."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text.replace("\r\n", "\n"))


def shown(text: str) -> str:
    """Agent text as markup that prints it literally (`printable`, rich markup escaped)."""
    from rich.markup import escape

    return escape(printable(text))


def tool_line(tool: ToolCallState) -> str:
    """A tool call's status line (markup): mark, title, kind, status, what it did."""

    mark = STATUS_MARK.get(tool.status, "·")
    text = f"{mark} {shown(tool.title or tool.tool_call_id)} [dim]({shown(tool.kind)})[/]"
    parts = _summary(tool)
    text += f" [dim]{shown(tool.status)}[/]" + shown(" — " + "; ".join(parts) if parts else "")
    style = {"completed": "green", "failed": "red"}.get(tool.status, "yellow")
    return f"[{style}]{text}[/]"


def _summary(tool: ToolCallState) -> list[str]:
    """A read says where and how much; a command's output goes below its line (the
    first line of it here would say it twice); anything else: `view.tool_summary`."""
    if tool.status == "completed" and tool.kind == "read" and not diffs(tool):
        lines = len(output_text(tool).splitlines())
        where = next((loc.path for loc in tool.call.locations or () if loc.path), None)
        return [f"{where} · {lines} line{'s' * (lines != 1)}" if where else f"{lines} lines"]
    if _is_command(tool):
        return [f"exit {code}"] if (code := exit_code(tool)) is not None else []
    return tool_summary(tool)


def _is_command(tool: ToolCallState) -> bool:
    return tool.status in ("completed", "failed") and (
        tool.kind == "execute" or exit_code(tool) is not None
    )


def tool_details(tool: ToolCallState, diff_lines: int, output_lines: int) -> list[str]:
    """The lines (markup) kept under a finished tool call: an edit's diff, a command's
    output, each cut with "… N more lines"."""

    lines: list[str] = []
    if tool.status == "completed" and diff_lines:
        for diff in diffs(tool):
            for line in cut_lines(diff.lines(), diff_lines):
                lines.append(f"    [{DIFF_STYLES.get(line[:1], 'dim')}]{shown(line)}[/]")
    if _is_command(tool) and output_lines:
        output = output_text(tool).rstrip("\n").splitlines()
        lines += [f"    [dim]{shown(line)}[/]" for line in cut_lines(output, output_lines)]
    return lines


def cut_lines(lines: list[str], limit: int) -> list[str]:
    """The first `limit` lines, then "… N more lines" if there were more."""
    if len(lines) <= limit:
        return lines
    return [*lines[:limit], f"… {len(lines) - limit} more lines"]


def usage_line(usage: Any, context: Any) -> str:
    """`tokens: 1,234 in · 56 out · context 12,345 / 128,000 (10%)`, or "" with neither."""
    parts = []
    if usage is not None:
        parts.append(f"tokens: {usage.input_tokens:,} in · {usage.output_tokens:,} out")
    used, size = getattr(context, "used", None), getattr(context, "size", None)
    if isinstance(used, int) and isinstance(size, int) and size > 0:
        parts.append(f"context {used:,} / {size:,} ({used * 100 // size}%)")
    return " · ".join(parts)


class JsonView:
    """One JSON object per line: session, update, permission, end, error."""

    def __init__(self, file: IO[str] | None = None) -> None:
        self.file = file or sys.stdout

    def emit(self, obj: dict[str, Any]) -> None:
        self.file.write(json.dumps(obj, ensure_ascii=False) + "\n")
        self.file.flush()

    def event(self, event: Event) -> None:
        self.emit(to_json(event))

    def info(self, text: str) -> None:
        return None

    def turn_started(self) -> None:
        return None

    def pause(self) -> None:
        return None

    def resume(self) -> None:
        return None

    def end_note(self, end: TurnEnd, context: Any) -> None:
        return None  # usage is in the "end" object already

    def started(self, client: Any, session: Any) -> None:
        info = client.agent_info
        agent = {"name": getattr(info, "name", None), "version": getattr(info, "version", None)}
        self.emit({"type": "session", "sessionId": session.id, "cwd": session.cwd, "agent": agent})

    def error(self, text: str) -> None:
        self.emit({"type": "error", "message": text})

    def replayed(self, events: list[Event]) -> None:
        for event in events:
            self.emit({**to_json(event), "replayed": True})

    def local_answer(self, lines: list[str]) -> None:
        self.emit({"type": "local", "lines": lines})


def to_json(event: Event) -> dict[str, Any]:
    """The JSON form of one event (what `agentao run --json` prints)."""
    if isinstance(event, Update):
        out: dict[str, Any] = {"type": "update", "sessionId": event.session_id, "update": event.raw}
        if event.tool_call is not None:
            out["toolCall"] = event.tool_call.raw
        return out
    if isinstance(event, PermissionDecision):
        request = event.request
        return {
            "type": "permission",
            "sessionId": request.session_id,
            "toolCallId": request.tool_call_id,
            "title": request.title,
            "kind": request.kind,
            "optionId": event.option_id,
            "approved": event.approved,
            "cancelledByTurn": event.cancelled_by_turn,
            "reason": event.reason,
        }
    return {
        "type": "end",
        "sessionId": event.session_id,
        "stopReason": event.stop_reason,
        "forced": event.forced,
        "usage": to_builtins(event.usage) if event.usage is not None else None,
        "result": event.raw,
    }


__all__ = [
    "DIFF_LINES",
    "DIFF_STYLES",
    "OUTPUT_LINES",
    "PARTIAL_LINE_BYTES",
    "PLAN_BOX",
    "STATUS_MARK",
    "ConsoleView",
    "JsonView",
    "LiveOutput",
    "child_end",
    "child_name",
    "cut_lines",
    "printable",
    "shown",
    "terminal_bytes",
    "to_json",
    "tool_details",
    "tool_line",
    "usage_line",
]
