"""Local commands: answered here, never sent to the model.

`/help`, `/model [ID]`, `/mode [ID]`, `/sessions`, `/resume ID`, `/clear` (a new session),
`/compact` (sent as the agent's own command, when it offers one), `/thoughts [on|off]` (the
last thought whole, or every thought from now on), `/expand [N]` (a cut output whole),
`/rewind` (rewind.py), `/quit`. Any other
`/name` the agent announced in `available_commands_update` is sent to it as `/name args`;
a name neither knows is refused here, so a typo never costs a model request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from agentao.cli.chat.screen import Screen
from agentao.cli.chat.sessions import ChatError, list_sessions, session_lines
from agentao.cli.local_commands import config_id, option_choices
from agentao.client.client import Client
from agentao.client.session import Session


class Chat(Protocol):
    """What a command uses of the session (app.Chat; named here, not imported: app runs
    the commands)."""

    client: Client
    cwd: str
    screen: Screen
    session: Session
    current_values: dict[str, Any]

    async def new_session(self) -> None: ...
    async def reopen(self, session_id: str) -> None: ...
    def option(self, category: str) -> Any: ...


QUIT = "quit"  # what a command returns to end the session
SEND = "send"  # ... to send the line to the agent as it is
DONE = "done"  # ... when it was answered here
Command = Callable[[Chat, str], Awaitable[str]]

LOCAL: dict[str, tuple[str, Command]] = {}


def local(name: str, description: str) -> Callable[[Command], Command]:
    def register(fn: Command) -> Command:
        LOCAL[name] = (description, fn)
        return fn

    return register


async def dispatch(chat: Chat, line: str) -> str:
    """Run `line` (`/name args`): QUIT, SEND (the agent's command) or DONE."""
    name, _, args = line[1:].partition(" ")
    if name in LOCAL:
        return await LOCAL[name][1](chat, args.strip())
    if name in agent_commands(chat):
        return SEND
    chat.screen.error(f"unknown command /{name} (/help lists them)")
    return DONE


def agent_commands(chat: Chat) -> dict[str, str]:
    return {c.name: c.description for c in chat.session.view.commands}


def completions(chat: Chat) -> list[tuple[str, str]]:
    """Every command for the completer: local ones first, then the agent's."""
    names = [(name, description) for name, (description, _) in LOCAL.items()]
    names += [(n, d) for n, d in agent_commands(chat).items() if n not in LOCAL]
    return names


@local("help", "this list")
async def _help(chat: Chat, args: str) -> str:
    screen = chat.screen
    screen.note("local commands (answered here, never sent to the model):")
    for name, (description, _) in LOCAL.items():
        screen.note(f"  /{name:<10} {description}")
    theirs = {n: d for n, d in agent_commands(chat).items() if n not in LOCAL}
    if theirs:
        screen.note("the agent's commands (sent to it):")
        for name, description in theirs.items():
            screen.note(f"  /{name:<10} {description}")
    screen.note(
        "@path sends a file along · !cmd runs a shell line here · Esc-Enter or Ctrl-J: newline"
    )
    return DONE


@local("quit", "end the session (Ctrl-D does too)")
async def _quit(chat: Chat, args: str) -> str:
    return QUIT


@local("clear", "start a new session in this directory")
async def _clear(chat: Chat, args: str) -> str:
    await chat.new_session()
    return DONE


@local("sessions", "the sessions of this directory")
async def _sessions(chat: Chat, args: str) -> str:
    try:
        found = await list_sessions(chat.client, chat.cwd)
    except ChatError as exc:
        chat.screen.error(str(exc))
        return DONE
    for line in session_lines(found) or ["no sessions"]:
        chat.screen.note(line)
    return DONE


@local("resume", "/resume ID: reopen a session of this directory, with its history")
async def _resume(chat: Chat, args: str) -> str:
    if not args:
        chat.screen.error("which session? /sessions lists them")
        return DONE
    try:
        await chat.reopen(args)
    except ChatError as exc:  # this agent cannot reopen sessions: the current one goes on
        chat.screen.error(str(exc))
    return DONE


@local("compact", "summarize the older conversation (the agent's /compact)")
async def _compact(chat: Chat, args: str) -> str:
    if "compact" in agent_commands(chat):
        return SEND
    chat.screen.error("this agent offers no /compact")
    return DONE


@local("thoughts", "/thoughts [on|off]: the last thought in full; on: every thought from now")
async def _thoughts(chat: Chat, args: str) -> str:
    if args in ("on", "off"):
        chat.screen.show_thoughts(args == "on")
        chat.screen.note(f"thoughts: {'shown in full' if args == 'on' else 'collapsed'}")
    elif args:
        chat.screen.error(f"/thoughts takes on or off, not {args!r}")
    elif not chat.screen.show_thought():
        chat.screen.note("no thought yet")
    return DONE


@local("expand", "/expand [N]: a cut tool output in full (the last one without N)")
async def _expand(chat: Chat, args: str) -> str:
    if args and not (args.isascii() and args.isdigit() and len(args) <= 9):
        chat.screen.error(f"/expand takes the number a cut output names, not {args!r}")
        return DONE
    kept = sorted(chat.screen.cut_outputs)
    if not chat.screen.expand(int(args) if args else None):
        which = f"{kept[0]} to {kept[-1]}" if kept else "none yet"
        chat.screen.error(f"no cut output {args or 'yet'} (kept: {which})")
    return DONE


@local("mode", "/mode [ID]: list the agent's modes, or switch")
async def _mode(chat: Chat, args: str) -> str:
    offered = chat.session.modes
    if not args:
        current = chat.session.current_mode
        for mode in offered or ["(this agent offers no modes)"]:
            chat.screen.note(f"{'*' if mode == current else ' '} {mode}")
        return DONE
    if args not in offered:
        chat.screen.error(f"no mode {args!r} (offered: {', '.join(offered) or 'none'})")
        return DONE
    await chat.session.set_mode(args)
    chat.screen.mode(args)
    return DONE


@local("model", "/model [ID]: list the agent's models, or switch")
async def _model(chat: Chat, args: str) -> str:
    option = chat.option("model")
    if option is None and not args:
        chat.screen.error("this agent lists no models")
        return DONE
    if not args:
        current = chat.current_values.get(config_id(option), getattr(option, "current_value", None))
        for value, name in option_choices(option):
            chat.screen.note(f"{'*' if value == current else ' '} {value}  {name}")
        return DONE
    if option is not None:
        offered = [value for value, _ in option_choices(option)]
        if args not in offered:
            chat.screen.error(f"no model {args!r} (offered: {', '.join(offered)})")
            return DONE
        await chat.session.set_config_option(config_id(option), args)
        chat.current_values[config_id(option)] = args
    else:  # an agent without the option may still take an id (agentao's own extension)
        args = await chat.session.set_model(args)
    chat.screen.note(f"model: {args}")
    return DONE


__all__ = ["DONE", "LOCAL", "QUIT", "SEND", "Chat", "agent_commands", "completions", "dispatch"]
