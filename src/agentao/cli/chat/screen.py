"""What the interactive session prints: a turn's events as rich output in the scrollback.

Everything finished goes to the terminal's scrollback and stays there: markdown blocks of
the answer (a block is printed once the blank line after it arrives, outside a code fence),
thoughts (collapsed to one dim line, "thought for 3s (12 lines) · /thoughts", unless
`ScreenLimits.thoughts_shown`; `show_thought()` prints the last one whole), each tool call
with its final status, its diffs and its shell output (cut at `ScreenLimits.output_lines`,
with an "N more lines · /expand K" line; `expand(K)` prints cut output K whole, the last
`ScreenLimits.kept_outputs` of them kept), the plan, and the usage line after the turn. What is still moving (the unfinished markdown block, the
running tool calls, under a command an ACP v2 agent runs in its own terminal the last
`ScreenLimits.live_lines` lines of its output as it comes, the elapsed time, a line the
person is typing) is drawn in one transient `rich.live.Live` area below
it, which `pause()` removes before anything else takes the screen (a permission question)
and `resume()` brings back. The agent's words are printed as text or markdown, never as
rich markup, so nothing they contain can restyle or hide part of the screen.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.spinner import Spinner
from rich.text import Text

from agentao.cli.render import (
    DIFF_STYLES,
    PLAN_BOX,
    STATUS_MARK,
    child_end,
    child_name,
    printable,
    terminal_bytes,
)
from agentao.client.events import Event, PermissionDecision, ToolCallState, TurnEnd, Update
from agentao.client.permissions import PermissionRequest
from agentao.client.view import diffs, exit_code, output_text

STATUS_STYLE = {"completed": "green", "failed": "red"}
FINAL = frozenset({"completed", "failed"})
CODE_THEME = "monokai"


@dataclass(frozen=True, slots=True)
class ScreenLimits:
    """Named limits of what one tool call may put in the scrollback."""

    output_lines: int = 12  # a shell command's (or a read's) output, then "N more lines"
    diff_lines: int = 40  # an edit's diff lines, then "N more lines"
    refresh_per_second: float = 8.0  # the live area's redraws (spinner and elapsed time)
    kept_outputs: int = 50  # cut outputs kept for /expand (older ones are forgotten)
    thoughts_shown: bool = False  # print thoughts whole, not as one collapsed line
    live_lines: int = 5  # of a running command's output, shown under it in the live area
    live_bytes: int = 4096  # of it kept for that (the last ones)


def split_markdown(text: str) -> int:
    """Where `text` may be cut so that everything before it is whole markdown blocks: after
    the last blank line outside a code fence (0: nothing is whole yet)."""
    cut, fenced, offset = 0, False, 0
    for line in text.splitlines(keepends=True):
        offset += len(line)
        if not line.endswith("\n"):
            break  # the last, unfinished line
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
            if not fenced:
                cut = offset  # a closed fence ends its block
        elif not stripped and not fenced:
            cut = offset
    return cut


class _Working:
    """The live area: the unfinished markdown block, running tools, spinner and time."""

    def __init__(self, screen: Screen) -> None:
        self.screen = screen
        self.spinner = Spinner("dots", style="cyan")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        screen = self.screen
        parts: list[Any] = []
        if screen.pending_text.strip():
            parts.append(screen.markdown(screen.pending_text))
        for tool in screen.running_tools():
            parts.append(tool_line(tool))
            parts += [
                Text("    ") + Text(printable(line), style="dim")
                for line in screen.live_lines(tool.tool_call_id)
            ]
        elapsed = time.monotonic() - screen.started
        self.spinner.text = Text(f"working {elapsed:.0f}s · Ctrl-C cancels", style="dim")
        parts.append(self.spinner)
        if screen.typing:  # what the person types meanwhile (typeahead.py), not yet sent
            parts.append(Text("> ", style="bold cyan") + Text(printable(screen.typing)))
        yield Group(*parts)


class Screen:
    """Prints a session's events; one instance for the whole interactive session."""

    def __init__(self, console: Console | None = None, limits: ScreenLimits | None = None) -> None:
        self.console = console or Console(highlight=False)
        self.limits = limits or ScreenLimits()
        self.pending_text = ""  # the answer's unfinished markdown block
        self.typing = ""  # a line being typed during the turn, shown in the live area
        self.pending_thought = ""
        self.thought_started: float | None = None  # when the pending thought began (live)
        self.last_thought = ""  # the last thought printed, for /thoughts
        # number -> (all its lines, whether they are a diff's)
        self.cut_outputs: OrderedDict[int, tuple[list[str], bool]] = OrderedDict()
        self.cuts = 0  # the number the last cut output was given
        self.tools: dict[str, ToolCallState] = {}  # announced, not printed final yet
        self.live_output: dict[str, bytes] = {}  # running command -> its last output bytes
        self.started = time.monotonic()
        self._live: Live | None = None
        self._ticker: asyncio.Task[None] | None = None
        self.shown_mode: str | None = None
        self.children: dict[str, str] = {}  # child session id -> its name (subagents)
        self.depth: dict[str, int] = {}  # child session id -> 1 for a child, 2 for its child

    # ---- the live area ----------------------------------------------------------------

    def turn_started(self) -> None:
        self.started = time.monotonic()
        self.resume()

    def resume(self) -> None:
        """Show the live area again. It is redrawn on the event loop's thread only (rich's
        own refresh thread would draw it while this thread prints: one of them then erases
        a line of the other's, and a printed line went missing from the scrollback)."""
        if self._live is None and self.console.is_terminal:
            self._live = Live(
                _Working(self), console=self.console, transient=True, auto_refresh=False
            )
            self._live.start(refresh=True)
            self._ticker = asyncio.get_running_loop().create_task(self._tick(self._live))

    async def _tick(self, live: Live) -> None:
        """The spinner and the elapsed time move while nothing else is printed."""
        while True:
            await asyncio.sleep(1 / self.limits.refresh_per_second)
            live.refresh()

    def typed(self, text: str) -> None:
        """The line typed so far during the turn, redrawn now."""
        self.typing = text
        if self._live is not None:
            self._live.refresh()

    def pause(self) -> None:
        """Take the live area off the screen (before a question, or the turn's end)."""
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        if self._live is not None:
            self._live.stop()
            self._live = None

    def running_tools(self) -> list[ToolCallState]:
        return list(self.tools.values())

    def markdown(self, text: str) -> Markdown:
        return Markdown(printable(text), code_theme=CODE_THEME)

    # ---- events -----------------------------------------------------------------------

    def event(self, event: Event) -> None:
        if isinstance(event, Update):
            self.update(event)
        elif isinstance(event, PermissionDecision):
            self.permission(event)
        elif isinstance(event, TurnEnd):
            self.turn_ended(event)

    def update(self, update: Update, *, replayed: bool = False) -> None:
        kind = update.kind
        if update.session_id in self.children or kind == "subagent_update":
            self._child_update(update)
        elif kind == "agent_message_chunk" and update.text is not None:
            self._flush_thought()
            self.pending_text += update.text
            self._print_whole_blocks()
        elif kind == "agent_thought_chunk" and update.text is not None:
            self._flush_text()
            if not self.pending_thought and not replayed:
                self.thought_started = time.monotonic()
            self.pending_thought += update.text
        elif kind == "user_message_chunk" and update.text is not None and replayed:
            self.flush()
            self.user(update.text)
        elif kind in ("tool_call", "tool_call_update") and update.tool_call is not None:
            self.flush()
            self._tool(update.tool_call)
        elif kind == "terminal_output_chunk" and update.tool_call and update.value is not None:
            self._live_chunk(update.tool_call.tool_call_id, update.value.data)
        elif kind == "plan" and update.value is not None:
            self.flush()
            self.plan(update.value.entries)
        elif kind == "current_mode_update" and update.value is not None:
            self.mode(update.value.current_mode_id)

    def _child_update(self, update: Update) -> None:
        """A child session (a subagent): announced and ended on a line of its own, its tool
        calls indented as they start and end, between (its words are its parent's tool
        call's result)."""
        tool, value = update.tool_call, update.value
        if update.kind == "subagent_update" and value is not None:
            self.flush()
            child = value.session_id
            if child not in self.children:
                self.children[child] = child_name(value)
                self.depth[child] = self.depth.get(update.session_id, 0) + 1  # its parent's + 1
                self._child_line(child, "↳ subagent ", self.children[child])
            if (stop := child_end(update.raw)) is not None:
                self._child_line(child, "↳ ", f"{self.children[child]} {stop}")
        elif tool is not None and (update.kind == "tool_call" or tool.status in FINAL):
            self.flush()
            mark = Text(f"{self._indent(update.session_id)}│ ", style="magenta")
            self.console.print(mark + tool_line(tool))

    def _child_line(self, child: str, mark: str, text: str) -> None:
        head = Text(f"{self._indent(child)}{mark}", style="bold magenta")
        self.console.print(head + Text(printable(text)))

    def _indent(self, child: str) -> str:
        return "  " * self.depth.get(child, 1)

    def replayed(self, events: list[Event]) -> None:
        """A resumed session's history: each old prompt, then what answered it, in order."""
        for event in events:
            if isinstance(event, Update):
                self.update(event, replayed=True)
        self.flush()
        self.finish_tools()

    def mode(self, mode: str) -> None:
        """`mode: plan`, once per change (the agent tells again what /mode just set)."""
        if mode != self.shown_mode:
            self.shown_mode = mode
            self.note(f"mode: {mode}")

    def user(self, text: str) -> None:
        self.console.print(Text("> ", style="bold cyan") + Text(printable(text)))

    def turn_ended(self, end: TurnEnd, context: Any = None) -> None:
        self.flush()
        self.finish_tools()
        self.pause()
        elapsed = time.monotonic() - self.started
        if end.stop_reason != "end_turn":
            style = "yellow" if end.stop_reason == "cancelled" else "red"
            self.console.print(Text(f"— {end.stop_reason}", style=style))
        self.note(usage_line(end.usage, context, elapsed))

    def permission(self, decision: PermissionDecision) -> None:
        request = decision.request
        chosen = next((o for o in request.options if o.option_id == decision.option_id), None)
        if decision.cancelled_by_turn or chosen is None:
            verdict, style = "cancelled", "yellow"
        else:
            verdict, style = chosen.name or chosen.kind, "green" if decision.approved else "red"
        line = Text("permission: ", style="bold") + Text(printable(request.title)) + Text(" → ")
        if (child := self.children.get(request.session_id)) is not None:
            who = f"{self._indent(request.session_id)}│ subagent {printable(child)}: "
            line = Text(who, style="magenta") + line
        self.console.print(line + Text(printable(verdict), style=style))

    def question(self, request: PermissionRequest, tool: ToolCallState | None) -> None:
        """What the agent asks to do: its title, the command and where, or the diff."""
        self.flush()
        title = Text(printable(request.title), style="bold")
        line = Text("permission? ", style="bold yellow") + title
        self.console.print(line + Text(f" ({printable(request.kind)})", style="dim"))
        raw = request.tool_call.get("rawInput")
        raw = raw if isinstance(raw, dict) else {}
        if isinstance(raw.get("command"), str):
            self.console.print(Text("  $ ", style="dim") + Text(printable(raw["command"])))
        if isinstance(raw.get("cwd"), str):  # where it would run matters as much as what
            self.console.print(Text("  in ", style="dim") + Text(printable(raw["cwd"])))
        shown = diffs(tool) if tool is not None else []
        for diff in shown:
            self.console.print(Text(printable(f"  {diff.summary()}"), style="dim"))
            self._cut_lines(diff.lines(), self.limits.diff_lines, diff=True)
        if not shown:  # no diff proposed: the edit as its input says, where it says it
            self._cut_lines(proposed_edit(raw), self.limits.diff_lines, diff=True)

    def asked(self, question: str) -> None:
        """The agent's question to the person."""
        self.flush()
        self.console.print(Text("question? ", style="bold yellow") + Text(printable(question)))

    def note(self, text: str) -> None:
        if text:
            self.console.print(Text(printable(text), style="dim"))

    def error(self, text: str) -> None:
        self.console.print(Text("error: ", style="bold red") + Text(printable(text)))

    # ---- text -------------------------------------------------------------------------

    def flush(self) -> None:
        """Print what is still pending of the answer and the thought."""
        self._flush_thought()
        self._flush_text()

    def _print_whole_blocks(self) -> None:
        cut = split_markdown(self.pending_text)
        if cut:
            whole, self.pending_text = self.pending_text[:cut], self.pending_text[cut:]
            if whole.strip():
                self.console.print(self.markdown(whole))

    def _flush_text(self) -> None:
        text, self.pending_text = self.pending_text, ""
        if text.strip():
            self.console.print(self.markdown(text))

    def _flush_thought(self) -> None:
        text, self.pending_thought = printable(self.pending_thought).strip(), ""
        started, self.thought_started = self.thought_started, None
        if not text:
            return
        self.last_thought = text
        if self.limits.thoughts_shown:
            self.show_thought()
            return
        took = f" for {time.monotonic() - started:.0f}s" if started is not None else ""
        lines = len(text.splitlines())
        summary = f"thought{took} ({lines} line{'s' * (lines != 1)}) · /thoughts shows it"
        self.console.print(Text(summary, style="dim italic"))

    def show_thought(self) -> bool:
        """Print the last thought whole, labelled; False when there was none."""
        if not self.last_thought:
            return False
        label = Text("thinking: ", style="dim bold")
        self.console.print(label + Text(self.last_thought, style="dim italic"))
        return True

    def show_thoughts(self, shown: bool) -> None:
        """From now on print every thought whole (True) or collapsed (False)."""
        self.limits = replace(self.limits, thoughts_shown=shown)

    # ---- tools and plan ---------------------------------------------------------------

    def _tool(self, tool: ToolCallState) -> None:
        if tool.status not in FINAL:
            self.tools[tool.tool_call_id] = tool
            return
        self.tools.pop(tool.tool_call_id, None)
        self.live_output.pop(tool.tool_call_id, None)  # its final output is printed now
        self.print_tool(tool)

    def _live_chunk(self, call_id: str, data: str) -> None:
        """A chunk of a running command's terminal output, for the live area."""
        kept = self.live_output.get(call_id, b"") + terminal_bytes(data)
        self.live_output[call_id] = kept[-self.limits.live_bytes :]  # drawn at the next tick

    def live_lines(self, call_id: str) -> list[str]:
        """The last `live_lines` lines a running command printed so far."""
        text = self.live_output.get(call_id, b"").decode("utf-8", "replace")
        return text.rstrip("\n").splitlines()[-self.limits.live_lines :] if text else []

    def finish_tools(self) -> None:
        """Tool calls the turn left unfinished (a cancel) keep their last status on screen."""
        for tool in list(self.tools.values()):
            self.print_tool(tool)
        self.tools.clear()
        self.live_output.clear()

    def print_tool(self, tool: ToolCallState) -> None:
        self.console.print(tool_line(tool))
        for diff in diffs(tool):
            self._cut_lines(diff.lines(), self.limits.diff_lines, diff=True)
        if not diffs(tool) and tool.kind in ("execute", "read", "search", "fetch"):
            self._cut_lines(output_text(tool).rstrip("\n").splitlines(), self.limits.output_lines)

    def _cut_lines(self, lines: list[str], limit: int, *, diff: bool = False) -> None:
        self._print_lines(lines[:limit], diff=diff)
        if len(lines) > limit:
            number = self._keep_cut(lines, diff)
            more = f"    … {len(lines) - limit} more lines · /expand {number}"
            self.console.print(Text(more, style="dim italic"))

    def _print_lines(self, lines: list[str], *, diff: bool) -> None:
        for line in lines:
            style = DIFF_STYLES.get(line[:1], "dim") if diff else "dim"
            self.console.print(Text("    ") + Text(printable(line), style=style), soft_wrap=True)

    def _keep_cut(self, lines: list[str], diff: bool) -> int:
        """Keep a cut output whole under the next number; the oldest beyond the limit go."""
        self.cuts += 1
        self.cut_outputs[self.cuts] = (lines, diff)
        while len(self.cut_outputs) > self.limits.kept_outputs:
            self.cut_outputs.popitem(last=False)
        return self.cuts

    def expand(self, number: int | None = None) -> bool:
        """Print cut output `number` (the last one when None) whole; False if not kept."""
        number = self.cuts if number is None else number
        kept = self.cut_outputs.get(number)
        if kept is None:
            return False
        lines, diff = kept
        self.console.print(Text(f"output {number}, all {len(lines)} lines:", style="dim bold"))
        self._print_lines(lines, diff=diff)
        return True

    def plan(self, entries: Any) -> None:
        self.console.print(Text("Plan", style="bold"))
        for entry in entries:
            box = PLAN_BOX.get(entry.status, "[ ]")
            self.console.print(Text(f"  {box} ") + Text(printable(entry.content)))


