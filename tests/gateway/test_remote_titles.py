"""A remote client titles its session (`session/set_title`, unstable), through the gateway.

Real gateway, our agent behind it. The gateway advertises `session.title` to v2 clients
and serves the method itself: the title is the conversation's, as a person's rename
(`POST /v1/conversations/{id}`), so the web UI's list, `GET /v1/conversations` and
`session/list` show it and the agent's later titles keep off it. A title is normalized
(one line) and answered as stored; an empty or too long one is -32602; another key's
session is not found. Where a v2 agent that serves `session/set_title` holds the session
(our agent under `protocol = 2`) the title is passed on to it, and the session's other
remote readers hear it as a `session_info_update` (the agent's, else the gateway's own).
A v1 client is served the same (v1's unstable schema has the method), and our agent over
v1 takes titles too.
Every message the gateway sends a client is checked against its version's schema.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentao.gateway.config import AgentSpec, ApiKey, Limits
from tests.fakes import sdk_agent
from tests.gateway.conftest import LiveGateway
from tests.gateway.test_remote_v2 import INIT_V1, HttpV2, WsV2, is_update, peer_for
from tests.gateway.test_tool_call_cancel import agent_received, v2_agent

pytestmark = pytest.mark.timeout(60)
LIMIT = 40  # [limits] max_title_chars, small here


def _key(name: str) -> ApiKey:
    digest = hashlib.sha256(f"sk-{name}".encode()).hexdigest()
    return ApiKey(name, digest, ceiling="all", policy="all")


def _auth(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer sk-{name}"}


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_a_v2_client_titles_its_session_as_a_person_renames_it(
    gateway_factory: Any, scheme: str
) -> None:
    limits = Limits(max_title_chars=LIMIT)
    gw: LiveGateway = gateway_factory(keys=(_key("alice"), _key("bob")), limits=limits)
    cwd = gw.config.agents[0].cwd
    alice, bob = peer_for(gw, scheme, _auth("alice")), peer_for(gw, scheme, _auth("bob"))
    try:
        init = await alice.open()
        await bob.open()
        sid = (await alice.call("session/new", {"cwd": cwd}))["result"]["sessionId"]
        titled = await alice.call(
            "session/set_title", {"sessionId": sid, "title": " Fix\n the  bug "}
        )
        empty = await alice.call("session/set_title", {"sessionId": sid, "title": " \n "})
        long = await alice.call("session/set_title", {"sessionId": sid, "title": "x" * (LIMIT + 1)})
        theirs = await bob.call("session/set_title", {"sessionId": sid, "title": "Mine now"})
        listed = await alice.call("session/list", {})
        assert alice.errors() == [] and bob.errors() == []
    finally:
        await alice.close()
        await bob.close()
    assert init["result"]["capabilities"]["session"]["title"] == {}  # advertised: served
    assert titled["result"] == {"title": "Fix the bug"}, titled  # as stored
    assert empty["error"]["code"] == -32602 and long["error"]["code"] == -32602
    assert theirs["error"]["code"] == -32002, theirs
    (session,) = listed["result"]["sessions"]
    assert session["title"] == "Fix the bug"
    async with httpx.AsyncClient(base_url=gw.url) as http:
        convs = (await http.get("/v1/conversations", headers=_auth("alice"))).json()["data"]
    assert [(c["title"], c["title_by"]) for c in convs] == [("Fix the bug", "person")]


async def _two_readers(gw: LiveGateway, scheme: str) -> tuple[Any, Any, str]:
    """Alice's session with a finished turn (its agent session live), read by a second
    connection of hers that resumed it; (the titling peer, the other reader, session id)."""
    cwd = gw.config.agents[0].cwd
    alice, other = peer_for(gw, scheme, _auth("alice")), peer_for(gw, scheme, _auth("alice"))
    await alice.open()
    sid = (await alice.call("session/new", {"cwd": cwd}))["result"]["sessionId"]
    await alice.watch(sid)
    await alice.call("session/prompt", {"sessionId": sid, "prompt": [_text("hello")]}, sid)
    await alice.wait_for(is_update("state_update", state="idle"))
    await other.open()
    assert "result" in await other.call("session/resume", {"sessionId": sid, "cwd": cwd})
    await other.watch(sid)
    return alice, other, sid


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_a_title_reaches_a_v2_agent_that_takes_titles_and_the_sessions_readers(
    gateway_factory: Any, tmp_path: Path, scheme: str
) -> None:
    """Our agent under `protocol = 2` advertises `session.title`: the title is passed on to
    it (its store keeps it, its later titles too), and its `session_info_update` reaches
    the session's other reader through the log."""
    gw: LiveGateway = gateway_factory(agents=(v2_agent(tmp_path),), keys=(_key("alice"),))
    alice, other, sid = await _two_readers(gw, scheme)
    try:
        titled = await alice.call("session/set_title", {"sessionId": sid, "title": "Fix\n it"})
        told = await other.wait_for(is_update("session_info_update", title="Fix it"))
        assert alice.errors() == [] and other.errors() == []
    finally:
        await alice.close()
        await other.close()
    assert titled["result"] == {"title": "Fix it"} and told
    passed = agent_received(tmp_path, "session/set_title")
    assert [m["params"]["title"] for m in passed] == ["Fix it"]  # once, as the gateway stored it


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_a_title_on_an_agent_without_titles_is_told_by_the_gateway(
    gateway_factory: Any, tmp_path: Path, scheme: str
) -> None:
    """An agent that takes no titles (the official SDK's, v1): the gateway itself tells
    the session's other reader."""
    work = tmp_path / "work"
    work.mkdir()
    spec = AgentSpec("sdk-agent", (sys.executable, sdk_agent.__file__), cwd=str(work))
    gw: LiveGateway = gateway_factory(agents=(spec,), keys=(_key("alice"),))
    alice, other, sid = await _two_readers(gw, scheme)
    try:
        await alice.call("session/set_title", {"sessionId": sid, "title": "Named"})
        told = await other.wait_for(is_update("session_info_update", title="Named"))
        assert alice.errors() == [] and other.errors() == []
    finally:
        await alice.close()
        await other.close()
    assert told


