"""What a v2 client asks through the bridge that a v1 agent names otherwise, or cannot do.

The bridge (bridge.py) translates what the gateway sends a v2 client; this module
answers the v2 methods whose v1 counterpart differs (service.py hands them here):

session/set_config_option   v2 has modes only as the `mode` config option (category
    `mode`): `configId: "mode"` becomes the agent's v1 `session/set_mode`, held to the
    key's ceiling first (a mode the ceiling does not name is -32602 "above this API
    key's ceiling", as our own agent answers a v2 mode above its ceiling, and nothing
    is sent to the agent); any other option goes to the agent's v1
    `session/set_config_option` (v2's `type: "id"` tag dropped: v1's default) under the
    ceiling's option rules (limits.py). The answer is v2's whole config: the mode option
    (the agent's modes the ceiling allows, the current one) and the agent's options;
    `session/new` and `session/resume` through the bridge answer the same config
    (`session_config`), so a v2 client can find the mode option at all.
On a v2 agent (any agent that speaks both, under `auto`) the same answers hold: the
agent's own mode option is replaced by the ceiling's view of it (under the agent's
`configId`), and other options are passed on in v2 as they came.
tool_call/cancel   on a v2 agent, passed to it when the id is one of this session's tool
    calls (the calls its updates named, which the log holds too; the agent answers for
    one that no longer runs), else -32602 `unknown` and nothing is sent: a client reaches
    only the calls of a session it is attached to (service.py: another key's session is
    not found). On a v1 agent -32602 `not_cancellable`: v1 cannot stop one tool call
    (only the turn, `session/cancel`), so the bridge never advertises
    `capabilities.cancel` there (bridge.py drops it) and refuses the request.
terminal/cancel    on a v2 agent, passed to it when the id is one of the agent's own
    terminals this session's updates named (agent_terminals.py); else -32602 `unknown`
    and nothing is sent (a v1 agent has no terminals of its own to name).
session/set_title   (unstable, advertised as `session.title` to every v2 client and as
    `sessionCapabilities.title` to every v1 client, whose unstable schema has it too)
    the gateway's own, whatever the agent or the client's version: the conversation's
    title, as a person's rename (`Conversations.rename`: the web UI's list,
    `/v1/conversations` and `session/list` show it, and the agent's later titles keep
    off it); normalized to one line and answered `{title}` as stored; empty or above
    `[limits] max_title_chars` is -32602. The session's remote clients (the caller's
    other sessions' readers included) hear it as a `session_info_update` in the
    conversation's log: the agent's own, where an agent that advertises the title
    capability (in either version) holds the session live (the title is passed on to
    it, so its store and its later titles keep it), else the gateway's.

A v2 client of a session another replica holds has these passed on to the holder once
(far.py), which answers them here as for its own clients (`held_call`); a v1 client's
`session/set_mode` and `session/set_config_option` too (v1_calls.held_v1_call).
"""

from __future__ import annotations

import logging
from typing import Any

from agentao.client import ClientError, Session
from agentao.gateway.agent_protocol import mode_option, speaks_v2
from agentao.gateway.auth import Principal
from agentao.gateway.config import AgentSpec
from agentao.gateway.remote.clients import RemoteClient
from agentao.gateway.remote.limits import check_change
from agentao.gateway.remote.v1_calls import V1_ON_V2_METHODS, held_v1_call
from agentao.gateway.titles import person_title
from agentao.protocol.decode import to_builtins
from agentao.protocol.errors import AcpError, InternalError, InvalidParams, MethodNotFound
from agentao.protocol.v2.from_v1 import command, config_option_v2, state_update
from agentao.protocol.v2.to_v1 import MODE_CATEGORY, set_config_params_v1

log = logging.getLogger("agentao.gateway")

MODE_CONFIG_ID = "mode"  # v2's config option for what v1 calls the session's mode
SET_CONFIG = "session/set_config_option"
CANCEL_TOOL_CALL = "tool_call/cancel"
CANCEL_TERMINAL = "terminal/cancel"
SET_TITLE = "session/set_title"  # unstable; the gateway's own (the conversation's title)
BRIDGED_METHODS = frozenset({SET_CONFIG, CANCEL_TOOL_CALL, CANCEL_TERMINAL})


