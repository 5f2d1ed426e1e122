"""What a person types while the agent works: one line at a time, steering or queued.

During a turn the terminal is quiet (keyboard.py `quiet_terminal`: no echo, no line
editing), so this reads the keys itself from the event loop: printable characters gather
into a line that the live area shows (screen.py), Backspace takes one back, Enter hands the
line on, escape sequences (arrows, function keys) and other control keys are dropped, and
Ctrl-C stays the signal that cancels the turn. The chat (app.py) sends a handed-on line as
steering when the agent advertises it, else keeps it to run as a prompt after the turn.
A question from the agent takes the keyboard: `stop()` before it, `start()` after. A line
still being typed when the turn ends is the next prompt's start, to finish or send.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import sys
from collections.abc import Callable
from typing import Final

MAX_TYPED_CHARS: Final = 4000  # a line typed during a turn is cut here (a paste, say)
ERASE: Final = frozenset({"\x7f", "\x08"})
ENTER: Final = frozenset({"\r", "\n"})


class TypeAhead:
    """Keys typed during a turn, gathered into lines (`on_line`); `on_change` redraws."""

    def __init__(self, on_line: Callable[[str], None], on_change: Callable[[str], None]) -> None:
        self.on_line = on_line
        self.on_change = on_change
        self.typed = ""
        self._escape = False
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._fd = sys.stdin.fileno() if sys.stdin.isatty() else None
        self._reading = False

    def start(self) -> None:
        """Read the keyboard from now on (nothing to read without a terminal)."""
        if self._fd is not None and not self._reading:
            asyncio.get_running_loop().add_reader(self._fd, self._read)
            self._reading = True

    def stop(self) -> None:
        if self._reading:
            asyncio.get_running_loop().remove_reader(self._fd)  # type: ignore[arg-type]
            self._reading = False

    def _read(self) -> None:
        try:
            data = os.read(self._fd, 1024)  # type: ignore[arg-type]
        except OSError:
            data = b""
        if not data:  # the terminal is gone: nothing more to read
            self.stop()
            return
        for char in self._decoder.decode(data):
            self.feed(char)

    def feed(self, char: str) -> None:
        """One key: part of a line, an edit of it, its end, or nothing."""
        if self._escape:  # an escape sequence ends with a letter or "~"
            self._escape = not (char.isalpha() or char == "~")
            return
        if char == "\x1b":
            self._escape = True
        elif char in ENTER:
            line, self.typed = self.typed.strip(), ""
            self.on_change(self.typed)
            if line:
                self.on_line(line)
        elif char in ERASE:
            self.typed = self.typed[:-1]
            self.on_change(self.typed)
        elif char >= " " and len(self.typed) < MAX_TYPED_CHARS:
            self.typed += char
            self.on_change(self.typed)


__all__ = ["MAX_TYPED_CHARS", "TypeAhead"]