def _v1_peer(gw: LiveGateway, scheme: str) -> HttpV2 | WsV2:
    url = f"{scheme}://127.0.0.1:{gw.port}/acp"
    if scheme == "http":
        return HttpV2(url, INIT_V1, headers=_auth("alice"))
    peer = WsV2(url, _auth("alice"))
    peer.init = INIT_V1
    return peer


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_a_v1_client_titles_its_session_as_a_v2_client_does(
    gateway_factory: Any, tmp_path: Path, scheme: str
) -> None:
    """v1's unstable schema has `session/set_title` too: the gateway advertises and serves
    it for v1 clients as for v2 ones (the conversation's title, a person's rename), and
    passes it on to our agent over v1, which serves it; another v1 reader of the session
    hears the agent's `session_info_update`."""
    spec = replace(v2_agent(tmp_path), protocol=1)
    gw: LiveGateway = gateway_factory(agents=(spec,), keys=(_key("alice"),))
    alice, other = _v1_peer(gw, scheme), _v1_peer(gw, scheme)
    try:
        init = await alice.open()
        sid = (await alice.call("session/new", {"cwd": spec.cwd, "mcpServers": []}))["result"]
        sid = sid["sessionId"]
        await other.open()
        load = {"sessionId": sid, "cwd": spec.cwd, "mcpServers": []}
        assert "result" in await other.call("session/load", load)
        await other.watch(sid)
        titled = await alice.call("session/set_title", {"sessionId": sid, "title": " Fix\n it "})
        empty = await alice.call("session/set_title", {"sessionId": sid, "title": " "})
        told = await other.wait_for(is_update("session_info_update", title="Fix it"))
        assert alice.errors(version=1) == []
    finally:
        await alice.close()
        await other.close()
    caps = init["result"]["agentCapabilities"]["sessionCapabilities"]
    assert caps["title"] == {}  # advertised: served
    assert titled["result"] == {"title": "Fix it"} and told, titled
    assert empty["error"]["code"] == -32602
    passed = agent_received(tmp_path, "session/set_title")
    assert [m["params"]["title"] for m in passed] == ["Fix it"]  # once, as the gateway stored it
    async with httpx.AsyncClient(base_url=gw.url) as http:
        convs = (await http.get("/v1/conversations", headers=_auth("alice"))).json()["data"]
    assert [(c["title"], c["title_by"]) for c in convs] == [("Fix it", "person")]
