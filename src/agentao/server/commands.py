"""Slash commands over ACP: offered with `available_commands_update` after `session/new`
and `session/load` (over v2 in the new, resume and fork results: `commands_v2`), and run
when a prompt starts with one (agent/commands.py).

Each command is a turn of its own: it claims the session like a prompt (so a second
prompt is "busy" and `session/cancel` stops it), its events go out as updates, and it
is committed to the history, so `session/load` replays "/model gpt-4o" and its answer.
A command that fails (an unknown provider, say) answers in words and ends the turn.
"""

from __future__ import annotations

from typing import Any

from agentao.agent.ceiling import ModeAboveCeiling
from agentao.agent.commands import (
    COMMANDS,
    Invocation,
    clear_context,
    init_prompt,
    parse_command,
    say,
)
from agentao.agent.config import Limits as TurnLimits
from agentao.agent.config import split_model_value
from agentao.agent.events import TurnEnded, TurnEvent
from agentao.agent.providers.messages import UserMessage
from agentao.agent.turn import compact_now, drive_turn
from agentao.protocol.decode import to_builtins
from agentao.protocol.errors import AcpError, InvalidParams
from agentao.protocol.v2.from_v1 import command
from agentao.server import config_options as opts
from agentao.server.live import LiveSession
from agentao.server.models import switch_model
from agentao.server.settings import ServerSettings
from agentao.server.turns import Body
from agentao.server.updates import (
    available_commands_update,
    config_option_update,
    current_mode_update,
)


def commands_update() -> object:
    return available_commands_update(COMMANDS)


def commands_v2() -> list[dict[str, Any]]:
    """The commands as v2's `availableCommands`, which v2 puts in the session/new, resume
    and fork results themselves (so a client has them before the reply, as v1's load)."""
    wire = to_builtins(commands_update())
    return [command(c) for c in wire["availableCommands"]]


def prompt_body(
    live: LiveSession, message: UserMessage, shown: str, settings: ServerSettings
) -> Body:
    """What a prompt runs: a command it names, else an ordinary turn."""
    limits = settings.turn
    invocation = parse_command(message.text) if not message.images else None
    if invocation is None:
        return lambda: drive_turn(live.agent, message, live.deps(limits), live.emit, shown)
    name = invocation.name
    if name == "compact":
        return lambda: _compact(live, shown, limits)
    if name == "init":
        return lambda: _init(live, shown, limits)
    if name == "clear":
        return lambda: _clear(live, shown)
    return lambda: _configure(live, invocation, shown, settings)


async def _compact(live: LiveSession, shown: str, limits: TurnLimits) -> TurnEnded:
    deps = live.deps(limits)
    events = compact_now(live.agent, deps, shown)
    return await drive_turn(live.agent, shown, deps, live.emit, events=events)


async def _init(live: LiveSession, shown: str, limits: TurnLimits) -> TurnEnded:
    ended = await drive_turn(live.agent, init_prompt(), live.deps(limits), live.emit, shown)
    live.system = None  # a new AGENTS.md goes into the next turn's system prompt
    return ended


async def _clear(live: LiveSession, shown: str) -> TurnEnded:
    events = clear_context(live.agent, shown)
    live.context.meter.forget()
    live.system = None
    return await _emit_all(live, events, usage=True)


async def _configure(
    live: LiveSession, invocation: Invocation, shown: str, settings: ServerSettings
) -> TurnEnded:
    """`/model <id>` and `/mode <id>`."""
    value = invocation.argument
    if not value:
        hint = invocation.command.hint or ""
        return await _emit_all(live, say(live.agent, shown, f"Usage: /{invocation.name} <{hint}>"))
    try:
        if invocation.name == "model":
            provider, model = split_model_value(value, live.llm.provider_id)
            await switch_model(live, provider, model, settings.context)
            await live.send(config_option_update(opts.model_options(live.llm, live.catalog)))
            text = f"Model: {live.llm.model_value} ({live.context.window.tokens:,} token window)"
        else:
            mode = await apply_mode(live, value)
            text = f"Mode: {mode}"
    except AcpError as exc:
        text = f"/{invocation.name} {value}: {exc}"
    return await _emit_all(live, say(live.agent, shown, text), usage=invocation.name == "model")


async def apply_mode(live: LiveSession, mode_id: str) -> str:
    """Set the session's mode (a preset changes the permissions; seed C.10), never above
    the process's ceiling (agent/ceiling.py): -32602 with `data.reason: "above_ceiling"`."""
    mode = opts.mode_value(mode_id)
    try:
        live.ceiling.check(mode)
    except ModeAboveCeiling as exc:
        raise InvalidParams(
            f"Invalid params: {exc}",
            {"field": "modeId", "reason": "above_ceiling", "ceiling": exc.highest},
        ) from None
    live.agent.mode_id = mode
    if mode in opts.PRESETS:  # other ids are UI state: the posture stays as it is
        live.engine.mode = mode
        live.agent.meta["posture"] = mode
    await live.send(current_mode_update(mode))
    await live.save_state()
    return mode


async def _emit_all(live: LiveSession, events: list[TurnEvent], usage: bool = False) -> TurnEnded:
    for event in events[:-1]:
        await live.emit(event)
    if usage:
        await live.prepare()
        await live.emit(live.usage())
    ended = events[-1]
    assert isinstance(ended, TurnEnded)
    return ended


__all__ = ["apply_mode", "commands_update", "commands_v2", "prompt_body"]
