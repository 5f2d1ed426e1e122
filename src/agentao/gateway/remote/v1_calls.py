"""What a remote v1 client asks of a session whose agent process speaks ACP v2.

The mirror of bridge_calls.py (a v2 client on a v1 agent). A v1 client is sent v1 and its
requests mean what they mean in v1, whatever version the pool settled with the agent
(agent_protocol.py); the shapes are translated by protocol/v2/to_v1.py, shared with the
client library. service.py hands such a client's session results and these methods here:

session/new, session/load   the agent's v2 result (`configOptions` named by `configId`,
    no `modes`) in v1's shape: `modes` from the mode option, the options by `id`. The
    session's commands are sent before it as v1's `available_commands_update` (as a v1
    agent's load does) from the session's view, the agent's latest whatever its version
    (a v2 agent's result or update, a v1 agent's update): a load the gateway answers
    itself (the session live here) gets them too, on a v1 agent as on a v2 one.
session/set_mode   v2 has no set_mode: `modeId` becomes the agent's
    `session/set_config_option` of its mode option, held to the key's ceiling first
    (`check_change`, as for a v1 agent: -32600 `above_ceiling`, nothing sent); a mode the
    agent does not offer is -32602. Answered v1's `{}`.
session/set_config_option   v1's params in v2 (an untagged value is a value id: `type:
    "id"`); the mode option held to the ceiling as a mode; the answer's `configOptions`
    in v1's shape.
A v1 client of a session another replica holds has these two passed on to the holder
once (far.py), which answers them here as for its own v1 clients (`held_v1_call`).
"""

from __future__ import annotations

from typing import Any

from agentao.client import Session
from agentao.gateway.agent_protocol import speaks_v2
from agentao.gateway.auth import Principal
from agentao.gateway.config import AgentSpec
from agentao.gateway.remote.clients import RemoteClient
from agentao.gateway.remote.limits import check_change
from agentao.protocol.decode import to_builtins
from agentao.protocol.errors import InvalidParams
from agentao.protocol.v2.to_v1 import (
    config_options_v1,
    mode_option,
    session_result_v1,
    set_config_params_v2,
)

SET_MODE = "session/set_mode"
SET_CONFIG = "session/set_config_option"
V1_ON_V2_METHODS = frozenset({SET_MODE, SET_CONFIG})


def v1_result(connection: RemoteClient, session: Session, *, commands: bool) -> dict[str, Any]:
    """The agent's session result for a v1 client: as it is, or a v2 agent's in v1; with
    `commands`, the session's commands sent first, as a v1 agent sends them before its
    reply (without: they reached the client already, as the agent's own update)."""
    if commands and (update := commands_update(session)) is not None:
        connection.send_update(session.id, update)
    return v1_session_result(session)


def v1_session_result(session: Session) -> dict[str, Any]:
    """The agent's session result in v1 (a v2 agent's translated), at the mode the
    session is in now: the result said the one it opened at."""
    if speaks_v2(session):
        return session_result(session)
    v1 = dict(to_builtins(session.response))
    return _at_current_mode(v1, session)


def commands_update(session: Session) -> dict[str, Any] | None:
    """The session's commands as the v1 update a v1 agent sends before a session result
    (v1's results have none); None while the agent has named none."""
    if not session.view.commands:
        return None
    commands = to_builtins(session.view.commands)
    return {"sessionUpdate": "available_commands_update", "availableCommands": commands}


def session_result(session: Session) -> dict[str, Any]:
    """The v2 agent's session/new or resume result in v1's shape, `sessionId` left out."""
    v1 = session_result_v1(to_builtins(session.response) or {})
    v1.pop("sessionId", None)
    return _at_current_mode(v1, session)


def _at_current_mode(v1: dict[str, Any], session: Session) -> dict[str, Any]:
    """A v1 session result's `modes` at the session's mode now (set since the agent
    answered: a ceiling's start mode, a client's switch, the agent's own)."""
    current = session.current_mode
    if isinstance(v1.get("modes"), dict) and current is not None:
        v1["modes"] = {**v1["modes"], "currentModeId": current}
    return v1


async def v1_call(
    principal: Principal, spec: AgentSpec, session: Session, method: str, params: dict[str, Any]
) -> dict[str, Any]:
    """Answer one of V1_ON_V2_METHODS for a v1 client on the v2 `session`."""
    options = to_builtins(getattr(session.response, "config_options", None) or [])
    mode = mode_option(options)
    if method == SET_MODE:
        await _set_mode(principal, spec, session, mode, params.get("modeId"))
        return {}
    if mode is not None and params.get("configId") == mode.get("configId"):  # a mode
        answer = await _set_mode(principal, spec, session, mode, params.get("value"))
        given = answer.get("configOptions") if isinstance(answer, dict) else None
        return {"configOptions": config_options_v1(given or _with_current(options, mode, session))}
    check_change(principal, spec, method, params)
    answer = await session.channel.call_raw(
        SET_CONFIG, set_config_params_v2(params), session.channel.timeouts.request
    )
    given = answer.get("configOptions") if isinstance(answer, dict) else None
    return {"configOptions": config_options_v1(given)}


async def held_v1_call(
    principal: Principal, spec: AgentSpec, session: Session, method: str, params: dict[str, Any]
) -> dict[str, Any]:
    """One of V1_ON_V2_METHODS of a v1 client on another replica, for the session held
    here: answered as service.py answers a v1 client here (the key's ceiling first; on a
    v2 agent translated, on a v1 agent passed on as it is)."""
    check_change(principal, spec, method, params)
    if speaks_v2(session):
        return await v1_call(principal, spec, session, method, params)
    answer = await session.channel.call_raw(method, params, session.channel.timeouts.request)
    return answer if isinstance(answer, dict) else {}


async def _set_mode(
    principal: Principal, spec: AgentSpec, session: Session, mode: Any, value: Any
) -> Any:
    """The agent's mode option set to `value`, if the key's ceiling allows that mode
    (-32600 `above_ceiling`) and the agent offers it (-32602); else nothing is sent.
    The agent's answer, as wire dicts."""
    check_change(principal, spec, SET_MODE, {"modeId": value})
    if mode is None or not isinstance(value, str) or value not in session.modes:
        offered = ", ".join(session.modes) or "none: the agent offers no modes"
        raise InvalidParams(
            f"Invalid params: unknown mode {value!r} (one of: {offered})", {"field": "modeId"}
        )
    return to_builtins(await session.set_mode(value))


def _with_current(options: list[Any], mode: dict[str, Any], session: Session) -> list[Any]:
    """`options` with the mode option at the session's current mode."""
    current = {**mode, "currentValue": session.current_mode}
    return [current if o is mode else o for o in options]


__all__ = [
    "V1_ON_V2_METHODS",
    "commands_update",
    "held_v1_call",
    "session_result",
    "v1_call",
    "v1_result",
    "v1_session_result",
]
