"""A remote v2 client stops one tool call of a v2 agent through the gateway (`tool_call/cancel`).

Real gateway; behind it our own agent under `protocol = 2` (its shell tool is stoppable:
agent/stoppable.py), every line it reads and writes recorded (tests/fakes/tee_agent.py).
The tool call's `capabilities.cancel` reaches the v2 client from the log as the agent
advertised it; the client's cancel is passed to the agent, which kills the command and
goes on with the turn (a v1 reader of the session sees the call end `failed`); an id the session never had is -32602 with nothing sent to the
agent; a session another key opened is not found. Over HTTP/SSE and WebSocket; every
message the gateway sends a client is checked against its version's schema.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentao.gateway.config import AgentSandbox, AgentSpec, ApiKey
from tests.gateway.conftest import LiveGateway, scripted_spec
from tests.gateway.test_remote_v2 import (
    INIT_V1,
    HttpV2,
    Message,
    V2Peer,
    is_update,
    peer_for,
    update_of,
    updates,
    v1_text,
)
from tests.gateway.test_v2_pool import TEE, needs_bwrap

pytestmark = [pytest.mark.timeout(60), needs_bwrap]
HOLD = "exec 3>held.fifo; echo started >&3; sleep 60"  # holds the FIFO open while it runs
SCRIPT = [
    {
        "match": "hold",
        "tool_calls": [{"name": "run_shell_command", "arguments": {"command": HOLD}, "id": "s1"}],
    },
    {"match": "hold", "text": "Stopped."},
]
FINAL = ("completed", "failed", "cancelled")


def _key(name: str) -> ApiKey:
    digest = hashlib.sha256(f"sk-{name}".encode()).hexdigest()
    return ApiKey(name, digest, ceiling="all", policy="ask")


def _auth(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer sk-{name}"}


def v2_agent(tmp: Path) -> AgentSpec:
    """Our agent driven in v2, each line it reads and writes in `tmp/agent-log/agent.jsonl`."""
    spec = replace(scripted_spec(tmp, SCRIPT), protocol=2)
    logs = tmp / "agent-log"
    logs.mkdir(exist_ok=True)
    command = (sys.executable, str(TEE), str(logs / "agent.jsonl"), "--", *spec.command)
    sandbox = AgentSandbox(read=(str(TEE.parent),), write=(str(logs),))
    return replace(spec, command=command, sandbox=sandbox)


def agent_received(tmp: Path, method: str) -> list[Message]:
    lines = (tmp / "agent-log" / "agent.jsonl").read_text().splitlines()
    sent = [line["msg"] for line in map(json.loads, lines) if line["dir"] == "send"]
    return [m for m in sent if m.get("method") == method]


def running(message: Message) -> bool:
    update = update_of(message)
    return update.get("toolCallId") == "s1" and update.get("status") == "in_progress"


async def _allow(peer: V2Peer) -> None:
    """Answer the agent's permission question for the shell command, if it asks one."""
    asked = await peer.wait_for(
        lambda m: m.get("method") == "session/request_permission" or running(m)
    )
    if asked.get("method") == "session/request_permission":
        answer = {"outcome": {"outcome": "selected", "optionId": "allow"}}
        await peer.send({"jsonrpc": "2.0", "id": asked["id"], "result": answer})


