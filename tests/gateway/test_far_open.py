"""A remote client loads or resumes, on replica B, a session replica A holds: its answer
is the session's as A holds it (`gateway/remote/far_open.py`).

Served from the shared store, B has no agent session of its own to answer from, so it
asks A once (`POST /v1/conversations/{id}/acp`, the client's key) for what a client of
A would be told: v1's `modes` and `configOptions` and the commands (sent before the
reply, as v1's `available_commands_update`), v2's `configOptions` (the mode option held
to the key's ceiling) and `availableCommands`. Two real gateways on a real PostgreSQL,
our agent behind them, over v1 and under `protocol = 2`; every message each client gets
is checked against its version's schema.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.conftest import scripted_spec
from tests.gateway.test_remote_v2 import peer_for
from tests.gateway.test_v1_on_v2 import (
    ASKER,
    LOAD_NAMES_ITS_SESSION,
    _commands_then_reply,
    v1_peer,
)
from tests.gateway.test_v2_pool import _key

pytestmark = pytest.mark.timeout(90)
KEYS = (_key("asker", "ask"),)  # v1_peer's key: a ceiling below full-access


def _v1_load(sid: str, cwd: str) -> dict[str, Any]:
    return {"sessionId": sid, "cwd": cwd, "mcpServers": []}


@pytest.mark.parametrize("protocol", [1, 2])
async def test_a_far_sessions_load_and_resume_answer_as_its_holder_does(
    gateway_factory: Any, tmp_path: Path, pg_url: str, protocol: int
) -> None:
    spec = replace(scripted_spec(tmp_path), protocol=protocol)
    a = gateway_factory(agents=(spec,), keys=KEYS, store=pg_url)
    b = gateway_factory(agents=(spec,), keys=KEYS, store=pg_url)
    opener, near, far = v1_peer(a, "ws"), v1_peer(a, "ws"), v1_peer(b, "ws")
    near_v2, far_v2 = peer_for(a, "ws", ASKER), peer_for(b, "ws", ASKER)
    peers = (opener, near, far, near_v2, far_v2)
    try:
        for peer in peers:
            await peer.open()
        opened = await opener.call("session/new", {"cwd": spec.cwd, "mcpServers": []})
        sid = opened["result"]["sessionId"]
        here = await near.call("session/load", _v1_load(sid, spec.cwd))
        before = len(far.received)
        there = await far.call("session/load", _v1_load(sid, spec.cwd))
        resumed_here = await near_v2.call("session/resume", {"sessionId": sid, "cwd": spec.cwd})
        resumed_there = await far_v2.call("session/resume", {"sessionId": sid, "cwd": spec.cwd})
        for peer in (near, far):
            errors = [e for e in peer.errors(version=1) if not e.endswith(LOAD_NAMES_ITS_SESSION)]
            assert errors == [], errors
        assert near_v2.errors() == [] and far_v2.errors() == []
    finally:
        for peer in peers:
            await peer.close()
    assert "modes" in here["result"] and here["result"]["configOptions"], here
    assert there["result"] == here["result"], (there, here)  # as its holder answers
    assert _commands_then_reply(far.received[before:], there["id"]) == ["commands", "reply"]
    assert resumed_there["result"] == resumed_here["result"], (resumed_there, resumed_here)
    v2 = resumed_there["result"]
    assert "compact" in {c["name"] for c in v2["availableCommands"]}, v2
    (mode,) = [o for o in v2["configOptions"] if o.get("category") == "mode"]
    assert "full-access" not in {o["value"] for o in mode["options"]}  # the key's ceiling
