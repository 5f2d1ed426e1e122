"""Remote ACP: the gateway's agents as ACP endpoints over HTTP (POST + SSE) and WebSocket.

The clients are the official SDK's (`acp.connect_to_agent` over `acp.http` and
`acp.ws`) and a raw httpx one for what the SDK's does not do (resume a stream).
The agent is ours, real processes behind the gateway.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from acp import RequestError, text_block

from agentao.client import (
    AgentCommand,
    Client,
    ClientError,
    ClientPolicy,
    PermissionDecision,
    TurnEnd,
)
from agentao.gateway.auth import LOCAL
from agentao.gateway.config import AgentSpec, ApiKey, Limits
from tests.fakes import sdk_agent
from tests.gateway.acp_peers import RawPeer, SdkPeer, chunk_text, reply_to, until
from tests.gateway.conftest import ON_EACH_STORE, LiveGateway, scripted_spec
from tests.waiting import until as wait_until

pytestmark = pytest.mark.timeout(90)
SLOW_TEXT = "tick " * 150


def acp_url(gw: LiveGateway, scheme: str = "http", path: str = "/acp") -> str:
    return f"{scheme}://127.0.0.1:{gw.port}{path}"


def work(gw: LiveGateway) -> str:
    return gw.config.agents[0].cwd


@pytest.fixture
def remote_gateway(gateway_factory: Any) -> LiveGateway:
    return gateway_factory()


# ---- the SDK's clients, end to end --------------------------------------------------------


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_the_sdk_client_initializes_prompts_cancels_and_loads(
    remote_gateway: LiveGateway, scheme: str
) -> None:
    gw = remote_gateway
    peer = await SdkPeer.connect(acp_url(gw, scheme))
    try:
        init = await peer.initialize()
        assert init.agent_info.name == "agentao" and init.agent_capabilities.load_session
        assert init.auth_methods == []  # the gateway authenticated its agents itself
        session = await peer.conn.new_session(cwd=work(gw), mcp_servers=[])
        sid = session.session_id

        done = await peer.conn.prompt(session_id=sid, prompt=[text_block("hello")])
        assert done.stop_reason == "end_turn"
        # The SDK handles each update in a task of its own and the reply at once: wait for them.
        await wait_until(lambda: "usage_update" in peer.kinds(), "the turn's last update")
        assert peer.texts(sid) == "Answer one."
        assert "agent_thought_chunk" in peer.kinds()

        prompt = asyncio.ensure_future(
            peer.conn.prompt(session_id=sid, prompt=[text_block("slow please")])
        )
        peer.got_update.clear()
        await asyncio.wait_for(peer.got_update.wait(), 10)
        while "tick" not in peer.texts(sid):
            peer.got_update.clear()
            await asyncio.wait_for(peer.got_update.wait(), 10)
        await peer.conn.cancel(session_id=sid)
        cancelled = await asyncio.wait_for(prompt, 10)
        assert cancelled.stop_reason == "cancelled"
        assert len(peer.texts(sid)) < len("Answer one." + SLOW_TEXT)
    finally:
        await peer.close()

    # A second client loads the session and gets its history (sent before the reply:
    # test_one_log.py reads the wire; the SDK runs each notification's handler in a task
    # of its own, which may run after the reply resolved, so that is waited for here).
    other = await SdkPeer.connect(acp_url(gw, scheme))
    try:
        await other.initialize()
        loaded = await other.conn.load_session(session_id=sid, cwd=work(gw), mcp_servers=[])
        assert loaded is not None
        await wait_until(
            lambda: (
                other.kinds().count("user_message_chunk") == 2
                and other.texts(sid).startswith("Answer one.tick")
            ),
            "the replayed history",
        )
        replayed = other.kinds()
        assert replayed.count("user_message_chunk") == 2  # both prompts, as the user sent them
        assert other.texts(sid).startswith("Answer one.tick")
        done = await other.conn.prompt(session_id=sid, prompt=[text_block("again")])
        assert done.stop_reason == "end_turn"
        # Its updates were sent before the reply; the SDK's handlers for them may run after.
        await wait_until(lambda: other.texts(sid).endswith("Answer two."), "the second answer")
    finally:
        await other.close()


async def test_a_permission_reaches_the_remote_client_and_its_answer_the_agent(
    remote_gateway: LiveGateway,
) -> None:
    gw = remote_gateway
    peer = await SdkPeer.connect(acp_url(gw))
    try:
        await peer.initialize()
        sid = (await peer.conn.new_session(cwd=work(gw), mcp_servers=[])).session_id
        done = await peer.conn.prompt(session_id=sid, prompt=[text_block("please write")])
        assert done.stop_reason == "end_turn"
        assert [call.title for call in peer.asked] == ["Write hello.txt"]
        assert (Path(work(gw)) / "hello.txt").read_text() == "hi\n"
        # The SDK handles each update in a task of its own and the reply at once: wait for them.
        await wait_until(lambda: peer.texts(sid).endswith("Wrote hello.txt."), "the answer")
        assert peer.texts(sid) == "Wrote hello.txt."
    finally:
        await peer.close()
    # The web UI and the task stream see the same session: its turn is a task.
    tasks = gw.http().get("/v1/conversations").json()
    assert any(c.get("source") == "acp" for c in tasks["data"]), tasks


async def test_a_rejection_reaches_the_agent_with_the_clients_reason(
    remote_gateway: LiveGateway,
) -> None:
    gw = remote_gateway
    peer = await SdkPeer.connect(acp_url(gw), answer="reject")
    try:
        await peer.initialize()
        sid = (await peer.conn.new_session(cwd=work(gw), mcp_servers=[])).session_id
        await peer.conn.prompt(session_id=sid, prompt=[text_block("please write")])
        assert not (Path(work(gw)) / "hello.txt").exists()
        results = [
            u for _s, u in peer.updates if getattr(u, "session_update", "") == "tool_call_update"
        ]
        said = json.dumps([r.model_dump(mode="json") for r in results])
        assert "a person at a remote ACP client chose" in said, said
    finally:
        await peer.close()


# ---- several clients on one live session -----------------------------------------------


async def test_two_clients_on_one_session_the_first_answer_wins(
    remote_gateway: LiveGateway,
) -> None:
    gw = remote_gateway
    slow = await SdkPeer.connect(acp_url(gw), answer="wait")  # never answers
    quick = await SdkPeer.connect(acp_url(gw, "ws"))
    try:
        await slow.initialize()
        await quick.initialize()
        sid = (await slow.conn.new_session(cwd=work(gw), mcp_servers=[])).session_id
        await quick.conn.load_session(session_id=sid, cwd=work(gw), mcp_servers=[])

        done = await slow.conn.prompt(session_id=sid, prompt=[text_block("please write")])
        assert done.stop_reason == "end_turn"
        assert len(slow.asked) == len(quick.asked) == 1  # both were asked
        sent = await asyncio.wait_for(_sent_to(gw, slow), 10)  # and it was taken back from one
        asked = next(m for m in sent if m.get("method") == "session/request_permission")
        assert {
            "jsonrpc": "2.0",
            "method": "$/cancel_request",
            "params": {"requestId": asked["id"]},
        } in sent
        assert (Path(work(gw)) / "hello.txt").read_text() == "hi\n"
        # Both saw the whole turn, started by the other one or not.
        await asyncio.wait_for(_text_appears(quick, sid, "Wrote hello.txt."), 10)
        assert slow.texts(sid) == quick.texts(sid) == "Wrote hello.txt."

        # Either may prompt while it is idle; a prompt on a busy session is refused.
        turn = asyncio.ensure_future(
            quick.conn.prompt(session_id=sid, prompt=[text_block("slow now")])
        )
        await asyncio.wait_for(_text_appears(slow, sid, "tick"), 10)
        with pytest.raises(RequestError, match=r"busy|running"):
            await slow.conn.prompt(session_id=sid, prompt=[text_block("me too")])
        # A client that leaves does not end the other's turn.
        await slow.close()
        assert (await asyncio.wait_for(turn, 20)).stop_reason == "end_turn"
        await wait_until(lambda: quick.texts(sid).endswith(SLOW_TEXT), "the slow answer")
    finally:
        await slow.close()
        await quick.close()


async def _sent_to(gw: LiveGateway, peer: SdkPeer) -> list[dict[str, Any]]:
    """What the gateway sent `peer`'s connection, once it withdrew a question (the SDK's
    client has no handler for `$/cancel_request`, so it is read from the store)."""
    connection_id = peer.transport._connection_id
    while True:
        # As a reader reads them back: an agent update is stored as a reference to the
        # conversation's log, and rebuilt from it.
        hub = gw.gateway.remote.connections.hub
        stored = gw.run(hub.stored_after(connection_id, 0, None))
        sent = [json.loads(m.body) for m in stored]
        if any(m.get("method") == "$/cancel_request" for m in sent):
            return sent
        await asyncio.sleep(0.02)


async def _text_appears(peer: SdkPeer, sid: str, text: str) -> None:
    while text not in peer.texts(sid):
        peer.got_update.clear()
        await peer.got_update.wait()


async def test_an_openai_turn_is_seen_by_remote_watchers(remote_gateway: LiveGateway) -> None:
    gw = remote_gateway
    peer = await SdkPeer.connect(acp_url(gw))
    try:
        await peer.initialize()
        sid = (await peer.conn.new_session(cwd=work(gw), mcp_servers=[])).session_id
        conv = gw.run(gw.gateway.conversations.by_session("agentao", sid))
        headers = {"X-Session-Id": conv.id}
        client = gw.openai()
        reply = await asyncio.to_thread(
            client.chat.completions.create,
            model="agentao",
            messages=[{"role": "user", "content": "hi"}],
            extra_headers=headers,
        )
        assert reply.choices[0].message.content == "Answer one."
        await asyncio.wait_for(_text_appears(peer, sid, "Answer one."), 10)
    finally:
        await peer.close()


# ---- nothing lost on a reconnect -------------------------------------------------------


@ON_EACH_STORE
async def test_an_sse_stream_dropped_mid_turn_resumes_with_last_event_id(
    remote_gateway: LiveGateway,
) -> None:
    gw = remote_gateway
    peer = RawPeer(acp_url(gw))
    try:
        assert (await peer.initialize()).status_code == 200
        async with peer.stream() as events:
            new_id, _ = await peer.post("session/new", {"cwd": work(gw), "mcpServers": []})
            sid = (await until(events, reply_to(new_id)))[-1].message["result"]["sessionId"]

        first: list[Any] = []
        async with peer.stream(sid) as events:
            prompt_id, answer = await peer.post(
                "session/prompt",
                {"sessionId": sid, "prompt": [{"type": "text", "text": "slow"}]},
                session=sid,
            )
            assert answer.status_code == 202
            async for event in events:
                first.append(event)
                if "tick tick tick" in chunk_text(first):
                    break
        # The stream dropped mid-turn; the turn goes on. Resume after the last id seen.
        async with peer.stream(sid, last_event_id=first[-1].id) as events:
            rest = await until(events, reply_to(prompt_id))
        ids = [e.id for e in first + rest]
        assert ids == sorted(set(ids))  # in order, nothing twice
        assert chunk_text(first + rest) == SLOW_TEXT  # nothing missing
        assert rest[-1].message["result"]["stopReason"] == "end_turn"
    finally:
        await peer.close()


@ON_EACH_STORE
async def test_a_websocket_resumes_after_the_frames_it_got(remote_gateway: LiveGateway) -> None:
    gw = remote_gateway
    url = acp_url(gw, "ws")
    socket = await websockets.connect(url)
    connection_id = socket.response.headers["acp-connection-id"]
    assert "agentao_affinity=" in socket.response.headers.get("set-cookie", "")
    frames: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        await socket.send(json.dumps(message))

    await send(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    )
    await send(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/new",
            "params": {"cwd": work(gw), "mcpServers": []},
        }
    )
    while not any(f.get("id") == 2 for f in frames):
        frames.append(json.loads(await socket.recv()))
    sid = frames[-1]["result"]["sessionId"]
    prompt = [{"type": "text", "text": "slow"}]
    await send(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "session/prompt",
            "params": {"sessionId": sid, "prompt": prompt},
        }
    )
    while "tick tick" not in _ws_text(frames):
        frames.append(json.loads(await socket.recv()))
    socket.transport.abort()  # dropped mid-turn, no closing handshake

    resumed = await websockets.connect(
        f"{url}?after_seq={len(frames)}", additional_headers={"Acp-Connection-Id": connection_id}
    )
    try:
        while not any(f.get("id") == 3 for f in frames):
            frames.append(json.loads(await resumed.recv()))
    finally:
        await resumed.close()
    assert frames[0]["id"] == 1 and "agentCapabilities" in frames[0]["result"]
    assert _ws_text(frames) == SLOW_TEXT
    assert frames[-1]["result"]["stopReason"] == "end_turn"


def _ws_text(frames: list[dict[str, Any]]) -> str:
    return "".join(
        f["params"]["update"]["content"]["text"]
        for f in frames
        if f.get("method") == "session/update"
        and f["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )


async def test_a_websocket_that_says_goodbye_is_closed_for_good(
    remote_gateway: LiveGateway,
) -> None:
    url = acp_url(remote_gateway, "ws")
    socket = await websockets.connect(url)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    await socket.send(json.dumps(init))
    assert json.loads(await socket.recv())["id"] == 1
    connection_id = socket.response.headers["acp-connection-id"]
    await socket.close(code=1000)  # done: nothing to come back for
    connections = remote_gateway.gateway.remote.connections
    await _eventually(lambda: all(c.id != connection_id for c in connections.all()))
    with pytest.raises(websockets.InvalidStatus) as refused:
        await websockets.connect(url, additional_headers={"Acp-Connection-Id": connection_id})
    assert refused.value.response.status_code == 404


async def test_a_pending_permission_is_offered_again_to_a_client_that_comes_back(
    remote_gateway: LiveGateway,
) -> None:
    gw = remote_gateway
    first = await SdkPeer.connect(acp_url(gw), answer="wait")
    await first.initialize()
    sid = (await first.conn.new_session(cwd=work(gw), mcp_servers=[])).session_id
    turn = asyncio.ensure_future(
        first.conn.prompt(session_id=sid, prompt=[text_block("please write")])
    )
    await asyncio.wait_for(first.got_question.wait(), 10)
    await first.close()  # gone while the question is open (DELETE: detached)

    second = await SdkPeer.connect(acp_url(gw))
    try:
        await second.initialize()
        await second.conn.load_session(session_id=sid, cwd=work(gw), mcp_servers=[])
        await asyncio.wait_for(second.got_question.wait(), 10)
        assert [c.title for c in second.asked] == ["Write hello.txt"]
        await asyncio.wait_for(_text_appears(second, sid, "Wrote hello.txt."), 10)
        assert (Path(work(gw)) / "hello.txt").read_text() == "hi\n"
    finally:
        turn.cancel()
        await second.close()


async def test_a_question_asked_before_any_client_watched_is_asked_of_one_that_attaches(
    remote_gateway: LiveGateway,
) -> None:
    """A task asks while no remote client watches its session: a client that loads the
    session then is asked it, and its answer reaches the agent."""
    gw = remote_gateway
    first = await SdkPeer.connect(acp_url(gw))
    await first.initialize()
    sid = (await first.conn.new_session(cwd=work(gw), mcp_servers=[])).session_id
    await first.close()
    conv = gw.run(gw.gateway.conversations.by_session("agentao", sid))
    body = {"agent": "agentao", "prompt": "please write", "conversation_id": conv.id}
    with gw.http() as http:
        task = http.post("/v1/tasks", json={**body, "permission_policy": "ask"}).json()
    headers = {"Authorization": f"Bearer {gw.local_token}"} if gw.local_token else {}
    async with websockets.connect(gw.ws_url(task["stream_url"]), additional_headers=headers) as ws:
        async for message in ws:  # the question is open at the desk, and nobody watches
            if json.loads(message)["type"] == "permission-request":
                break

    late = await SdkPeer.connect(acp_url(gw))
    try:
        await late.initialize()
        await late.conn.load_session(session_id=sid, cwd=work(gw), mcp_servers=[])
        await asyncio.wait_for(late.got_question.wait(), 10)
        assert [c.title for c in late.asked] == ["Write hello.txt"]
        await asyncio.wait_for(_text_appears(late, sid, "Wrote hello.txt."), 10)
        assert (Path(work(gw)) / "hello.txt").read_text() == "hi\n"
    finally:
        await late.close()


# ---- who may do what -------------------------------------------------------------------


async def test_refusals_are_the_sdk_servers(remote_gateway: LiveGateway) -> None:
    gw = remote_gateway
    async with httpx.AsyncClient(base_url=gw.url) as http:
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
        assert (await http.post("/acp", content=json.dumps(init))).status_code == 415
        assert (await http.post("/acp", json=[init])).status_code == 501
        assert (await http.post("/acp", json=7)).status_code == 400
        ping = {"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}}
        assert (await http.post("/acp", json=ping)).status_code == 400  # no connection id
        unknown = {"Acp-Connection-Id": "acpc_nope"}
        assert (await http.post("/acp", json=ping, headers=unknown)).status_code == 404
        assert (await http.get("/acp", headers=unknown)).status_code == 406
        sse = {**unknown, "Accept": "text/event-stream"}
        assert (await http.get("/acp", headers=sse)).status_code == 404
        assert (await http.post("/agents/nobody/acp", json=init)).status_code == 404

        opened = await http.post("/acp", json=init)
        assert opened.status_code == 200 and opened.json()["id"] == 0
        mine = {"Acp-Connection-Id": opened.headers["acp-connection-id"]}
        prompt = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/prompt",
            "params": {"sessionId": "x"},
        }
        assert (await http.post("/acp", json=prompt, headers=mine)).status_code == 400
        other = {**mine, "Acp-Session-Id": "not-mine"}
        assert (await http.post("/acp", json=prompt, headers=other)).status_code == 404
        assert (await http.delete("/acp", headers=mine)).status_code == 202
        assert (await http.delete("/acp", headers=mine)).status_code == 404


async def test_a_foreign_origin_is_refused(remote_gateway: LiveGateway) -> None:
    gw = remote_gateway
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    evil = {"Origin": "https://evil.example"}
    async with httpx.AsyncClient(base_url=gw.url) as http:
        assert (await http.post("/acp", json=init, headers=evil)).status_code == 403
    with pytest.raises(websockets.InvalidStatus) as refused:
        await websockets.connect(acp_url(gw, "ws"), additional_headers=evil)
    assert refused.value.response.status_code == 403


async def test_a_session_outside_the_workspace_or_with_a_host_command_is_refused(
    gateway_factory: Any, tmp_path: Path
) -> None:
    keys = (ApiKey("alice", _sha("sk-alice"), ceiling="ask", policy="ask"),)
    gw = gateway_factory(keys=keys)
    peer = await SdkPeer.connect(acp_url(gw), headers={"Authorization": "Bearer sk-alice"})
    try:
        await peer.initialize()
        with pytest.raises(Exception, match="outside the workspace of agent 'agentao'"):
            await peer.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        inside = str(Path(work(gw)) / "..")
        with pytest.raises(Exception, match="outside the workspace of agent 'agentao'"):
            await peer.conn.new_session(cwd=inside, mcp_servers=[])
        server = {"name": "evil", "command": "/bin/sh", "args": ["-c", "id"], "env": []}
        with pytest.raises(Exception, match="stdio MCP server"):
            await peer.conn.new_session(cwd=work(gw), mcp_servers=[server])
    finally:
        await peer.close()


async def test_remote_session_directories_are_checked_where_they_resolve(
    gateway_factory: Any, tmp_path: Path
) -> None:
    """Below the ceiling `all`, the cwd and every additional directory must resolve inside
    the agent's cwd: a directory outside, or a symlink inside that points out, is -32602
    naming it; a real subdirectory is accepted (the control)."""
    keys = (ApiKey("alice", _sha("sk-alice"), ceiling="ask", policy="ask"),)
    gw = gateway_factory(keys=keys)
    outside = tmp_path / "outside"
    outside.mkdir()
    (Path(work(gw)) / "link").symlink_to(outside)
    link = str(Path(work(gw)) / "link")
    (Path(work(gw)) / "sub").mkdir()
    peer = await SdkPeer.connect(acp_url(gw), headers={"Authorization": "Bearer sk-alice"})
    try:
        await peer.initialize()
        refused = [
            ({"cwd": work(gw), "additional_directories": [str(outside)]}, str(outside)),
            ({"cwd": link}, f"{link} (which resolves to {outside})"),
            ({"cwd": work(gw), "additional_directories": [link]}, f"{link} (which resolves"),
            ({"cwd": work(gw), "additional_directories": ["sub"]}, "must be an absolute path"),
            # realpath raises on a NUL: the refusal must still be -32602, not an internal error
            ({"cwd": work(gw) + "/sub\x00"}, "without NUL"),
            ({"cwd": work(gw) + "/" + "a" * 5000}, "at most 4096 bytes"),
        ]
        for params, named in refused:
            with pytest.raises(RequestError) as bad:
                await peer.conn.new_session(mcp_servers=[], **params)
            assert bad.value.code == -32602 and named in str(bad.value), params
        sub = str(Path(work(gw)) / "sub")
        session = await peer.conn.new_session(cwd=sub, additional_directories=[sub], mcp_servers=[])
        assert session.session_id
    finally:
        await peer.close()
    assert list(outside.iterdir()) == []


async def test_a_remote_session_opens_where_its_cwd_resolved_when_checked(
    gateway_factory: Any, tmp_path: Path
) -> None:
    """A cwd given through a symlink inside the workspace is checked where it resolves,
    and the agent opens that directory: pointing the link outside afterwards moves
    nothing, and the approved write lands where the check was made."""
    keys = (ApiKey("alice", _sha("sk-alice"), ceiling="ask", policy="ask"),)
    gw = gateway_factory(keys=keys)
    real, outside = Path(work(gw)) / "real", tmp_path / "outside"
    real.mkdir()
    outside.mkdir()
    link = Path(work(gw)) / "link"
    link.symlink_to(real)
    peer = await SdkPeer.connect(acp_url(gw), headers={"Authorization": "Bearer sk-alice"})
    try:
        await peer.initialize()
        sid = (await peer.conn.new_session(cwd=str(link), mcp_servers=[])).session_id
        listed = await peer.conn.list_sessions()
        assert [s.cwd for s in listed.sessions if s.session_id == sid] == [str(real)]
        link.unlink()
        link.symlink_to(outside)  # the attacker retargets the link the session came through
        done = await peer.conn.prompt(session_id=sid, prompt=[text_block("please write")])
        assert done.stop_reason == "end_turn"
    finally:
        await peer.close()
    assert list(outside.iterdir()) == []
    assert (real / "hello.txt").read_text() == "hi\n"


async def test_keys_see_only_their_own_sessions(gateway_factory: Any) -> None:
    keys = (
        ApiKey("alice", _sha("sk-alice"), ceiling="ask", policy="ask"),
        ApiKey("bob", _sha("sk-bob"), ceiling="ask", policy="ask"),
    )
    gw = gateway_factory(keys=keys)
    alice = await SdkPeer.connect(acp_url(gw), headers={"Authorization": "Bearer sk-alice"})
    bob = await SdkPeer.connect(acp_url(gw), headers={"Authorization": "Bearer sk-bob"})
    try:
        await alice.initialize()
        await bob.initialize()
        sid = (await alice.conn.new_session(cwd=work(gw), mcp_servers=[])).session_id
        with pytest.raises(RequestError, match=r"not found|Resource"):
            await bob.conn.load_session(session_id=sid, cwd=work(gw), mcp_servers=[])
        listed = await bob.conn.list_sessions()
        assert sid not in [s.session_id for s in listed.sessions]
        assert sid in [s.session_id for s in (await alice.conn.list_sessions()).sessions]
    finally:
        await alice.close()
        await bob.close()
    async with httpx.AsyncClient(base_url=gw.url) as http:
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
        assert (await http.post("/acp", json=init)).status_code == 401


async def test_a_keys_ceiling_decides_without_asking(gateway_factory: Any) -> None:
    keys = (ApiKey("ci", _sha("sk-ci"), ceiling="reads", policy="reads"),)
    gw = gateway_factory(keys=keys)
    peer = await SdkPeer.connect(acp_url(gw), headers={"Authorization": "Bearer sk-ci"})
    try:
        await peer.initialize()
        sid = (await peer.conn.new_session(cwd=work(gw), mcp_servers=[])).session_id
        await peer.conn.prompt(session_id=sid, prompt=[text_block("please write")])
        assert peer.asked == []  # under "reads" nobody is asked: a write is rejected
        assert not (Path(work(gw)) / "hello.txt").exists()
    finally:
        await peer.close()


async def test_connections_per_key_are_limited(gateway_factory: Any) -> None:
    gw = gateway_factory(limits=Limits(remote_connections_per_key=2))
    a, b, c = RawPeer(acp_url(gw)), RawPeer(acp_url(gw)), RawPeer(acp_url(gw))
    try:
        assert (await a.initialize()).status_code == (await b.initialize()).status_code == 200
        async with a.stream() as a_events, b.stream() as b_events:
            for peer, events in ((a, a_events), (b, b_events)):  # both read their streams
                listed, _ = await peer.post("session/list", {})
                await until(events, reply_to(listed))
            refused = await c.initialize()
            assert refused.status_code == 429 and "remote_connections_per_key" in refused.text
        # Nobody reads them now (dropped, perhaps for good): the least recent gives way,
        # once the gateway has seen the streams end.
        await _eventually(lambda: not any(c.readers for c in gw.gateway.remote.connections.all()))
        assert (await c.initialize()).status_code == 200
        ping = {"jsonrpc": "2.0", "id": 9, "method": "session/list", "params": {}}
        answers = [((await peer.send(ping)).status_code, peer) for peer in (a, b)]
        assert sorted(status for status, _ in answers) == [202, 404]  # one made room
        # A closed connection frees its place at once.
        await next(peer for status, peer in answers if status == 202).close()
        d = RawPeer(acp_url(gw))
        assert (await d.initialize()).status_code == 200
        await d.close()
    finally:
        for peer in (a, b, c):
            await peer.close()


async def _eventually(check: Any) -> None:
    """Until `check()` holds of the gateway's state (kept by its own thread and event loop,
    so there is nothing here to wait on but the state itself); the test's timeout bounds it."""
    while not check():  # noqa: ASYNC110
        await asyncio.sleep(0.01)