async def _open_session(peer: V2Peer, cwd: str) -> str:
    await peer.open()
    sid = (await peer.call("session/new", {"cwd": cwd}))["result"]["sessionId"]
    await peer.watch(sid)
    return sid


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_a_v2_clients_tool_call_cancel_reaches_a_v2_agent(
    gateway_factory: Any, tmp_path: Path, scheme: str
) -> None:
    keys = (_key("alice"), _key("bob"))
    gw: LiveGateway = gateway_factory(agents=(v2_agent(tmp_path),), keys=keys)
    cwd = gw.config.agents[0].cwd
    fifo = Path(cwd) / "held.fifo"
    os.mkfifo(fifo)
    alice, bob = peer_for(gw, scheme, _auth("alice")), peer_for(gw, scheme, _auth("bob"))
    watcher = HttpV2(f"http://127.0.0.1:{gw.port}/acp", INIT_V1, _auth("alice"))
    try:
        sid = await _open_session(alice, cwd)
        await watcher.open()
        loaded = {"sessionId": sid, "cwd": cwd, "mcpServers": []}
        assert "result" in await watcher.call("session/load", loaded)
        await watcher.watch(sid)
        bobs = await _open_session(bob, cwd)
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "hold it"}]}
        await alice.call("session/prompt", prompt, sid)
        held = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the command's end meets it
        try:
            await _allow(alice)
            started = await _read(held)  # the command runs
            offered = await alice.wait_for(running)
            unknown = await alice.call("tool_call/cancel", {"sessionId": sid, "toolCallId": "s9"})
            # bob: alice's session is not his; his own session never had her call
            theirs = await bob.call("tool_call/cancel", {"sessionId": sid, "toolCallId": "s1"})
            mine = await bob.call("tool_call/cancel", {"sessionId": bobs, "toolCallId": "s1"})
            accepted = await alice.call("tool_call/cancel", {"sessionId": sid, "toolCallId": "s1"})
            assert "result" in accepted, accepted  # (else the command runs on)
            rest = await _read_to_eof(held)  # EOF: every writer killed
        finally:
            os.close(held)
        idle = await alice.wait_for(is_update("state_update", state="idle"))
        await watcher.wait_for(lambda m: "Stopped." in v1_text(watcher.received))
        assert alice.errors() == [] and bob.errors() == []
        # (v1's load reply names its session on purpose, for the SDK's client: service.py)
        assert [e for e in watcher.errors(1) if "LoadSessionResponse" not in e] == []
    finally:
        await alice.close()
        await bob.close()
        await watcher.close()
    assert started == b"started\n" and rest == b""
    assert update_of(offered)["capabilities"] == {"cancel": {}}, offered  # as the agent said
    assert accepted == {"jsonrpc": "2.0", "id": accepted["id"], "result": {}}, accepted
    assert update_of(idle)["stopReason"] == "end_turn"  # the turn went on after the tool
    final = [u for u in updates(alice.received) if u.get("toolCallId") == "s1"][-1]
    assert final["capabilities"] is None and final["status"] == "cancelled", final
    # a v1 reader of the same session: v1's word for it, and no v2 field
    (v1_final,) = [u for u in updates(watcher.received) if u.get("status") in FINAL]
    assert v1_final["status"] == "failed" and "capabilities" not in v1_final, v1_final
    assert unknown["error"]["code"] == -32602, unknown
    assert unknown["error"]["data"]["reason"] == "unknown"
    assert theirs["error"]["code"] == -32002, theirs  # not found: not bob's to see
    assert mine["error"]["code"] == -32602 and mine["error"]["data"]["reason"] == "unknown"
    # only alice's one cancel reached the agent
    assert [m["params"] for m in agent_received(tmp_path, "tool_call/cancel")] == [
        {"sessionId": sid, "toolCallId": "s1"}
    ]


async def _read(fd: int) -> bytes:
    """What the FIFO has once it is readable (b"" at its end: no writer left). A FIFO no
    writer has opened yet is not readable on Linux, so this waits for the command."""
    readable = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_reader(fd, readable.set)
    try:
        await readable.wait()
    finally:
        loop.remove_reader(fd)
    return os.read(fd, 64)


async def _holders_route(holder: LiveGateway, sid: str) -> tuple[Any, Any, str]:
    """The route a replica passes a session call on by, asked by bob (not the owner) and
    by alice with a method it does not serve; and the conversation's title there."""
    async with httpx.AsyncClient(base_url=holder.url) as http:
        listed = await http.get("/v1/conversations", headers=_auth("alice"))
        path = f"/v1/conversations/{listed.json()['data'][0]['id']}/acp"
        params = {"sessionId": sid, "toolCallId": "s1"}
        call = {"method": "tool_call/cancel", "params": params}
        bobs = await http.post(path, json=call, headers=_auth("bob"))
        call = {"method": "session/prompt", "params": params}
        other = await http.post(path, json=call, headers=_auth("alice"))
        return bobs, other, listed.json()["data"][0]["title"]


