"""`agentao` with no command: an interactive session in the terminal, and `agentao sessions`.

prompt_toolkit reads the keyboard (multi-line editing, history, completion, key bindings)
and rich prints the turn into the terminal's scrollback (markdown, highlighted code, diffs):
an inline session, as gemini-cli, qwen-code and Claude Code are, that leaves the
conversation in the scrollback when it ends (docs/terminal.md says why not full-screen).

    app.py       the loop: a line is a local command, `!cmd`, or a prompt; turns; questions
    screen.py    the events as rich output; the live area (spinner, elapsed time)
    keyboard.py  the prompt (history file, completion) and the one-key question
    commands.py  /help, /model, /mode, /sessions, /resume, /clear, /compact, /quit
    mentions.py  `@path` as embedded resources (or links), confined to the workspace
    sessions.py  list, continue and resume the sessions of a directory

Exit codes: 0 the person ended the session, 1 the agent failed (to start, or on the way),
2 usage (a bad --agent, a session to continue that is not there).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from agentao import loops
from agentao.client.config import AgentCommand, ClientPolicy
from agentao.client.errors import ClientError
from agentao.client.remote import AgentUrl, is_agent_url
from agentao.local_token import LocalTokenError

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
PROVIDER_HINT = (
    "agentao's agent needs an LLM provider: `agentao doctor` checks its settings, "
    "`agentao demo` runs a session without one"
)


def agent_of(text: str | None) -> AgentCommand | AgentUrl:
    """Our agent (`agentao --acp`), a command to start, or a remote agent's URL."""
    if text is None:
        return AgentCommand.ours()
    if is_agent_url(text):
        from agentao.cli.remote_key import remote_agent

        return remote_agent(text)
    return AgentCommand.parse(text)


def main(args: argparse.Namespace) -> int:
    """`agentao [--agent CMD|URL] [-c | --resume [ID]]`."""
    from agentao.cli.chat.screen import Screen

    if not sys.stdin.isatty():
        return _usage("the interactive session needs a terminal (for one prompt: agentao run)")
    try:
        agent = agent_of(args.chat_agent)
    except (ValueError, LocalTokenError) as exc:
        return _usage(f"bad --agent: {exc}")
    return loops.run(_session(agent, os.getcwd(), args, Screen()))


def _usage(text: str) -> int:
    """A usage error, on stderr (stdout may be a pipe a script reads)."""
    sys.stderr.write(f"agentao: {text}\n")
    return EXIT_USAGE


async def _session(agent: Any, cwd: str, args: argparse.Namespace, screen: Any) -> int:
    from agentao.cli.chat.app import Chat
    from agentao.cli.chat.sessions import ChatError
    from agentao.client.client import Client
    from agentao.client.serving import Handlers

    chat: Chat | None = None

    async def ask(request: Any) -> Any:
        assert chat is not None  # questions come only once a session is open
        return await chat.ask(request)

    async def ask_user(session_id: str, question: str) -> str | None:
        assert chat is not None
        return await chat.ask_user(session_id, question)

    # Every always-option the agent offers may be chosen by the person (key 2): `remember`.
    policy = ClientPolicy(approve="ask", remember=True)
    opened = False
    try:
        async with Client(
            agent,
            policy=policy,
            handlers=Handlers(permission=ask, ask_user=ask_user),
            subagents=True,  # a child's steps are shown indented under its tool call
        ) as client:
            chat = Chat(client, cwd, screen)
            try:
                await chat.open(args.resume, args.continue_last)
            except ChatError as exc:
                screen.error(str(exc))
                return EXIT_USAGE
            opened = True
            return await chat.loop()
    except ClientError as exc:
        screen.error(str(exc))
        if not opened and agent == AgentCommand.ours():  # most likely: no provider set up
            screen.note(PROVIDER_HINT)
        return EXIT_ERROR


def sessions_main(args: argparse.Namespace) -> int:
    """`agentao sessions`: the sessions of this directory, the latest first (errors on
    stderr)."""
    from rich.console import Console

    from agentao.cli.chat.screen import Screen

    try:
        agent = agent_of(args.chat_agent)
    except (ValueError, LocalTokenError) as exc:
        return _usage(f"bad --agent: {exc}")
    return loops.run(_list(agent, os.getcwd(), Screen(Console(stderr=True))))


async def _list(agent: Any, cwd: str, screen: Any) -> int:
    from agentao.cli.chat.sessions import ChatError, list_sessions, session_lines
    from agentao.client.client import Client

    try:
        async with Client(agent) as client:
            found = await list_sessions(client, cwd)
    except ChatError as exc:
        screen.error(str(exc))
        return EXIT_ERROR
    except ClientError as exc:
        screen.error(str(exc))
        return EXIT_ERROR
    from agentao.cli.render import printable

    for line in session_lines(found) or [f"no sessions in {cwd}"]:
        print(printable(line))  # titles are the agent's words
    return EXIT_OK


__all__ = [
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_USAGE",
    "PROVIDER_HINT",
    "agent_of",
    "main",
    "sessions_main",
]