def proposed_edit(raw_input: dict[str, Any]) -> list[str]:
    """An edit's input as diff lines: `old_string` / `new_string` (agentao's replace, and
    others' edit tools of that shape) as `-` / `+` lines; nothing for any other input."""
    old, new = raw_input.get("old_string"), raw_input.get("new_string")
    if not (isinstance(old, str) and isinstance(new, str)):
        return []
    return [f"-{line}" for line in old.splitlines()] + [f"+{line}" for line in new.splitlines()]


def tool_line(tool: ToolCallState) -> Text:
    """`✓ Run ls (execute) completed · exit 0`."""
    style = STATUS_STYLE.get(tool.status, "yellow")
    line = Text(f"{STATUS_MARK.get(tool.status, '·')} ", style=style)
    line += Text(printable(tool.title or tool.tool_call_id), style=f"bold {style}")
    line += Text(printable(f" ({tool.kind}) {tool.status}"), style="dim")
    if (code := exit_code(tool)) is not None:
        line += Text(f" · exit {code}", style="dim")
    for diff in diffs(tool):
        line += Text(printable(f" · {diff.summary()}"), style="dim")
    return line


def usage_line(usage: Any, context: Any, elapsed: float) -> str:
    """`1.2s · tokens: 1,234 in · 56 out · context 12,345 / 128,000 (10%)`."""
    parts = [f"{elapsed:.1f}s"]
    if usage is not None:
        parts.append(f"tokens: {usage.input_tokens:,} in · {usage.output_tokens:,} out")
    used, size = getattr(context, "used", None), getattr(context, "size", None)
    if isinstance(used, int) and isinstance(size, int) and size > 0:
        parts.append(f"context {used:,} / {size:,} ({used * 100 // size}%)")
    return " · ".join(parts)


__all__ = [
    "Screen",
    "ScreenLimits",
    "proposed_edit",
    "split_markdown",
    "tool_line",
    "usage_line",
]