async def _read_to_eof(fd: int) -> bytes:
    data = b""
    while chunk := await _read(fd):
        data += chunk
    return data


async def test_a_v2_clients_session_calls_reach_the_replica_holding_its_session(
    gateway_factory: Any, tmp_path: Path, pg_url: str
) -> None:
    """B serves its v2 client a session A holds: its `session/set_config_option`,
    `session/set_title`, `tool_call/cancel` and `terminal/cancel` go to A once and are answered as A answers its own client (the
    agent got each once); an unknown id is refused there with nothing sent to the agent."""
    spec, keys = v2_agent(tmp_path), (_key("alice"), _key("bob"))
    a = gateway_factory(agents=(spec,), keys=keys, store=pg_url)
    b = gateway_factory(agents=(spec,), keys=keys, store=pg_url)
    fifo = Path(spec.cwd) / "held.fifo"
    os.mkfifo(fifo)
    at_a, at_b = peer_for(a, "ws", _auth("alice")), peer_for(b, "ws", _auth("alice"))
    bob = peer_for(b, "ws", _auth("bob"))
    try:
        sid = await _open_session(at_a, spec.cwd)
        await at_b.open()
        await bob.open()
        resumed = await at_b.call("session/resume", {"sessionId": sid, "cwd": spec.cwd})
        assert "configOptions" in resumed["result"], resumed  # A's answer: A holds it
        mode = {"sessionId": sid, "configId": "mode", "type": "id", "value": "full-access"}
        far_set = await at_b.call("session/set_config_option", mode)
        here_set = await at_a.call("session/set_config_option", mode)
        far_title = await at_b.call("session/set_title", {"sessionId": sid, "title": "Held\n A"})
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "hold it"}]}
        turn = len(at_b.received)  # (the resume's state was idle too)
        await at_a.call("session/prompt", prompt)
        held = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        try:
            await _allow(at_a)
            started = await _read(held)
            offered = await at_b.wait_for(running)  # from the shared log
            unknown = await at_b.call("tool_call/cancel", {"sessionId": sid, "toolCallId": "s9"})
            no_terminal = {"sessionId": sid, "terminalId": "t9"}
            unknown_terminal = await at_b.call("terminal/cancel", no_terminal)  # A answers
            theirs = await bob.call("tool_call/cancel", {"sessionId": sid, "toolCallId": "s1"})
            accepted = await at_b.call("tool_call/cancel", {"sessionId": sid, "toolCallId": "s1"})
            assert "result" in accepted, accepted  # (else the command runs on)
            rest = await _read_to_eof(held)
        finally:
            os.close(held)
        idle = await at_b.wait_for(is_update("state_update", state="idle"), turn)
        bobs, other, title = await _holders_route(a, sid)
        assert at_a.errors() == [] and at_b.errors() == [] and bob.errors() == []
    finally:
        for peer in (at_a, at_b, bob):
            await peer.close()
    assert "result" in far_set and far_set["result"] == here_set["result"], (far_set, here_set)
    [current] = [o for o in far_set["result"]["configOptions"] if o["configId"] == "mode"]
    assert current["currentValue"] == "full-access"
    assert started == b"started\n" and rest == b"" and accepted["result"] == {}
    assert update_of(offered)["capabilities"] == {"cancel": {}}
    assert update_of(idle)["stopReason"] == "end_turn"
    assert unknown["error"]["code"] == -32602 and unknown["error"]["data"]["reason"] == "unknown"
    assert unknown_terminal["error"]["data"] == {"field": "terminalId", "reason": "unknown"}
    assert theirs["error"]["code"] == -32002, theirs
    assert bobs.status_code == 404, bobs.text  # the holder's route: only the owner's
    assert other.json()["error"]["code"] == -32601  # and only the bridged methods
    assert far_title["result"] == {"title": "Held A"} and title == "Held A"  # A's rename
    assert len(agent_received(tmp_path, "session/set_config_option")) == 2  # once each
    assert [m["params"] for m in agent_received(tmp_path, "tool_call/cancel")] == [
        {"sessionId": sid, "toolCallId": "s1"}
    ]