def _sha(secret: str) -> str:
    import hashlib

    return hashlib.sha256(secret.encode()).hexdigest()


def test_a_named_agent_has_its_own_path(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory(
        agents=(scripted_spec(tmp_path / "a"), scripted_spec(tmp_path / "b", name="second"))
    )

    async def initialize() -> str:
        peer = await SdkPeer.connect(acp_url(gw, path="/agents/second/acp"))
        try:
            await peer.initialize()
            cwd = gw.config.agents[1].cwd
            sid = (await peer.conn.new_session(cwd=cwd, mcp_servers=[])).session_id
            conv = gw.run(gw.gateway.conversations.by_session("second", sid))
            return conv.record.agent
        finally:
            await peer.close()

    assert asyncio.run(initialize()) == "second"


# ---- other clients, other agents ---------------------------------------------------------


async def test_agentao_run_completes_a_tool_turn_through_the_gateway(
    remote_gateway: LiveGateway,
) -> None:
    gw = remote_gateway
    command = [sys.executable, "-m", "agentao", "run", "--agent", acp_url(gw)]
    command += ["--cwd", work(gw), "--approve", "all", "please write"]
    run = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "CI": "true"},
    )
    out, err = await asyncio.wait_for(run.communicate(), 60)
    assert run.returncode == 0, err.decode()
    assert "Wrote hello.txt." in out.decode()
    assert (Path(work(gw)) / "hello.txt").read_text() == "hi\n"
    # The gateway saw the turn as its own conversation, started over remote ACP.
    convs = gw.run(gw.gateway.conversations.store.list_conversations(LOCAL.name, 10))
    assert [c.source for c in convs] == ["acp"]


