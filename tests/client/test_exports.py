"""agentao.client exports exactly what a library user needs (cf. httpx's test_exported_members)."""

from __future__ import annotations

import agentao.client as client

EXPECTED = {
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
}


def test_all_is_the_public_surface() -> None:
    assert set(client.__all__) == EXPECTED


def test_every_name_resolves() -> None:
    for name in client.__all__:
        assert getattr(client, name) is not None, name


def test_errors_form_one_tree() -> None:
    for name in (
        "AgentStartError",
        "HandshakeError",
        "ClientTimeout",
        "AgentDisconnected",
        "ProtocolViolation",
        "AgentError",
    ):
        assert issubclass(getattr(client, name), client.ClientError), name


def test_settings_are_frozen() -> None:
    import dataclasses

    for cls in (
        client.AgentCommand,
        client.AgentUrl,
        client.ClientPolicy,
        client.Timeouts,
        client.Limits,
    ):
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, cls
        assert len(dataclasses.fields(cls)) <= 7, cls
