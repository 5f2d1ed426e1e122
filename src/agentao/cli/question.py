"""`agentao run --approve ask`: a permission question at the terminal, read on the event loop.

Why not a thread (`rich.prompt.Prompt` under `asyncio.to_thread`, as
`client.permissions.ask_in_terminal` does): Ctrl-C reaches the event loop's
handler, not a thread blocked in `input()`, so the turn was cancelled but the
thread kept reading: the process hung at exit until the next line was typed,
and took that line (the person's next shell command) as its answer. Here the
answer is read from stdin with `loop.add_reader` while the terminal stays in
cooked mode (its own line editing and echo; one read is one line), and a
cancelled question just stops reading: nothing is left behind to eat input, and the
terminal is left blocking as it was found (uvloop's `add_reader` turns that off).

The question shows what would be done: the call's title, the command (`$ …`) and where
it would run, or the edit's diff (the diff the request carries, else its input's
`old_string`/`new_string`), cut at `DIFF_LINES` like a finished edit's.

The view is paused around the question (`pause`/`resume`: the terminal view's
spinner must not redraw over it). An answer that is not one of the numbers
asks again; end of input answers `cancelled`. `rejected` counts the requests
the person rejected, which `run` does not count as a failure.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from agentao.cli.chat.screen import proposed_edit
from agentao.cli.render import DIFF_LINES, DIFF_STYLES, cut_lines, shown
from agentao.client.permissions import PermissionAnswer, PermissionOption, PermissionRequest
from agentao.client.view import DiffView, tool_call_of

MAX_ANSWER_BYTES = 4096  # one read of a typed line; a longer one is not a number anyway


class TerminalQuestion:
    """The `ask` of `PolicyPermissions`, for a person at this terminal."""

    def __init__(self, view: Any, console: Any, *, remember: bool = False, fd: int = 0) -> None:
        self.view = view  # paused while asking
        self.console = console
        self.remember = remember  # offer `*_always` options too
        self.fd = fd
        self.rejected = 0

    async def __call__(self, request: PermissionRequest) -> PermissionAnswer:
        offered = [o for o in request.options if self.remember or not o.always]
        if not offered:
            return PermissionAnswer(None)
        self.view.pause()
        try:
            option = await self._ask(request, offered)
        except asyncio.CancelledError:
            self.console.print()  # the cursor is after the question: end its line
            raise
        finally:
            self.view.resume()
        if option is None:
            return PermissionAnswer(None)
        if not option.allows:
            self.rejected += 1
        return PermissionAnswer(
            option.option_id, f"the person at the terminal chose {option.name or option.kind}"
        )

    async def _ask(
        self, request: PermissionRequest, offered: list[PermissionOption]
    ) -> PermissionOption | None:
        self._show(request, offered)
        choices = [str(i) for i in range(1, len(offered) + 1)]
        default = next((str(i) for i, o in enumerate(offered, 1) if not o.allows), choices[-1])
        prompt = f"Choose [bold magenta]\\[{'/'.join(choices)}][/] [bold cyan]({default})[/]: "
        while True:
            self.console.print(prompt, end="")
            line = await read_line(self.fd)
            if line is None:  # end of input: nobody will answer
                self.console.print()
                return None
            answer = line.strip() or default
            if answer in choices:
                return offered[int(answer) - 1]
            self.console.print(f"[red]Please choose one of {', '.join(choices)}[/]")

    def _show(self, request: PermissionRequest, offered: list[PermissionOption]) -> None:
        # The agent's words are shown as text, never as markup or control sequences that
        # could hide part of them.
        title, kind = shown(request.title), shown(request.kind)
        self.console.print(f"[bold yellow]Permission[/] {title} [dim]({kind})[/]")
        raw_input = request.tool_call.get("rawInput")
        raw = raw_input if isinstance(raw_input, dict) else {}
        if isinstance(raw.get("command"), str):
            self.console.print(f"  [dim]$[/] {shown(raw['command'])}")
        if isinstance(raw.get("cwd"), str):  # where it would run matters as much as what
            self.console.print(f"  [dim]in[/] {shown(raw['cwd'])}")
        for line in cut_lines(proposed_diff(request, raw), DIFF_LINES):
            self.console.print(f"    [{DIFF_STYLES.get(line[:1], 'dim')}]{shown(line)}[/]")
        for i, option in enumerate(offered, 1):
            name, option_kind = shown(option.name), shown(option.kind)
            self.console.print(f"  [bold]{i}[/] {name} [dim]{option_kind}[/]")


def proposed_diff(request: PermissionRequest, raw_input: dict[str, Any]) -> list[str]:
    """The diff lines of what the request would change: the diffs its tool call carries,
    else the edit its input describes (none for any other call)."""
    asked = tool_call_of(request.tool_call) if request.tool_call else None
    content = getattr(asked, "content", None) or []
    lines = [line for d in map(DiffView.of, content) if d is not None for line in d.lines()]
    return lines or proposed_edit(raw_input)


async def read_line(fd: int = 0) -> str | None:
    """One line typed at the terminal (None at end of input), read on the event loop.
    Cancelling it stops reading at once: no thread is left blocked on the terminal."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[str | None] = loop.create_future()
    buffer = bytearray()

    def readable() -> None:
        try:
            data = os.read(fd, MAX_ANSWER_BYTES)
        except OSError:  # the terminal went away
            data = b""
        if done.done():
            return
        if not data:
            done.set_result(None)
            return
        buffer.extend(data)
        if b"\n" in buffer or len(buffer) >= MAX_ANSWER_BYTES:
            done.set_result(bytes(buffer).split(b"\n", 1)[0].decode(errors="replace"))

    # uvloop's add_reader makes the descriptor non-blocking and leaves it so, and a
    # terminal's open file is the shell's too: its next `read` would fail at once.
    blocking = os.get_blocking(fd)
    loop.add_reader(fd, readable)
    try:
        return await done
    finally:
        loop.remove_reader(fd)
        os.set_blocking(fd, blocking)


__all__ = ["MAX_ANSWER_BYTES", "TerminalQuestion", "proposed_diff", "read_line"]
