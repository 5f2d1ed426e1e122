"""`agentao --acp`: serve ACP on stdio until the client closes stdin.

`initialize` is answered first, synchronously (`handshake.py`), before the
event loop and the runtime are imported; then the endpoint serves the rest. The connection
speaks ACP v1 and v2: `initialize` settles which (protocol/versions.py); a v1 client gets
exactly the v1 result, a v2 client the v2 one (server/capabilities.py).
Stdout carries protocol messages only; logs go to stderr and to `agent.log`
in the state directory, never to the session's project (`logs.py`). Exit code 0 at EOF.
"""

from __future__ import annotations

from typing import Any

from agentao.protocol.connection import Connection
from agentao.protocol.versions import SUPPORTED
from agentao.server.capabilities import initialize_response, initialize_response_v2
from agentao.server.handshake import handshake


def serve_stdio(resume: str | None = None) -> int:
    """Run the ACP agent on this process's stdin/stdout; `resume` as `--resume [ID]`."""
    conn = Connection("agent", speaks=SUPPORTED)
    client: dict[str, Any] = {}

    def answer(params: Any) -> dict[str, Any]:
        if conn.version == 2:  # v2 clients have no fs/terminal for us to use
            from agentao.server.v2 import AgentV2

            client["capabilities"] = params.capabilities  # elicitation, for ask_user
            return initialize_response_v2(AgentV2)
        client["capabilities"] = params.client_capabilities
        return initialize_response()

    try:
        leftover = handshake(conn, answer)
        from agentao import loops
        from agentao.server.serve import serve

        loops.run(serve(conn, leftover, client.get("capabilities"), resume))
    except KeyboardInterrupt:
        return 130
    return 0


__all__ = ["serve_stdio"]
