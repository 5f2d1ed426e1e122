"""A remote client that reopens a live session is told what an agent's load tells: the
agent's commands, and the session's mode as it is now.

Over ACP an agent's `session/load` sends its `available_commands_update` before its reply
(v1), and a v2 agent's `session/resume` result carries `availableCommands`. Through the
gateway a live session is reopened by the gateway itself, not by the agent: the commands
come from the session's view (the agent's latest), whatever version the agent speaks.
Real gateway, our own agent in its sandbox over v1 (the default) and under
`protocol = 2`; raw v1 and v2 clients over HTTP/SSE and WebSocket, every message checked
against its version's schema. The mode: the gateway's answer to a load is the agent's
session result, with the mode the session is in since (a v1 agent's result said the
mode it opened at).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.conftest import scripted_spec
from tests.gateway.test_remote_v2 import peer_for, updates
from tests.gateway.test_v1_on_v2 import LOAD_NAMES_ITS_SESSION, _commands_then_reply, v1_peer

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(("protocol", "scheme"), [(1, "http"), (1, "ws"), (2, "http")])
async def test_a_client_reopening_a_live_session_gets_the_agents_commands(
    gateway_factory: Any, tmp_path: Path, protocol: int, scheme: str
) -> None:
    """A second v1 client's `session/load` of a session another client opened gets the
    commands before its reply; a v2 client's `session/resume`, in its result."""
    gw = gateway_factory(agents=(replace(scripted_spec(tmp_path), protocol=protocol),))
    cwd = gw.config.agents[0].cwd
    first, again, v2 = v1_peer(gw, scheme), v1_peer(gw, scheme), peer_for(gw, scheme)
    try:
        await first.open()
        sid = (await first.call("session/new", {"cwd": cwd, "mcpServers": []}))["result"]
        sid = sid["sessionId"]
        await again.open()
        before = len(again.received)
        loaded = await again.call("session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []})
        await v2.open()
        resumed = await v2.call("session/resume", {"sessionId": sid, "cwd": cwd})
        errors = [e for e in again.errors(version=1) if not e.endswith(LOAD_NAMES_ITS_SESSION)]
        assert errors == [] and v2.errors() == []
    finally:
        for peer in (first, again, v2):
            await peer.close()
    assert _commands_then_reply(again.received[before:], loaded["id"]) == ["commands", "reply"]
    (commands,) = [u for u in updates(again.received) if "availableCommands" in u]
    assert "compact" in {c["name"] for c in commands["availableCommands"]}, commands
    assert "compact" in {c["name"] for c in resumed["result"]["availableCommands"]}, resumed


@pytest.mark.parametrize("protocol", [1, 2])
async def test_a_v1_load_of_a_live_session_says_the_mode_it_is_in_now(
    gateway_factory: Any, tmp_path: Path, protocol: int
) -> None:
    spec = replace(scripted_spec(tmp_path), protocol=protocol)
    gw = gateway_factory(agents=(spec,))
    first, again = v1_peer(gw, "ws"), v1_peer(gw, "ws")
    try:
        await first.open()
        sid = (await first.call("session/new", {"cwd": spec.cwd, "mcpServers": []}))["result"]
        sid = sid["sessionId"]
        changed = await first.call("session/set_mode", {"sessionId": sid, "modeId": "plan"}, sid)
        await again.open()
        loaded = await again.call(
            "session/load", {"sessionId": sid, "cwd": spec.cwd, "mcpServers": []}
        )
    finally:
        await first.close()
        await again.close()
    assert "result" in changed, changed
    assert loaded["result"]["modes"]["currentModeId"] == "plan", loaded
