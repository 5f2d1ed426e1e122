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

import httpx
import pytest

from agentao.gateway.ceilings import CeilingRules
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
# `ask` keys may switch between these modes (not full-access) and set any option
RULES = CeilingRules(
    modes=frozenset({"read-only", "workspace-write"}), options={"*": frozenset({"*"})}
)


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
    assert "result" in there, there
    assert there["result"] == here["result"], (there, here)  # as its holder answers
    assert _commands_then_reply(far.received[before:], there["id"]) == ["commands", "reply"]
    assert resumed_there["result"] == resumed_here["result"], (resumed_there, resumed_here)
    v2 = resumed_there["result"]
    assert "compact" in {c["name"] for c in v2["availableCommands"]}, v2
    (mode,) = [o for o in v2["configOptions"] if o.get("category") == "mode"]
    assert "full-access" not in {o["value"] for o in mode["options"]}  # the key's ceiling


@pytest.mark.parametrize("protocol", [1, 2])
async def test_a_v1_clients_mode_on_a_far_session_is_set_by_its_holder(
    gateway_factory: Any, tmp_path: Path, pg_url: str, protocol: int
) -> None:
    """A v1 client on B sets the mode of a session A holds: A sets it as for a client of
    its own, with the key's ceiling checked there (above it: -32600, unchanged); a
    config option goes there too, and a title is A's rename. (A v2 client's: test_tool_call_cancel.py.)"""
    spec = replace(scripted_spec(tmp_path), protocol=protocol, ceilings=(("ask", RULES),))
    a = gateway_factory(agents=(spec,), keys=KEYS, store=pg_url)
    b = gateway_factory(agents=(spec,), keys=KEYS, store=pg_url)
    opener, far = v1_peer(a, "ws"), v1_peer(b, "ws")
    try:
        await opener.open()
        opened = await opener.call("session/new", {"cwd": spec.cwd, "mcpServers": []})
        sid = opened["result"]["sessionId"]
        await far.open()
        assert "result" in await far.call("session/load", _v1_load(sid, spec.cwd))
        model = next(o for o in opened["result"]["configOptions"] if o["id"] == "model")
        option = {"sessionId": sid, "configId": model["id"], "value": model["currentValue"]}
        options = await far.call("session/set_config_option", option, sid)
        mode = {"sessionId": sid, "modeId": "read-only"}
        changed = await far.call("session/set_mode", mode, sid)
        above = await far.call("session/set_mode", {**mode, "modeId": "full-access"}, sid)
        titled = await far.call("session/set_title", {"sessionId": sid, "title": "Far\n off"})
        errors = [e for e in far.errors(version=1) if not e.endswith(LOAD_NAMES_ITS_SESSION)]
        assert errors == [], errors
    finally:
        for peer in (opener, far):
            await peer.close()
    assert "result" in changed, changed  # (our v1 agent's answer names the mode in _meta)
    assert above["error"]["code"] == -32600, above
    assert above["error"]["data"]["reason"] == "above_ceiling"
    assert [o["id"] for o in options["result"]["configOptions"]] == [
        o["id"] for o in opened["result"]["configOptions"]
    ], options
    async with httpx.AsyncClient(base_url=a.url) as http:  # the session's mode, on A
        convs = (await http.get("/v1/conversations", headers=ASKER)).json()["data"]
        view = await http.get(f"/v1/conversations/{convs[0]['id']}/view", headers=ASKER)
    assert view.json()["mode"] == "read-only", view.text
    assert titled["result"] == {"title": "Far off"} and convs[0]["title"] == "Far off", titled


async def test_a_session_opened_on_one_replica_is_found_on_another_at_once(
    gateway_factory: Any, tmp_path: Path, pg_url: str
) -> None:
    """`session/new` on A is answered once the conversation's row is stored: a client that
    loads the session on B the moment it has its id finds it there (B reads the shared
    store). A trigger makes every write of that row take half a second, the window in
    which A answered before."""
    import psycopg

    spec = scripted_spec(tmp_path)
    a = gateway_factory(agents=(spec,), keys=KEYS, store=pg_url)
    b = gateway_factory(agents=(spec,), keys=KEYS, store=pg_url)
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute(
            "CREATE FUNCTION slow_row() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN PERFORM pg_sleep(0.5); RETURN NEW; END $$"
        )
        db.execute(
            "CREATE TRIGGER slow_row BEFORE INSERT OR UPDATE ON gw_conversations "
            "FOR EACH ROW EXECUTE FUNCTION slow_row()"
        )
    opener, far = v1_peer(a, "ws"), v1_peer(b, "ws")
    try:
        await opener.open()
        await far.open()
        opened = await opener.call("session/new", {"cwd": spec.cwd, "mcpServers": []})
        sid = opened["result"]["sessionId"]
        there = await far.call("session/load", _v1_load(sid, spec.cwd))
    finally:
        for peer in (opener, far):
            await peer.close()
    assert "result" in there, there
    assert there["result"]["sessionId"] == sid
