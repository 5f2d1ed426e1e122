"""A real pseudo-terminal running a command, read into a terminal emulator (pyte).

What a person sees is the screen after every redraw, erase and carriage return, not the
bytes: `lines()` is that screen (tall enough that nothing scrolls off), so a test can ask
whether a line is there, whole, once. Reads wait on the pty under a bound; nothing sleeps.

    with TerminalScreen([sys.executable, "-m", "agentao", "run", ...], env) as term:
        term.expect(b"Choose")      # the bytes so far hold it (fails after `bound` seconds)
        term.send(b"1\\r")
        code = term.wait()          # read to the end, then the exit code
        term.lines()                # the screen, trailing blanks dropped
"""

from __future__ import annotations

import fcntl
import os
import select
import struct
import sys
import termios
import time
from typing import Any

import pyte

ROWS, COLUMNS = 200, 160  # tall: the whole run stays on the screen
BOUND = 30.0  # seconds any one wait may take before the test fails


class TerminalScreen:
    def __init__(self, argv: list[str], env: dict[str, str], cwd: str | None = None) -> None:
        self.screen = pyte.Screen(COLUMNS, ROWS)
        self.stream = pyte.ByteStream(self.screen)
        self.output = b""
        self.closed = False
        self.pid, self.fd = os.forkpty()
        if self.pid == 0:  # the child: the command on the pty, its size from the pty alone
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
            clean = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
            if cwd:
                os.chdir(cwd)
            os.execve(argv[0], argv, {**clean, "TERM": "xterm-256color"})

    def __enter__(self) -> TerminalScreen:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.closed:
            try:
                os.kill(self.pid, 9)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        os.close(self.fd)

    def _read(self, deadline: float) -> bool:
        """One read (False at the end of output)."""
        ready, _, _ = select.select([self.fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # the child closed the pty
            data = b""
        if not data:
            return False
        self.output += data
        self.stream.feed(data)
        return True

    def expect(self, needle: bytes, *, after: int = 0, bound: float = BOUND) -> int:
        """Read until `needle` is in the output past offset `after`; where it ends."""
        deadline = time.monotonic() + bound
        while needle not in self.output[after:]:
            if time.monotonic() >= deadline or not self._read(deadline):
                raise AssertionError(f"{needle!r} never came; the screen:\n{self.text()}")
        return self.output.index(needle, after) + len(needle)

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def wait(self, bound: float = BOUND) -> int:
        """Read to the end of the output; the exit code."""
        deadline = time.monotonic() + bound
        while self._read(deadline):
            if time.monotonic() >= deadline:
                raise AssertionError(f"still running after {bound}s; the screen:\n{self.text()}")
        _, status = os.waitpid(self.pid, 0)
        self.closed = True
        return os.waitstatus_to_exitcode(status)

    def lines(self) -> list[str]:
        lines = [line.rstrip() for line in self.screen.display]
        while lines and not lines[-1]:
            lines.pop()
        return lines

    def text(self) -> str:
        return "\n".join(self.lines())

    def modes(self) -> Any:
        """The terminal's modes now (lflag: echo, canonical line editing)."""
        return termios.tcgetattr(self.fd)


def agentao_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentao", *args]


__all__ = ["BOUND", "COLUMNS", "ROWS", "TerminalScreen", "agentao_argv"]
