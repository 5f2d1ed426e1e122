"""v2's `session/fork` (unstable): a new session with the stored history of another.

The source is read from the store, as `session/resume` reads it: every turn committed
so far (a turn still running on the source is not in it: only a finished turn is
history). The fork gets a new id and the source's state (mode, model, plan, the
"allow always" grants of the same workspace), every turn copied into the store under
its own id, and opens live as a resumed session does (the process's ceiling holds its
mode). The source is untouched; the two go their own ways from here.

The fork's `cwd` must be the source's (its history's paths are there);
`additionalDirectories`, when given, is the fork's whole list (the schema: omitted or
empty activates none). Its MCP servers are the request's.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

from agentao.agent.session import AgentSession
from agentao.protocol.connection import params_of
from agentao.protocol.errors import InvalidParams
from agentao.server.client_prompt import keep_client_prompt, read_client_prompt
from agentao.server.mcp_config import checked_mcp_servers, fingerprint
from agentao.server.params import directories, directory

if TYPE_CHECKING:
    from agentao.protocol.v2 import schema as v2
    from agentao.server.live import LiveSession

__all__ = ["fork_session", "forked"]


async def fork_session(
    agent: Any, params: v2.ForkSessionRequest, message: dict[str, Any]
) -> LiveSession:
    """The fork of `params.session_id`, stored and live on `agent` (the AcpAgent)."""
    cwd = directory(params.cwd, "cwd")
    raw_servers = params_of(message).get("mcpServers")
    client_prompt = read_client_prompt(params_of(message).get("systemPrompt"))
    servers = await checked_mcp_servers(raw_servers, str(cwd))
    source, grants = await agent._load(params.session_id)
    if str(source.cwd) != str(cwd):
        raise InvalidParams(
            f"Invalid params: cwd must match the forked session's cwd ({source.cwd})",
            {"field": "cwd"},
        )
    copy = forked(source)
    copy.additional_dirs = directories(params.additional_directories, "additionalDirectories")
    copy.meta["mcp_fingerprint"] = fingerprint(raw_servers)
    keep_client_prompt(copy, client_prompt)  # none: the source's, copied with its meta
    await agent._probe_sandbox()
    live = await agent._open(copy, grants, servers)
    await agent.archive.create_with_turns(copy, live.engine)
    agent.sessions.add(live)
    return live


def forked(source: AgentSession) -> AgentSession:
    """A copy of `source` under a new id, created now, its turns and state the same."""
    now = time.time()
    data = {**source.to_dict(), "id": str(uuid.uuid4()), "created_at": now, "updated_at": now}
    return AgentSession.from_dict(data)
