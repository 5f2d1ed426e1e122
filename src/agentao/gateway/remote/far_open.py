"""What a client of a far session is told when it opens it: its holder's answer.

A remote client's `session/load` (v1) or `session/resume` (v2) of a session another
replica holds (far.py) is served here from the shared store: the replay comes from the
log, but what the answer says (v1's `modes` and `configOptions`, v2's `configOptions`
with the mode option held to the key's ceiling, and the session's commands) is the
holder's agent session's to say. So this replica asks the holder once, with the
client's key, by the route of the session calls (`POST /v1/conversations/{id}/acp`,
the open's method name, conversations_api.py): the holder answers as it would answer a
client of its own (`held_open`), without attaching it or replaying anything. A v1
client's commands come in that answer as `availableCommands` (v2's place for them) and
are sent to it as v1's `available_commands_update` before the reply, as a v1 agent's
load sends them. A holder that cannot say (gone, its lease lost meanwhile, an error)
leaves the answer bare (v1's session id, v2's `{}`): the client has the log all the same.
"""

from __future__ import annotations

import logging
from typing import Any

from agentao.client import Session
from agentao.gateway.auth import Principal
from agentao.gateway.config import AgentSpec
from agentao.gateway.errors import ApiError
from agentao.gateway.remote.bridge_calls import session_config
from agentao.gateway.remote.clients import RemoteClient
from agentao.gateway.remote.far import FarSession, NowFree
from agentao.gateway.remote.v1_calls import commands_update, v1_session_result
from agentao.protocol.errors import AcpError

log = logging.getLogger("agentao.gateway")

LOAD, RESUME = "session/load", "session/resume"  # v1's open, v2's
OPEN_METHODS = frozenset({LOAD, RESUME})


def held_open(
    principal: Principal, spec: AgentSpec, session: Session, method: str
) -> dict[str, Any]:
    """The holder's side: what a client of its own opening `session` by `method` would
    be answered, as JSON-RPC's `result` member; v1's commands in it as `availableCommands`."""
    if method == RESUME:
        return {"result": session_config(principal, spec, session, commands=True)}
    result = v1_session_result(session)
    result.pop("sessionId", None)  # the asking replica names it
    if (commands := commands_update(session)) is not None:
        result["availableCommands"] = commands["availableCommands"]
    return {"result": result}


async def far_opened(far: FarSession, connection: RemoteClient) -> dict[str, Any]:
    """The asking side: the holder's answer for `connection`'s open of `far` (a v1
    client's commands sent to it first, as the update v1 has), or {} if it cannot say."""
    method = RESUME if connection.bridge is not None else LOAD
    session_id = str(far.conv.record.session_id)
    try:
        result = await far.session_call(connection, method, {"sessionId": session_id})
    except (NowFree, ApiError, AcpError) as exc:
        log.info("session %s: its holder did not answer its %s: %s", session_id, method, exc)
        return {}
    if not isinstance(result, dict):
        return {}
    if connection.bridge is None and (commands := result.pop("availableCommands", None)):
        update = {"sessionUpdate": "available_commands_update", "availableCommands": commands}
        connection.send_update(session_id, update)
    return result


__all__ = ["OPEN_METHODS", "far_opened", "held_open"]