async def bridged_call(
    principal: Principal, spec: AgentSpec, session: Session, method: str, params: dict[str, Any]
) -> dict[str, Any]:
    """Answer one of BRIDGED_METHODS for a v2 client on the v1 `session`."""
    if method == CANCEL_TOOL_CALL:
        return await _cancel_tool_call(session, params.get("toolCallId"))
    if method == CANCEL_TERMINAL:
        return await _cancel_terminal(session, params.get("terminalId"))
    if params.get("configId") == mode_id(session) and session.modes:
        await _set_mode(principal, spec, session, params.get("value"))
        options = to_builtins(getattr(session.response, "config_options", None) or [])
    else:
        if not speaks_v2(session):
            params = set_config_params_v1(params)
        check_change(principal, spec, SET_CONFIG, params)
        channel = session.channel
        answer = await channel.call_raw(SET_CONFIG, params, channel.timeouts.request)
        options = answer.get("configOptions") or [] if isinstance(answer, dict) else []
    return {"configOptions": config_options(principal, spec, session, options)}


def checked_title(value: Any, limit: int) -> str:
    """`session/set_title`'s title as the conversation stores it (titles.person_title), or
    -32602 saying why."""
    try:
        return person_title(value if isinstance(value, str) else "", limit)
    except ValueError as exc:
        raise InvalidParams(f"Invalid params: {exc}", {"field": "title"}) from None


def title_update(title: str) -> dict[str, Any]:
    """The `session_info_update` that tells a session's readers a person's title."""
    return {"sessionUpdate": "session_info_update", "title": title}


async def title_to_agent(session: Session | None, takes_titles: bool, title: str) -> bool:
    """Pass a person's title on to the agent holding `session` live, where it serves
    `session/set_title` (`takes_titles`); True when it took it (its `session_info_update`
    then tells the session's readers), False when there was no one to pass it to."""
    if session is None or not takes_titles:
        return False
    params = {"sessionId": session.id, "title": title}
    await session.channel.call_raw(SET_TITLE, params, session.channel.timeouts.request)
    return True


async def tell_title(conversations: Any, conv: Any, title: str) -> None:
    """A person's title (already stored as the conversation's) to the session's readers:
    through the agent where it takes titles, else as the gateway's own note in the log."""
    try:
        if await title_to_agent(conv.session, conv.pool.info.titles, title):
            return
    except ClientError as exc:  # the agent refused it: the conversation keeps the title
        log.info("session/set_title passed to the agent failed: %s", exc)
    conversations.note(conv, title_update(title))


async def held_call(
    principal: Principal,
    spec: AgentSpec,
    session: Session,
    call: tuple[str, dict[str, Any]],
    protocol: int,
) -> dict[str, Any]:
    """One of BRIDGED_METHODS (or of V1_ON_V2_METHODS, from a v1 client: `protocol` 1)
    that another replica passed on for its client of the session held here (`POST
    /v1/conversations/{id}/acp`): answered as for a client here, as JSON-RPC's `result`
    or `error` member, which that replica relays as it is."""
    method, params = call
    if method not in (V1_ON_V2_METHODS if protocol == 1 else BRIDGED_METHODS):
        return {"error": MethodNotFound(method).to_wire()}
    answer = held_v1_call if protocol == 1 else bridged_call
    try:
        result = await answer(principal, spec, session, method, params)
    except AcpError as exc:
        return {"error": exc.to_wire()}
    except ClientError as exc:  # the agent failed the request
        return {"error": {"code": getattr(exc, "code", InternalError.code), "message": str(exc)}}
    return {"result": result}


async def _cancel_tool_call(session: Session, tool_call_id: Any) -> dict[str, Any]:
    """`tool_call/cancel` passed to a v2 agent for a call of this session (the agent says
    whether it still runs); -32602 and nothing sent for any other id, or on a v1 agent."""
    if not speaks_v2(session):
        raise InvalidParams(
            f"Invalid params: tool call {tool_call_id!r} is not cancellable: the agent "
            "behind this gateway speaks ACP v1, which stops only a whole turn (session/cancel)",
            {"field": "toolCallId", "reason": "not_cancellable"},
        )
    if not isinstance(tool_call_id, str) or tool_call_id not in session.tool_calls:
        raise InvalidParams(
            f"Invalid params: tool call {tool_call_id!r} is unknown in this session",
            {"field": "toolCallId", "reason": "unknown"},
        )
    params = {"sessionId": session.id, "toolCallId": tool_call_id}
    answer = await session.channel.call_raw(
        CANCEL_TOOL_CALL, params, session.channel.timeouts.request
    )
    return answer if isinstance(answer, dict) else {}


