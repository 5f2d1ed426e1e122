"""`agentao` on a real pseudo-terminal, as a person runs it, and the screen it leaves.

pexpect runs the command on a pty of a fixed size (no COLUMNS or LINES inherited: a
pytest-xdist worker exports COLUMNS=80); every byte it writes goes to pyte, a terminal
emulator, so a test reads what a person would see (`screen()`: the scrollback and the
window, cursor moves and redraws applied) rather than the byte stream's transient frames.
`wait_for` waits on the screen (a bound, never a measured time).
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pexpect
import pyte
from rich.style import Style
from rich.text import Text

ROWS, COLUMNS = 40, 100
TURN_END = re.compile(r"^\d+\.\ds( ·|$)", re.MULTILINE)  # `1.2s · tokens: ...`
WAIT = 30.0  # the bound of one wait: a slow machine, never a measurement


class Terminal:
    def __init__(
        self, argv: list[str], cwd: Path, env: dict[str, str], shell: str | None = None
    ) -> None:
        """`agentao ARGV` in `cwd`; with `shell`, that `sh -c` line instead, `$AGENTAO`
        naming the command."""
        inherited = {
            k: v
            for k, v in os.environ.items()
            if k not in ("COLUMNS", "LINES", "LLM_PROVIDER") and not k.endswith("_API_KEY")
        }
        # No cursor-position requests: pyte would not answer them, prompt_toolkit would wait.
        full_env = {**inherited, "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1", **env}
        self.pyte = pyte.HistoryScreen(COLUMNS, ROWS, history=5000)
        self.stream = pyte.Stream(self.pyte)
        self.raw = ""
        command = [sys.executable, "-m", "agentao", *argv]
        if shell is not None:
            full_env["AGENTAO"] = " ".join(command)
            command = ["sh", "-c", shell]
        self.child = pexpect.spawn(
            command[0],
            command[1:],
            cwd=str(cwd),
            env=full_env,
            dimensions=(ROWS, COLUMNS),
            encoding="utf-8",
            codec_errors="replace",
        )

    # ---- reading ----------------------------------------------------------------------

    def _pump(self, timeout: float) -> bool:
        """Feed what the child wrote (within `timeout`) to the emulator; False at EOF."""
        try:
            data = self.child.read_nonblocking(65536, timeout=timeout)
        except pexpect.TIMEOUT:
            return True
        except pexpect.EOF:
            return False
        self.raw += data
        self.stream.feed(data)
        return True

    def screen(self) -> str:
        """The scrollback and the window as text, trailing blanks cut."""
        rows = [_line(row, COLUMNS) for row in self.pyte.history.top]
        rows += [line.rstrip() for line in self.pyte.display]
        while rows and not rows[-1]:
            rows.pop()
        return "\n".join(rows)

    def wait_for(self, check: str | Callable[[str], bool], what: str = "") -> str:
        """The screen once `check` (text on it, or a test of it) holds; fails at WAIT."""
        test = (lambda s: check in s) if isinstance(check, str) else check
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            alive = self._pump(0.1)
            text = self.screen()
            if test(text):
                return text
            if not alive:
                break
        raise AssertionError(f"never on screen: {what or check!r}\n--- screen ---\n{self.screen()}")

    def wait_idle(self, check: str | Callable[[str], bool] = "", what: str = "") -> str:
        """The screen once `check` holds and the idle prompt (`>` alone) is its last line."""
        test = (lambda s: check in s) if isinstance(check, str) else check
        return self.wait_for(lambda s: test(s) and _idle(s), what or f"idle after {check!r}")

    def wait_turns(self, count: int) -> str:
        """The screen once `count` turns ended (each ends with its line of elapsed time
        and usage) and the prompt is back."""
        return self.wait_idle(lambda s: len(TURN_END.findall(s)) >= count, f"{count} turns")

    def exit_status(self) -> int:
        """Read to the end; the exit status (fails if it does not end within WAIT)."""
        deadline = time.monotonic() + WAIT
        while self._pump(0.5):
            if time.monotonic() > deadline:
                raise AssertionError(f"still running\n--- screen ---\n{self.screen()}")
        self.child.wait()
        return self.child.exitstatus if self.child.exitstatus is not None else -1

    # ---- typing -----------------------------------------------------------------------

    def type(self, text: str) -> None:
        self.child.send(text)

    def line(self, text: str) -> None:
        self.child.send(text + "\r")

    def save(self, path: Path) -> None:
        """Keep the final screen (a text capture of the flow) beside the test's files."""
        path.write_text(self.screen() + "\n")
        path.with_suffix(".raw").write_text(self.raw)  # the byte stream, to tell why

    def save_svg(self, path: Path, title: str) -> None:
        """The final screen, colours and all, as an SVG picture (rich draws it)."""
        from rich.console import Console

        console = Console(record=True, width=COLUMNS, file=open(os.devnull, "w"))  # noqa: SIM115
        lines = [_styled(row) for row in self.pyte.history.top]
        lines += [_styled(self.pyte.buffer[y]) for y in range(ROWS)]
        while lines and not lines[-1].plain:
            lines.pop()  # the window's empty rows below the last line
        for line in lines:
            console.print(line)
        console.file.close()
        path.write_text(console.export_svg(title=title))

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


def _line(row: dict, width: int) -> str:
    return "".join(row[x].data if x in row else " " for x in range(width)).rstrip()


def _styled(row: dict) -> Text:
    """One emulated row as rich text: each character with its colour and weight."""
    text = Text()
    for x in range(COLUMNS):
        char = row.get(x)
        if char is None:
            text.append(" ")
            continue
        text.append(char.data, Style(color=_colour(char.fg), bold=char.bold, dim=False))
    text.rstrip()
    return text


def _colour(fg: str) -> str | None:
    """pyte's colour (a name, `brightred`, or six hex digits) as rich names it."""
    if fg == "default":
        return None
    if re.fullmatch(r"[0-9a-fA-F]{6}", fg):
        return f"#{fg}"
    fg = fg.replace("brown", "yellow")  # pyte's name for ANSI colour 3
    return fg.replace("bright", "bright_") if fg.startswith("bright") else fg


def _idle(screen: str) -> bool:
    """The last line is the prompt with nothing typed: `>` alone."""
    lines = screen.splitlines()
    return bool(lines) and lines[-1].rstrip() == ">"


__all__ = ["COLUMNS", "ROWS", "Terminal"]