async def test_a_third_party_agent_is_served_remotely(gateway_factory: Any, tmp_path: Path) -> None:
    work_dir = tmp_path / "work"
    work_dir.mkdir()
    spec = AgentSpec("sdk-agent", (sys.executable, sdk_agent.__file__), cwd=str(work_dir))
    gw = gateway_factory(agents=(spec,))
    notes = str(work_dir / "notes.txt")  # only the editor has it: nothing on this disk
    peer = await SdkPeer.connect(
        acp_url(gw, path="/agents/sdk-agent/acp"), files={notes: "from the editor"}
    )
    try:
        await peer.initialize(fs=True)
        sid = (await peer.conn.new_session(cwd=str(work_dir), mcp_servers=[])).session_id
        assert (
            await peer.conn.prompt(session_id=sid, prompt=[text_block("chunks 3")])
        ).stop_reason == "end_turn"
        # The SDK handles each update in a task of its own and the reply at once: wait for them.
        await asyncio.wait_for(_text_appears(peer, sid, "012"), 10)
        assert peer.texts(sid) == "012"
        # The agent's requests reach the remote client, and its answers the agent.
        await peer.conn.prompt(session_id=sid, prompt=[text_block("ask")])
        assert [c.title for c in peer.asked] == ["Touch a file"]
        await peer.conn.prompt(session_id=sid, prompt=[text_block(f"read {notes}")])
        assert peer.read == [notes]
        await asyncio.wait_for(_text_appears(peer, sid, "read: from the editor"), 10)
        assert peer.texts(sid) == "012permission: yesread: from the editor"
    finally:
        await peer.close()


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_an_editor_spawns_agentao_connect_and_works_through_the_gateway(
    remote_gateway: LiveGateway, scheme: str
) -> None:
    """What an editor does with `"command": "agentao", "args": ["connect", URL]`: a stdio
    agent, which is the gateway's, with the editor's answers to its questions."""
    gw = remote_gateway
    bridge = AgentCommand((sys.executable, "-m", "agentao", "connect", acp_url(gw, scheme)))
    async with Client(bridge, policy=ClientPolicy(approve="all")) as editor:
        assert editor.agent_info.name == "agentao"
        session = await editor.new_session(work(gw))
        events = [event async for event in session.prompt("please write")]
    asked = [e for e in events if isinstance(e, PermissionDecision)]
    assert [d.approved for d in asked] == [True]  # the editor was asked, and said yes
    assert isinstance(events[-1], TurnEnd) and events[-1].stop_reason == "end_turn"
    assert (Path(work(gw)) / "hello.txt").read_text() == "hi\n"


async def test_agentao_connect_tells_the_editor_why_it_cannot_reach_the_agent() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"ws://127.0.0.1:{s.getsockname()[1]}/acp"
    bridge = AgentCommand((sys.executable, "-m", "agentao", "connect", dead))
    with pytest.raises(ClientError, match=r"cannot reach the agent at ws://127\.0\.0\.1"):
        async with Client(bridge):
            pass
    not_a_url = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agentao", "connect", "qwen --acp", stderr=asyncio.subprocess.PIPE
    )
    _, err = await not_a_url.communicate()
    assert not_a_url.returncode == 2 and b"not an http(s):// or ws(s):// URL" in err
