"""The interactive session: read a line, answer it here or send it, show the turn, repeat.

One `Client` (our agent as a subprocess, any agent's command, or a remote agent's URL) and
one session at a time in the current directory. Between turns prompt_toolkit owns the
keyboard (keyboard.py); during a turn the keys typed gather into a line shown under the
work (typeahead.py): Enter sends it as steering (`_session/steering`, "steering: …") to an
agent that advertises it, else keeps it to run as a prompt once the turn ends ("queued:
…"); Ctrl-C is a signal that sends `session/cancel` and drops the queued lines (the
program goes on), and `screen.Screen` prints the events. A permission
question takes the screen: the live area is paused, events that arrive meanwhile wait, one
key answers, then they are shown. At the prompt, Ctrl-C clears the line; a second one in a
row, Ctrl-D, or `/quit` ends the session with status 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Iterator
from typing import Any

from prompt_toolkit.formatted_text import FormattedText
from rich.text import Text

from agentao.cli.chat import commands
from agentao.cli.chat import rewind as _rewind  # noqa: F401  (registers /rewind)
from agentao.cli.chat.keyboard import (
    CANCEL,
    ChatCompleter,
    ask_key,
    ask_line,
    prompt_session,
    quiet_terminal,
)
from agentao.cli.chat.mentions import prompt_blocks
from agentao.cli.chat.screen import Screen
from agentao.cli.chat.sessions import (
    ChatError,
    last_session_id,
    list_sessions,
    reopen,
    session_lines,
)
from agentao.cli.chat.typeahead import TypeAhead
from agentao.cli.render import printable
from agentao.client.client import Client
from agentao.client.errors import AgentError, ClientError
from agentao.client.events import Event, ToolCallState, TurnEnd
from agentao.client.permissions import PermissionAnswer, PermissionRequest
from agentao.client.session import Session
from agentao.client.turn import Turn
from agentao.client.view import merge_tool_call, tool_call_of
from agentao.store.paths import state_dir

PROMPT = FormattedText([("bold ansicyan", "> ")])
PICKER_SESSIONS = 9  # `--resume` offers the latest sessions, one key each


class Chat:
    def __init__(self, client: Client, cwd: str, screen: Screen) -> None:
        self.client = client
        self.cwd = cwd
        self.screen = screen
        self.session: Session = None  # type: ignore[assignment]  # set by open()
        self.current_values: dict[str, Any] = {}  # config options switched in this session
        self._turn: Turn | None = None
        self._cancelling: asyncio.Future[None] | None = None
        self._held: list[Event] | None = None  # events waiting while a question is asked
        self._asking = asyncio.Lock()  # one permission question on screen at a time
        self.queued: list[str] = []  # lines typed during a turn, to run after it
        self._typeahead = TypeAhead(self._typed_line, screen.typed)
        self._steering: set[asyncio.Task[None]] = set()

    # ---- sessions ---------------------------------------------------------------------

    async def open(self, resume: str | None, continue_last: bool) -> None:
        if continue_last:
            resume = await last_session_id(self.client, self.cwd)
        elif resume == "":  # `--resume` without an id
            resume = await self.pick()
        if resume:
            await self.reopen(resume)
        else:
            await self.new_session()

    async def new_session(self) -> None:
        self.session = await self.client.new_session(self.cwd)
        self.current_values.clear()
        self.screen.note(f"session {self.session.id} · {self.cwd} · /help for commands")

    async def reopen(self, session_id: str) -> None:
        """Show `session_id`'s history and go on in it (ChatError: this agent cannot)."""
        session, history = await reopen(self.client, session_id, self.cwd)
        self.session, self.current_values = session, {}
        self.screen.note(f"resumed session {session.id} · {self.cwd}")
        self.screen.replayed(history)

    async def pick(self) -> str:
        """`--resume` without an id: one key picks one of the latest sessions here."""
        found = (await list_sessions(self.client, self.cwd))[:PICKER_SESSIONS]
        if not found:
            raise ChatError(f"no session to resume in {self.cwd}")
        for line in session_lines(found):
            self.screen.note(line)
        keys = [str(i) for i in range(1, len(found) + 1)]
        key = await ask_key(FormattedText([("bold", f"resume which (1-{len(found)})? ")]), keys)
        if key == CANCEL:
            raise ChatError("no session chosen")
        return found[int(key) - 1].session_id

    def option(self, category: str) -> Any:
        """The session's config option of `category` (model, mode, ...), if it has one."""
        for option in getattr(self.session.response, "config_options", None) or ():
            if getattr(option, "category", None) == category:
                return option
        return None

    # ---- the loop ---------------------------------------------------------------------

    async def loop(self) -> int:
        completer = ChatCompleter(self.cwd, lambda: commands.completions(self))
        reader = prompt_session(state_dir(), completer)
        interrupted = False
        while True:
            try:
                typed, self._typeahead.typed = self._typeahead.typed, ""
                line = await reader.prompt_async(PROMPT, default=typed)  # typed, not sent
            except KeyboardInterrupt:  # Ctrl-C at the prompt: the line is gone
                if interrupted:
                    return 0
                interrupted = True
                self.screen.note("(Ctrl-C again or Ctrl-D to quit)")
                continue
            except EOFError:
                return 0
            interrupted = False
            if await self._answer_all(line.strip()) == commands.QUIT:
                return 0

    async def _answer_all(self, line: str) -> str:
        """The line, then each line typed during its turns and queued, in order."""
        while True:
            try:
                if await self.answer(line) == commands.QUIT:
                    return commands.QUIT
            except AgentError as exc:  # it refused this one request; the session goes on
                self.screen.pause()
                self.screen.error(str(exc))
            if not self.queued:
                return commands.DONE
            line = self.queued.pop(0)
            self.screen.console.print(Text("> ", style="bold cyan") + Text(printable(line)))

    async def answer(self, line: str) -> str:
        """One line: a local shell command, a command, or a prompt."""
        if not line:
            return commands.DONE
        if line.startswith("!"):
            await self.shell(line[1:].strip())
            return commands.DONE
        if line.startswith("/"):
            outcome = await commands.dispatch(self, line)
            if outcome != commands.SEND:
                return outcome
        await self.prompt(line)
        return commands.DONE

    async def shell(self, command: str) -> None:
        """`!cmd`: run on this terminal, in the session's directory; never sent."""
        if not command:
            return
        with _ignore_interrupt():  # Ctrl-C reaches the command, not us
            process = await asyncio.create_subprocess_shell(command, cwd=self.cwd)
            code = await process.wait()
        if code < 0:  # the terminal echoed ^C where the cursor was: the note gets its own line
            self.screen.note(f"\n! exit {code} (stopped by signal {-code})")
        else:
            self.screen.note(f"! exit {code}")

    async def prompt(self, line: str) -> None:
        mentions = prompt_blocks(line, self.cwd, embed=self.embeds())
        for refused in mentions.refused:
            self.screen.note(f"not sent: {refused}")
        turn = self.session.prompt(mentions.blocks)
        self._turn = turn
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, self.cancel)
        self.screen.turn_started()
        try:
            with quiet_terminal():
                self._typeahead.start()
                async for event in turn:
                    self.show(event)
        finally:
            self._typeahead.stop()
            self.screen.typed("")
            loop.remove_signal_handler(signal.SIGINT)
            self._turn = None
            self.screen.pause()
            await self._steered()

    def show(self, event: Event) -> None:
        if self._held is not None:
            self._held.append(event)
        elif isinstance(event, TurnEnd):
            self.screen.turn_ended(event, self.session.view.usage)
        else:
            self.screen.event(event)

    def _typed_line(self, line: str) -> None:
        """A line typed during the turn: steering where the agent takes it, else queued."""
        if self.session.steerable and not line.startswith(("/", "!")):
            task = asyncio.ensure_future(self._steer(line))
            self._steering.add(task)
            task.add_done_callback(self._steering.discard)
            return
        self.queued.append(line)
        self.screen.flush()
        self.screen.note(f"queued: {line} (runs after this turn)")

    async def _steer(self, line: str) -> None:
        """`_session/steering`; a turn already over keeps the line for the next prompt."""
        try:
            outcome = await self.session.steer(line, idle_behavior="promptRequired")
        except ClientError as exc:
            outcome = f"refused ({exc})"
        self.screen.flush()
        if outcome == "injected":
            self.screen.note(f"steering: {line}")
        else:
            self.queued.append(line)
            self.screen.note(f"queued: {line} (the turn had ended)")

    async def _steered(self) -> None:
        """Steering still on its way when the turn ends: its answer decides where it goes."""
        if self._steering:
            await asyncio.wait(set(self._steering))

    def cancel(self) -> None:
        """Ctrl-C during a turn: `session/cancel`, and lines queued for after it dropped;
        the session goes on."""
        if self._turn is not None and not self._turn.done:
            self.screen.flush()  # what came so far goes above the note, in order
            if self.queued:
                self.screen.note(f"dropped {len(self.queued)} queued line(s)")
                self.queued.clear()
            self.screen.note("cancelling…")
            self._cancelling = asyncio.ensure_future(self._turn.cancel())

    def embeds(self) -> bool:
        """Whether the agent takes embedded resources in a prompt (else: links)."""
        init = self.client.init
        if self.client.protocol_version == 2:
            session = getattr(getattr(init, "capabilities", None), "session", None)
            prompt = getattr(session, "prompt", None)
            return getattr(prompt, "embedded_context", None) is not None
        caps = getattr(getattr(init, "agent_capabilities", None), "prompt_capabilities", None)
        return bool(getattr(caps, "embedded_context", False))

    # ---- permissions ------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _taking_screen(self) -> AsyncIterator[None]:
        """A question has the screen: the live area off, events held until it is answered."""
        async with self._asking:
            self._held = []
            self._typeahead.stop()  # the question reads the keyboard now
            self.screen.pause()
            try:
                yield
            finally:
                if self._turn is not None and not self._turn.done:
                    self._typeahead.start()
                held, self._held = self._held, None
                if self._turn is not None and not self._turn.done:
                    self.screen.resume()
                for event in held:
                    self.show(event)

    async def ask(self, request: PermissionRequest) -> PermissionAnswer:
        """The agent asks permission: show the call, one key answers."""
        async with self._taking_screen():
            self.screen.question(request, self._proposed(request))
            keys = [str(i) for i in range(1, len(request.options) + 1)]
            key = await ask_key(_choices(request), keys)
        if key == CANCEL:
            self.cancel()
            return PermissionAnswer(None, "the person at the terminal cancelled the turn")
        option = request.options[int(key) - 1]
        reason = f"the person at the terminal chose {option.name or option.kind}"
        return PermissionAnswer(option.option_id, reason)

    async def ask_user(self, session_id: str, question: str) -> str | None:
        """The agent's question to the person (`_agentao.cn/ask_user`): a line answers;
        Ctrl-C cancels the turn (None: the agent is told no one answered)."""
        async with self._taking_screen():
            self.screen.asked(question)
            try:
                return await ask_line()
            except (KeyboardInterrupt, EOFError):
                self.cancel()
                return None

    def _proposed(self, request: PermissionRequest) -> ToolCallState | None:
        """The call as announced, with what the question itself carries (a proposed diff)."""
        known = self.session.tool_calls.get(request.tool_call_id)
        asked = tool_call_of(request.tool_call) if request.tool_call else None
        return merge_tool_call(known, asked) if asked is not None else known


def _choices(request: PermissionRequest) -> FormattedText:
    parts: list[tuple[str, str]] = []
    for i, option in enumerate(request.options, 1):
        style = "ansigreen" if option.allows else "ansired"
        name = printable(option.name or option.kind)
        parts += [("bold", f"  {i} "), (style, name), ("", "\n")]
    parts.append(("bold", f"answer 1-{len(request.options)} (Ctrl-C cancels the turn) "))
    return FormattedText(parts)


@contextlib.contextmanager
def _ignore_interrupt() -> Iterator[None]:
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, lambda: None)
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)


__all__ = ["PROMPT", "Chat"]
