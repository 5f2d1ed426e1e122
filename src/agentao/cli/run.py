"""`agentao run`: one prompt to any ACP agent, streamed to the terminal or as JSON lines.

Exit codes: 0 the turn ended (also when the person at the terminal rejected a
request with `--approve ask`: a choice, not a failure), 1 an error, 2 usage, 3 a
permission was needed and the policy rejected it (or cancelled it), 130
interrupted (Ctrl-C sends `session/cancel` and waits for the turn to end; a
second Ctrl-C stops at once; Ctrl-C at a permission question is the same).

`--approve ask` asks on the event loop (`question.py`), the view paused around
the question. `--resume ID` (`-c/--continue`: the latest in `--cwd`) reopens a
session with `session/load`, or v2's `session/resume` with a replay; the history,
and whatever an agent replayed on `session/new` (`agentao --acp --resume`), is
shown before the prompt (`ConsoleView.replayed`). A prompt that is a local
command (`/help`, `/model`: `local_commands.py`) is answered here, with no turn.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from dataclasses import dataclass
from typing import Any

from agentao import loops
from agentao.cli.local_commands import (
    LocalCommand,
    help_lines,
    model_choices,
    model_lines,
    parse_local,
)
from agentao.cli.question import TerminalQuestion
from agentao.cli.remote_key import remote_agent
from agentao.cli.render import ConsoleView, JsonView
from agentao.client.client import Client
from agentao.client.config import AgentCommand, ClientPolicy
from agentao.client.errors import ClientError
from agentao.client.events import TurnEnd, Update
from agentao.client.permissions import PolicyPermissions
from agentao.client.remote import AgentUrl, is_agent_url
from agentao.client.serving import Handlers
from agentao.client.session import Session
from agentao.local_token import LocalTokenError

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_PERMISSION, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
APPROVE = {"none": "none", "reads": "reads", "all": "all", "ask": "ask"}


def _agent(text: str | None) -> AgentCommand | AgentUrl:
    """A command to start, a URL to connect to (its key: see `remote_key`), or ours."""
    if text is None:
        return AgentCommand.ours()
    if is_agent_url(text):
        return remote_agent(text)
    return AgentCommand.parse(text)


@dataclass(frozen=True, slots=True)
class RunOptions:
    agent: AgentCommand | AgentUrl
    prompt: str
    cwd: str
    policy: ClientPolicy
    setup: tuple[tuple[str, str], ...] = ()  # ("mode", id) / ("model", id), applied in order
    record: str | None = None
    protocol: int | None = None  # None: offer ACP v2, fall back to v1 (client.py)
    resume: str | None = None  # None: a new session; "": the latest in cwd; else its id


class UsageError(Exception):
    pass


def options(args: argparse.Namespace, stdin: Any = None) -> RunOptions:
    """Validate the command line (UsageError -> exit 2)."""
    stdin = stdin or sys.stdin
    prompt = args.prompt
    if prompt in (None, "-"):
        if stdin.isatty():
            raise UsageError("no prompt: pass one, or pipe it on stdin")
        prompt = stdin.read()
    if not prompt.strip():
        raise UsageError("the prompt is empty")
    try:
        agent = _agent(args.agent)
    except ValueError as exc:
        raise UsageError(f"bad --agent: {exc}") from None
    except LocalTokenError as exc:  # the gateway's token file is not one to trust
        raise UsageError(str(exc)) from None
    cwd = os.path.abspath(args.cwd or os.getcwd())
    if not os.path.isdir(cwd):
        raise UsageError(f"--cwd {cwd} is not a directory")
    setup = tuple((k, v) for k, v in (("mode", args.mode), ("model", args.model)) if v)
    policy = ClientPolicy(
        approve=APPROVE[args.approve or "none"],  # type: ignore[arg-type]
        terminal_env=tuple(args.pass_env),
    )
    protocol = getattr(args, "protocol", None)
    resume = getattr(args, "resume", None)
    if getattr(args, "continue_latest", False):
        if resume is not None:
            raise UsageError("--continue and --resume: give one")
        resume = ""  # the latest session in cwd
    return RunOptions(agent, prompt, cwd, policy, setup, args.record, protocol, resume)


def main(args: argparse.Namespace) -> int:
    """The `agentao run` entry point."""
    view = make_view(args.json, sys.stdout.isatty())
    try:
        opts = options(args)
    except UsageError as exc:
        view.error(str(exc))
        return EXIT_USAGE
    try:
        return loops.run(run(opts, view))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


async def run(opts: RunOptions, view: Any) -> int:
    """Start the agent, open a session, run the prompt, show it; the exit code."""
    question = _question(opts.policy, view)
    handlers = Handlers(permission=PolicyPermissions(opts.policy, ask=question))
    try:
        client = Client(
            opts.agent,
            policy=opts.policy,
            record=opts.record,
            protocol=opts.protocol,
            handlers=handlers,
            subagents=True,  # a child's steps are shown indented under its tool call
        )
        async with client:
            session = await open_session(client, opts)
            view.started(client, session)
            show_history(session.drain(), view)
            for what, value in opts.setup:
                await apply_setting(session, what, value)
            local = parse_local(opts.prompt)
            if local is not None:
                return await answer_locally(session, local, view)
            return await _turn(session, opts.prompt, view, question)
    except UsageError as exc:  # a setting the agent does not offer
        view.error(str(exc))
        return EXIT_USAGE
    except ClientError as exc:  # the agent failed to start, answer, or stay
        view.error(str(exc))
    return EXIT_ERROR


def show_history(events: list[Any], view: Any) -> None:
    """What came before the prompt: a history (a prompt in it) is shown as replayed; else
    (a fresh session's commands, state, …) as updates of the turn, as they always were."""
    if any(isinstance(e, Update) and e.kind == "user_message_chunk" for e in events):
        view.replayed(events)
        return
    for event in events:
        view.event(event)


def _question(policy: ClientPolicy, view: Any) -> TerminalQuestion | None:
    """`--approve ask` with a terminal to ask at: the question (None: the policy's own
    answer, which rejects when there is no one to ask)."""
    if policy.approve != "ask" or not sys.stdin.isatty():
        return None
    console = getattr(view, "console", None)
    if console is None or not console.is_terminal:  # --json, or stdout piped to a file:
        from rich.console import Console  # the person reads the question on stderr

        console = Console(stderr=True, highlight=False)
    return TerminalQuestion(view, console, remember=policy.remember)


async def open_session(client: Client, opts: RunOptions) -> Session:
    """A new session, or `--resume`'s: `session/load` (v1), else v2's `session/resume`
    with a replay from the start; its history waits in `session.drain()`."""
    if opts.resume is None:
        return await client.new_session(opts.cwd)
    session_id = opts.resume or await latest_session(client, opts.cwd)
    if client.supports("load"):
        return await client.load_session(session_id, opts.cwd)
    return await client.resume_session(session_id, opts.cwd, replay=True)


async def latest_session(client: Client, cwd: str) -> str:
    """The id of the session last updated in `cwd` (`session/list`), or UsageError."""
    if not client.supports("list"):
        raise UsageError("--continue: this agent cannot list its sessions (use --resume ID)")
    listed = await client.list_sessions(cwd)
    sessions = [s for s in getattr(listed, "sessions", None) or () if s.cwd == cwd]
    if not sessions:
        raise UsageError(f"--continue: no session to continue in {cwd}")
    return max(sessions, key=lambda s: s.updated_at or "").session_id


async def answer_locally(session: Session, command: LocalCommand, view: Any) -> int:
    """`/help` and `/model [NAME]` (local_commands.py): no turn, nothing to the model."""
    if command.name == "help":
        lines = help_lines(session.view.commands)
    elif command.argument:
        await apply_setting(session, "model", command.argument)
        lines = [f"model: {command.argument}"]
    else:
        lines = model_lines(model_choices(session.response))
    view.local_answer(lines)
    return EXIT_OK


async def apply_setting(session: Session, what: str, value: str) -> None:
    """`--mode` (checked against the modes the agent offers: UsageError if not), `--model`
    (the agent decides: an agent may take a model id it does not list)."""
    if what == "mode":
        _check("--mode", value, offered_modes(session))
        await session.set_mode(value)
    elif _has_config_option(session, "model"):
        await session.set_config_option("model", value)
    else:
        await session.set_model(value)


def offered_modes(session: Session) -> list[str]:
    return session.modes


def _check(flag: str, value: str, offered: list[str]) -> None:
    if value not in offered:
        choices = ", ".join(offered) if offered else "none"
        raise UsageError(f"{flag} {value!r} is not offered by this agent (it offers: {choices})")


def make_view(json_lines: bool, terminal: bool) -> Any:
    """JSON lines for scripts, markdown and a spinner for a person, plain text for a pipe."""
    if json_lines:
        return JsonView()
    if terminal:
        from agentao.cli.live import TerminalView

        return TerminalView()
    return ConsoleView()


async def _turn(
    session: Session, prompt: str, view: Any, question: TerminalQuestion | None = None
) -> int:
    turn = session.prompt(prompt)
    interrupted = _on_interrupt(lambda: asyncio.ensure_future(turn.cancel()))
    view.turn_started()
    try:
        end: TurnEnd | None = None
        async for event in turn:
            view.event(event)
            if isinstance(event, TurnEnd):
                end = event
                view.end_note(event, session.view.usage)
    finally:
        _restore_interrupt()
    if interrupted.is_set():
        return EXIT_INTERRUPTED
    by_person = question.rejected if question is not None else 0
    by_policy = session.denied_permissions - by_person
    if by_policy > 0:
        view.info(
            f"{by_policy} permission request(s) rejected; "
            "re-run with --approve reads|all|ask to allow them"
        )
        return EXIT_PERMISSION
    return EXIT_OK if end is not None else EXIT_ERROR


def _on_interrupt(cancel: Any) -> asyncio.Event:
    """First Ctrl-C: cancel the turn; the second one interrupts for real."""
    interrupted = asyncio.Event()
    loop = asyncio.get_running_loop()

    def handler() -> None:
        if interrupted.is_set():
            _restore_interrupt()
            os.kill(os.getpid(), signal.SIGINT)
            return
        interrupted.set()
        cancel()

    try:
        loop.add_signal_handler(signal.SIGINT, handler)
    except (NotImplementedError, RuntimeError):  # not the main thread: no handler
        pass
    return interrupted


def _restore_interrupt() -> None:
    try:
        asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)
    except (NotImplementedError, RuntimeError):
        pass


def _has_config_option(session: Session, config_id: str) -> bool:
    options = getattr(session.response, "config_options", None) or ()
    # v1 names an option `id`, v2 `configId`
    return any(
        config_id in (getattr(option, "id", None), getattr(option, "config_id", None))
        for option in options
    )


__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PERMISSION",
    "EXIT_USAGE",
    "answer_locally",
    "apply_setting",
    "main",
    "open_session",
    "run",
    "show_history",
]
