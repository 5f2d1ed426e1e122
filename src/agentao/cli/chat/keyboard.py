"""The interactive session's input: the prompt line and the permission question's keys.

prompt_toolkit reads the keyboard, only while nothing else draws: the prompt between turns
(multi-line: Enter sends, Esc-Enter or Ctrl-J inserts a newline; history in a file of the
state directory, kept across sessions; `/command` and `@path` completion), and the
permission question during a turn (one key: a digit picks the agent's option, Ctrl-C
cancels the turn). During a turn nothing reads the keyboard: `quiet_terminal` turns the
echo off (typed keys would land in the live area) and leaves Ctrl-C a signal.
"""

from __future__ import annotations

import contextlib
import os
import sys
import termios
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.application import Application
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl

HISTORY_NAME = "chat_history"
MENTION_SCAN_FILES = 5000  # files looked at for `@path` completion (a huge tree stops here)
SKIPPED_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv"})
CANCEL = "cancel"  # what the permission question returns on Ctrl-C


class ChatCompleter(Completer):
    """`/name` at the start of the line: local and agent commands; `@path`: workspace files."""

    def __init__(self, cwd: str, commands: Callable[[], list[tuple[str, str]]]) -> None:
        self.cwd = cwd
        self.commands = commands  # () -> [(name, description)], asked on every key

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterator[Completion]:
        before = document.text_before_cursor
        word = before.split()[-1] if before.split() and not before.endswith(" ") else ""
        if before.startswith("/") and " " not in before:
            for name, description in self.commands():
                if name.startswith(before[1:]):
                    # the first line only, as plain text: the agent's words are no style
                    meta = description.splitlines()[0] if description.strip() else ""
                    yield Completion(f"/{name}", -len(before), display_meta=meta)
        elif word.startswith("@"):
            for path in workspace_files(self.cwd, word[1:]):
                yield Completion(f"@{path}", -len(word))


def workspace_files(cwd: str, prefix: str, limit: int = MENTION_SCAN_FILES) -> Iterator[str]:
    """Workspace paths (relative, `/`-separated) containing `prefix`, hidden dirs skipped."""
    seen = 0
    for root, dirs, files in os.walk(cwd):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
        for name in sorted(files):
            seen += 1
            if seen > limit:
                return
            rel = os.path.relpath(os.path.join(root, name), cwd)
            if prefix in rel:
                yield rel


def input_bindings() -> KeyBindings:
    """Enter sends; Esc-Enter and Ctrl-J insert a newline."""
    bindings = KeyBindings()

    @bindings.add("escape", "enter")
    @bindings.add("c-j")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    return bindings


def prompt_session(state: Path, completer: Completer) -> PromptSession[str]:
    """The prompt, its history kept in `state/chat_history` (0600: prompts may be private)."""
    state.mkdir(parents=True, exist_ok=True, mode=0o700)
    history = state / HISTORY_NAME
    history.touch(mode=0o600, exist_ok=True)
    return PromptSession(
        history=FileHistory(str(history)),
        completer=completer,
        complete_while_typing=True,
        key_bindings=input_bindings(),
        multiline=False,
        prompt_continuation=lambda width, line, wrap: "· ".rjust(width),
    )


async def ask_key(question: FormattedText, keys: Iterable[str]) -> str:
    """Show `question` and return the first of `keys` pressed, or CANCEL on Ctrl-C/Ctrl-D."""
    bindings = KeyBindings()
    for key in keys:
        bindings.add(key)(lambda event, key=key: event.app.exit(result=key))
    bindings.add("c-c")(lambda event: event.app.exit(result=CANCEL))
    bindings.add("c-d")(lambda event: event.app.exit(result=CANCEL))
    app: Application[str] = Application(
        layout=Layout(Window(FormattedTextControl(question), dont_extend_height=True)),
        key_bindings=bindings,
        full_screen=False,
    )
    # handle_sigint=False: it would take over SIGINT and, leaving, remove the turn's handler
    # (Ctrl-C would no longer cancel the turn after a question). Ctrl-C here is a key.
    return await app.run_async(handle_sigint=False)


async def ask_line() -> str:
    """One line typed in answer to the agent's question (KeyboardInterrupt on Ctrl-C)."""
    session: PromptSession[str] = PromptSession(key_bindings=input_bindings())
    # handle_sigint=False: as in ask_key, the turn's Ctrl-C handler stays in place
    return await session.prompt_async(FormattedText([("bold", "answer> ")]), handle_sigint=False)


@contextlib.contextmanager
def quiet_terminal() -> Iterator[None]:
    """During a turn: no echo, no line editing (keys would land in the live area); Ctrl-C
    stays a signal. The terminal's settings come back as they were, whatever happens."""
    fd = sys.stdin.fileno() if sys.stdin.isatty() else None
    if fd is None:
        yield
        return
    saved = termios.tcgetattr(fd)
    quiet = termios.tcgetattr(fd)
    quiet[3] &= ~(termios.ECHO | termios.ICANON)
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)


__all__ = [
    "CANCEL",
    "HISTORY_NAME",
    "MENTION_SCAN_FILES",
    "ChatCompleter",
    "ask_key",
    "ask_line",
    "input_bindings",
    "prompt_session",
    "quiet_terminal",
    "workspace_files",
]
