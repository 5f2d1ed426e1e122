"""agentao.client: drive any ACP agent (ours, qwen-code, gemini-cli, claude-agent-acp, ...).

    from agentao.client import AgentCommand, Client, ClientPolicy, TurnEnd

    async with Client(AgentCommand.parse("qwen --acp"), policy=ClientPolicy(approve="reads")) as c:
        session = await c.new_session(".")
        async for event in session.prompt("hello"):
            if event.text: print(event.text, end="")
            if isinstance(event, TurnEnd): print("\\n", event.stop_reason)

Errors (see `errors.py` for the tree): ClientError > AgentStartError, HandshakeError,
ClientTimeout, AgentDisconnected, ProtocolViolation, AgentError.
"""

from agentao.client.client import Client
from agentao.client.config import AgentCommand, ClientPolicy, Limits, Timeouts
from agentao.client.errors import (
    AgentDisconnected,
    AgentError,
    AgentStartError,
    ClientError,
    ClientTimeout,
    HandshakeError,
    ProtocolViolation,
    SteeringUnsupported,
)
from agentao.client.events import Event, PermissionDecision, ToolCallState, TurnEnd, Update
from agentao.client.files import Workspace
from agentao.client.permissions import PermissionAnswer, PermissionOption, PermissionRequest
from agentao.client.remote import AgentUrl
from agentao.client.serving import ASK_USER_UNAVAILABLE, Handlers
from agentao.client.session import Session
from agentao.client.turn import Turn

__all__ = [
    "ASK_USER_UNAVAILABLE",
    "AgentCommand",
    "AgentDisconnected",
    "AgentError",
    "AgentStartError",
    "AgentUrl",
    "Client",
    "ClientError",
    "ClientPolicy",
    "ClientTimeout",
    "Event",
    "Handlers",
    "HandshakeError",
    "Limits",
    "PermissionAnswer",
    "PermissionDecision",
    "PermissionOption",
    "PermissionRequest",
    "ProtocolViolation",
    "Session",
    "SteeringUnsupported",
    "Timeouts",
    "ToolCallState",
    "Turn",
    "TurnEnd",
    "Update",
    "Workspace",
]
