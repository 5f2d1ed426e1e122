"""`agentao run` on a terminal: markdown as it streams, a spinner while nothing moves.

Theory of operation. One `rich.live.Live` region sits at the bottom of the screen for
the whole turn. It holds what is still changing: the block being streamed (the
agent's message rendered as markdown, or a thought, dimmed) and, below it, a spinner
saying what we wait for ("Waiting for the agent…", "Running: npm test"). When a block
ends (another kind of update arrives), it is printed above the region for good, as
are plans and permission answers, through the plain view's own methods. A tool
call is shown only once it is finished, as whole lines printed above the region
(its status line, then its diff or output: `render.tool_details`); while it runs,
the spinner names it. Nothing here writes a line without its newline: rich
redraws the region under the last full line, so a half line would be overdrawn.
A permission question pauses the region (`pause`: stopped and cleared, the
cursor shown) and `resume` starts it again after the answer, so the spinner
never redraws over the question (`question.py`). When the turn ends the region
is cleared, so what stays on screen is the finished transcript. Piped output
and `--json` never come here (see `render.py`).
"""

from __future__ import annotations

from typing import Any

from agentao.cli.render import (
    DIFF_LINES,
    OUTPUT_LINES,
    ConsoleView,
    printable,
    tool_details,
    tool_line,
)
from agentao.client.events import Event, ToolCallState, TurnEnd, Update

WAITING = "Waiting for the agent…"
REFRESH_PER_SECOND = 12
_BLOCK_KINDS = {"agent_message_chunk": "message", "agent_thought_chunk": "thought"}


class TerminalView(ConsoleView):
    """ConsoleView for a person at a terminal (see the module docstring)."""

    def __init__(
        self, console: Any = None, *, diff_lines: int = DIFF_LINES, output_lines: int = OUTPUT_LINES
    ) -> None:
        super().__init__(console, diff_lines=diff_lines, output_lines=output_lines)
        self._live: Any = None  # rich.live.Live while a turn runs
        self._block = ""  # "message" | "thought" | "" (nothing streaming)
        self._text = ""
        self._status: str | None = None
        self._running: dict[str, str] = {}  # tool calls still running: id -> title
        self._paused = False  # the region was stopped for a question
        self._replaying = False  # showing a resumed session's history

    # ---- the turn --------------------------------------------------------------------

    def turn_started(self) -> None:
        self._status = WAITING
        self._start()

    def pause(self) -> None:
        """Stop and clear the region (a question is about to be asked below it)."""
        self._flush()
        if self._live is not None:
            self._live.stop()
            self._live = None
            self._paused = True

    def resume(self) -> None:
        if self._paused:
            self._paused = False
            self._status = self._waiting_for()
            self._start()

    def _start(self) -> None:
        from rich.live import Live

        self._live = Live(
            self._renderable(),
            console=self.console,
            refresh_per_second=REFRESH_PER_SECOND,
            transient=True,
        )
        self._live.start(refresh=True)  # at once: the person sees the prompt was taken

    def replayed(self, events: list[Event]) -> None:
        """A resumed session's history: plain lines (no region runs yet), in order."""
        self._replaying = True
        try:
            super().replayed(events)
        finally:
            self._replaying = False

    def event(self, event: Event) -> None:
        if self._replaying:
            super().event(event)
            return
        child = self.is_child(event)  # a subagent's: its lines go above, never in a block
        if (
            not child
            and isinstance(event, Update)
            and event.kind in _BLOCK_KINDS
            and event.text is not None
        ):
            self._append(_BLOCK_KINDS[event.kind], event.text)
            return
        self._flush()
        if isinstance(event, TurnEnd):
            self._stop()
        super().event(event)
        if self._live is not None:
            self._status = self._waiting_for()
            self._refresh(now=True)

    def _append(self, block: str, text: str) -> None:
        text = printable(text)
        if block != self._block:
            self._flush()
            self._block, text = block, text.lstrip("\n")
        self._text += text
        self._status = None if block == "message" else "Thinking…"
        self._refresh()

    def _flush(self) -> None:
        """Print the streamed block above the live region, for good."""
        if self._block and self._text.strip():
            self.console.print(self._block_renderable())
        self._block, self._text = "", ""

    def _stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
        self._status, self._paused = None, False

    # ---- what changes ----------------------------------------------------------------

    def _tool(self, tool: ToolCallState) -> None:
        if tool.status in ("completed", "failed"):
            self._running.pop(tool.tool_call_id, None)
            self._status = self._waiting_for()  # the lines below redraw the region: not
            self._refresh(now=True)  # with this tool still named in it
            self._end_line()
            self.console.print(tool_line(tool))
            for line in tool_details(tool, self.diff_lines, self.output_lines):
                self.console.print(line)
        else:
            # the agent's words: control characters out (an ESC would clear the screen)
            self._running[tool.tool_call_id] = printable(tool.title or tool.tool_call_id)

    def _waiting_for(self) -> str | None:
        if self._running:
            return "Running: " + ", ".join(self._running.values())
        return WAITING

    def _block_renderable(self) -> Any:
        from rich.markdown import Markdown
        from rich.text import Text

        if self._block == "message":
            return Markdown(self._text, code_theme="monokai")
        return Text(self._text.rstrip("\n"), style="dim italic")

    def _renderable(self) -> Any:
        from rich.console import Group
        from rich.spinner import Spinner
        from rich.text import Text

        parts: list[Any] = []
        if self._block and self._text:
            parts.append(self._block_renderable())
        if self._status:  # as text: a str would be read as rich markup (a title's "[…]")
            parts.append(Spinner("dots", text=Text(f" {self._status}"), style="cyan"))
        return Group(*parts)

    def _refresh(self, *, now: bool = False) -> None:
        """`now`: draw it at once, else at the next tick (a chunk of streamed text: one
        markdown render per tick, not per chunk). A line printed above the region
        redraws the region as last drawn, so a changed status is drawn at once."""
        if self._live is not None:
            self._live.update(self._renderable(), refresh=now)


__all__ = ["TerminalView"]
