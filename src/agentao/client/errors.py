"""What can go wrong when driving an agent, as a small tree.

    ClientError                  base of everything `agentao.client` raises
    ├── AgentStartError          the command could not be started, or died before `initialize`
    ├── HandshakeError           `initialize` / `authenticate` failed or was unusable
    ├── ClientTimeout            a named limit in `Timeouts` ran out (`.name`, `.seconds`)
    ├── AgentDisconnected        the agent went away (`.exit_code`, `.stderr_tail`)
    ├── ProtocolViolation        the agent sent something we cannot make sense of
    ├── AgentError               the agent answered a request with a JSON-RPC error (`.code`)
    └── SteeringUnsupported      `Session.steer` to an agent that does not advertise steering

A peer's errors (AgentError) are kept apart from our own: the code and `data`
are exactly what the agent sent.
"""

from __future__ import annotations

from typing import Any


class ClientError(Exception):
    """Base class of the client's errors."""


class AgentStartError(ClientError):
    """The agent command could not be started (or exited before the handshake)."""

    def __init__(
        self, message: str, *, exit_code: int | None = None, stderr_tail: str = ""
    ) -> None:
        super().__init__(_with_tail(message, stderr_tail))
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail


class HandshakeError(ClientError):
    """`initialize` or `authenticate` failed, or the agent's answer was unusable."""


class ClientTimeout(ClientError):
    """A named timeout from `Timeouts` elapsed."""

    def __init__(self, name: str, seconds: float, what: str) -> None:
        super().__init__(f"{what}: no answer within {seconds:g}s (Timeouts.{name})")
        self.name = name
        self.seconds = seconds


class AgentDisconnected(ClientError):
    """The agent closed its output or exited while we still needed it."""

    def __init__(self, message: str, *, exit_code: int | None, stderr_tail: str = "") -> None:
        status = "still running" if exit_code is None else f"exit code {exit_code}"
        super().__init__(_with_tail(f"{message} ({status})", stderr_tail))
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail


class ProtocolViolation(ClientError):
    """The agent sent something that breaks the protocol beyond what we tolerate."""


class AgentError(ClientError):
    """The agent answered our request with a JSON-RPC error."""

    def __init__(self, method: str, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{method} failed: {message} (code {code})")
        self.method = method
        self.code = code
        self.message = message
        self.data = data


class SteeringUnsupported(ClientError):
    """The agent does not advertise `_session/steering` (`_meta.steering.supported` in its
    `initialize` result): words for a running turn cannot reach it; send them as a prompt
    after the turn instead."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"session {session_id}: the agent does not support steering "
            "(no _meta.steering.supported in its initialize result)"
        )
        self.session_id = session_id


def _with_tail(message: str, tail: str) -> str:
    tail = tail.strip()
    if not tail:
        return message
    return f"{message}\n--- agent stderr (last lines) ---\n{tail}"


__all__ = [
    "AgentDisconnected",
    "AgentError",
    "AgentStartError",
    "ClientError",
    "ClientTimeout",
    "HandshakeError",
    "ProtocolViolation",
]
