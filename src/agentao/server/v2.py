"""The v2 method surface of `agentao --acp`: what a client that settled ACP v2 can call.

The endpoint asks `AcpAgent.for_version(version)` which object serves a connection's version
(protocol/endpoint.py); a v1 connection gets the `AcpAgent` itself, a v2 one this surface. A
method is served in v2 exactly when this class has its handler (the generated python_name,
`session/new` -> `session_new`); every other v2 method answers -32601 "Method not found", and
`initialize` advertises only what is here (server/capabilities.py reads this class). So the
v2 session surface (session/new, prompt with its `{messageId}` acknowledgement,
`state_update`, resume with replay, auth/login) is added here, method by method, on the same
`AcpAgent` and its sessions underneath: a view of one session model, not a second one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentao.server.capabilities import initialize_response_v2

if TYPE_CHECKING:
    from agentao.protocol.v2 import schema as v2


class AgentV2:
    """Handlers for a v2 connection, over the agent that serves v1."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent  # the AcpAgent serving v1 (server/agent.py imports this module)
        self.extensions: dict[str, Any] = {}  # the vendor methods are v1's until served here

    async def initialize(self, params: v2.InitializeRequest) -> dict[str, Any]:
        return self.initialize_result()

    def initialize_result(self) -> dict[str, Any]:
        """What `initialize` answers on v2 (also used by the stdio handshake)."""
        return initialize_response_v2(self)


__all__ = ["AgentV2"]