async def _cancel_terminal(session: Session, terminal_id: Any) -> dict[str, Any]:
    """`terminal/cancel` passed to a v2 agent for one of this session's terminals (the
    agent says whether it still runs); -32602 `unknown` and nothing sent for any other."""
    known = isinstance(terminal_id, str) and terminal_id in session.view.terminals
    if not speaks_v2(session) or not known:
        raise InvalidParams(
            f"Invalid params: terminal {terminal_id!r} is unknown in this session",
            {"field": "terminalId", "reason": "unknown"},
        )
    params = {"sessionId": session.id, "terminalId": terminal_id}
    answer = await session.channel.call_raw(
        CANCEL_TERMINAL, params, session.channel.timeouts.request
    )
    return answer if isinstance(answer, dict) else {}


async def _set_mode(principal: Principal, spec: AgentSpec, session: Session, value: Any) -> None:
    """The mode set on the agent, if the key's ceiling names it; else -32602, unchanged."""
    allowed = _allowed_modes(principal, spec, session)
    if not isinstance(value, str) or value not in session.modes:
        raise InvalidParams(
            f"Invalid params: unknown mode {value!r} (one of: {', '.join(allowed)})",
            {"field": "value", "configId": mode_id(session)},
        )
    if value not in allowed:
        raise InvalidParams(
            f"Invalid params: mode {value!r} is above this API key's ceiling "
            f"{principal.ceiling!r} (one of: {', '.join(allowed)})",
            {"field": "value", "configId": mode_id(session), "reason": "above_ceiling"},
        )
    await session.set_mode(value)


def send_state(connection: RemoteClient, session_id: str, running: bool) -> None:
    """v2's current-state synchronization on resume, after the replay and before the
    reply: `running` while a turn runs, else `idle`."""
    update = state_update("running" if running else "idle")
    connection.notify("session/update", {"sessionId": session_id, "update": update})


def session_config(
    principal: Principal, spec: AgentSpec, session: Session, *, commands: bool
) -> dict[str, Any]:
    """`configOptions` of a v2 session/new or session/resume result through the bridge,
    and with `commands` the session's `availableCommands` (the view's, the agent's latest
    whatever its version; without: the client was sent the agent's own update)."""
    v1 = to_builtins(getattr(session.response, "config_options", None) or [])
    result = {"configOptions": config_options(principal, spec, session, v1)}
    if not commands or not session.view.commands:
        return result
    return {**result, "availableCommands": [command(c) for c in to_builtins(session.view.commands)]}


def config_options(
    principal: Principal, spec: AgentSpec, session: Session, v1_options: list[Any]
) -> list[dict[str, Any]]:
    """v2's whole config for `session`: its mode option, then the agent's options."""
    options = [config_option_v2(o) for o in v1_options if isinstance(o, dict)]
    if not session.modes:
        return options
    # A v2 agent's own mode option is replaced by the ceiling's view of it.
    options = [o for o in options if o.get("category") != MODE_CATEGORY]
    allowed = _allowed_modes(principal, spec, session)
    mode = {
        "configId": mode_id(session),
        "name": "Mode",
        "category": "mode",
        "type": "select",
        "currentValue": session.current_mode or allowed[0],
        "options": [{"value": m, "name": m} for m in allowed],
    }
    return [mode, *options]


def mode_id(session: Session) -> str:
    """The mode option's id: a v2 agent's own, else `mode` (a v1 agent has none)."""
    option = mode_option(session.response) if speaks_v2(session) else None
    return getattr(option, "config_id", None) or MODE_CONFIG_ID


def _allowed_modes(principal: Principal, spec: AgentSpec, session: Session) -> list[str]:
    """The agent's modes this key may switch to (its current one among them)."""
    rules = spec.rules(principal.ceiling)
    current = session.current_mode
    return [m for m in session.modes if m == current or rules.allows_mode(m)]


__all__ = [
    "BRIDGED_METHODS",
    "MODE_CONFIG_ID",
    "SET_TITLE",
    "bridged_call",
    "checked_title",
    "config_options",
    "held_call",
    "send_state",
    "session_config",
    "tell_title",
    "title_to_agent",
    "title_update",
]
