"""The bridge: a v2 remote client on the gateway's (v1) agent gets real ACP v2.

Real gateway, real `agentao --acp` processes behind it (the pool drives them over v1),
and raw v2 clients over HTTP/SSE and WebSocket: `initialize` settles v2, `session/new`
without `mcpServers`, a prompt acknowledged with the gateway's `messageId` and echoed,
`state_update` running -> requires_action (v2's permission question) -> running ->
idle, chunks with messageIds, keyed tool/plan updates, a cancel, and a resume that
replays the conversation's log. The mode as a config option held to the key's ceiling,
`tool_call/cancel` refused (a v1 agent cannot stop one tool), and the official TS v2
client's permission round trip and mid-turn cancel over HTTP and WebSocket. Every
message the gateway sends a v2 client validates against the official v2 schema; a v1
client on the same session meanwhile gets v1.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import sys
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import websockets

from agentao.gateway.ceilings import CeilingRules
from agentao.gateway.config import ApiKey
from tests.e2e.test_v2_peers import result_of, run_client
from tests.e2e.test_v2_peers import states as ts_states
from tests.e2e.test_v2_peers import updates as ts_updates
from tests.gateway.acp_peers import Event, RawPeer, reply_to, until
from tests.gateway.conftest import LiveGateway, scripted_spec
from tests.npm_peers import NpmPeers
from tests.schema_check import check_all, check_recording

pytestmark = pytest.mark.timeout(90)
SLOW_TEXT = "tick " * 150  # the scripted agent's answer to "slow" (conftest.py)

Message = dict[str, Any]


class V2Peer:
    """A raw v2 client: everything it received, in arrival order, and what it sent."""

    def __init__(self, init: Message | None = None) -> None:
        self.init = init or INIT  # the initialize it opens with (v2's, unless told)
        self.received: list[Message] = []
        self.sent: list[Message] = []
        self._arrived = asyncio.Event()
        self._ids = iter(range(1, 1_000_000))

    def got(self, message: Message) -> None:
        self.received.append(message)
        self._arrived.set()

    async def wait_for(self, found: Callable[[Message], bool], after: int = 0) -> Message:
        """The first message from index `after` on for which `found` holds (waits for it)."""
        seen = after
        while True:
            for message in self.received[seen:]:
                if found(message):
                    return message
            seen = len(self.received)
            self._arrived.clear()
            await self._arrived.wait()

    async def call(self, method: str, params: Message, session: str | None = None) -> Message:
        request_id = next(self._ids)
        await self.send(
            {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}, session
        )
        return await self.wait_for(lambda m: m.get("id") == request_id and "method" not in m)

    async def notify(self, method: str, params: Message, session: str | None = None) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params}, session)

    async def send(self, message: Message, session: str | None = None) -> None:
        self.sent.append(message)
        await self._send(message, session)

    async def _send(self, message: Message, session: str | None) -> None:
        raise NotImplementedError

    async def watch(self, session_id: str) -> None:
        """Read the session's messages (a WebSocket reads every scope already)."""

    def errors(self, version: int = 2) -> list[str]:
        return check_all(self.received, self.sent, version=version)


class HttpV2(V2Peer):
    """HTTP: POSTs, the connection's SSE stream and each session's, read into one list."""

    def __init__(
        self, url: str, init: Message | None = None, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(init)
        self.raw = RawPeer(url, headers=headers or {})
        self._readers: list[asyncio.Task[None]] = []

    async def open(self) -> Message:
        self.sent.append(self.init)
        response = await self.raw.send(self.init)
        self.raw.connection_id = response.headers["acp-connection-id"]
        self.got(response.json())
        self._readers.append(asyncio.create_task(self._read(None)))
        return self.received[0]

    async def watch(self, session_id: str) -> None:
        self._readers.append(asyncio.create_task(self._read(session_id)))

    async def _read(self, session: str | None) -> None:
        async with self.raw.stream(session) as events:
            async for event in events:
                self.got(event.message)

    async def _send(self, message: Message, session: str | None) -> None:
        await self.raw.send(message, session=session)

    async def close(self) -> None:
        for reader in self._readers:
            reader.cancel()
        await self.raw.close()


class WsV2(V2Peer):
    """WebSocket: one socket carries every scope."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        super().__init__()
        self.url = url
        self.headers = headers or {}
        self.socket: Any = None
        self._reader: asyncio.Task[None] | None = None

    async def open(self) -> Message:
        self.socket = await websockets.connect(self.url, additional_headers=self.headers)
        self._reader = asyncio.create_task(self._read())
        await self.send(self.init)
        return await self.wait_for(lambda m: m.get("id") == self.init["id"])

    async def _read(self) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for text in self.socket:
                self.got(json.loads(text))

    async def _send(self, message: Message, session: str | None) -> None:
        await self.socket.send(json.dumps(message))

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
        await self.socket.close()


INIT: Message = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": 2,
        "info": {"name": "raw-v2", "version": "1"},
        "capabilities": {},
    },
}


def peer_for(gw: LiveGateway, scheme: str, headers: dict[str, str] | None = None) -> HttpV2 | WsV2:
    url = f"{scheme}://127.0.0.1:{gw.port}/acp"
    return HttpV2(url, headers=headers) if scheme == "http" else WsV2(url, headers)


def update_of(message: Message) -> Message:
    if message.get("method") != "session/update":
        return {}
    return message["params"]["update"]


def is_update(kind: str, **fields: Any) -> Callable[[Message], bool]:
    def found(message: Message) -> bool:
        update = update_of(message)
        return update.get("sessionUpdate") == kind and all(
            update.get(k) == v for k, v in fields.items()
        )

    return found


def updates(messages: list[Message]) -> list[Message]:
    return [u for m in messages if (u := update_of(m))]


def states(messages: list[Message]) -> list[str]:
    return [u["state"] for u in updates(messages) if u["sessionUpdate"] == "state_update"]


@pytest.fixture
def remote_gateway(gateway_factory: Any) -> LiveGateway:
    return gateway_factory()


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_a_v2_client_on_a_v1_agent_gets_real_v2(
    remote_gateway: LiveGateway, scheme: str
) -> None:
    gw = remote_gateway
    peer = peer_for(gw, scheme)
    try:
        init = await peer.open()
        assert init["result"]["protocolVersion"] == 2, init
        opened = await peer.call("session/new", {"cwd": gw.config.agents[0].cwd})  # no mcpServers
        sid = opened["result"]["sessionId"]
        await peer.watch(sid)

        # A prompt with a permission round trip.
        start = len(peer.received)
        ack = await peer.call(
            "session/prompt",
            {"sessionId": sid, "prompt": [{"type": "text", "text": "please write"}]},
            sid,
        )
        message_id = ack["result"]["messageId"]
        echo = await peer.wait_for(is_update("user_message_chunk", messageId=message_id), start)
        assert update_of(echo)["content"]["text"] == "please write"
        asked = await peer.wait_for(
            lambda m: m.get("method") == "session/request_permission", start
        )
        assert asked["params"]["subject"]["type"] == "tool_call", asked
        option = asked["params"]["options"][0]["optionId"]
        answer = {"outcome": {"outcome": "selected", "optionId": option}}
        await peer.send({"jsonrpc": "2.0", "id": asked["id"], "result": answer}, sid)
        idle = await peer.wait_for(is_update("state_update", state="idle"), start)
        assert update_of(idle)["stopReason"] == "end_turn"
        turn = peer.received[start:]
        assert states(turn) == ["running", "requires_action", "running", "idle"]
        kinds = {u["sessionUpdate"] for u in updates(turn)}
        assert {"tool_call_update", "plan_update", "agent_message_chunk"} <= kinds, kinds
        assert "tool_call" not in kinds and "plan" not in kinds
        chunks = [u for u in updates(turn) if u["sessionUpdate"].endswith("_chunk")]
        assert all(u.get("messageId") for u in chunks)
        said = "".join(
            u["content"]["text"] for u in chunks if u["sessionUpdate"] == "agent_message_chunk"
        )
        assert said == "Wrote hello.txt."

        # A cancel: the turn ends idle, cancelled.
        start = len(peer.received)
        await peer.call(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "slow"}]}, sid
        )
        await peer.wait_for(is_update("agent_message_chunk"), start)
        await peer.notify("session/cancel", {"sessionId": sid}, sid)
        idle = await peer.wait_for(is_update("state_update", state="idle"), start)
        assert update_of(idle)["stopReason"] == "cancelled"
        assert peer.errors() == []
        first_turns = updates(peer.received)
    finally:
        await peer.close()

    # Another v2 connection resumes the session: the log replayed, in v2, the same ids.
    again = peer_for(gw, scheme)
    try:
        await again.open()
        start = len(again.received)
        resumed = await again.call(
            "session/resume",
            {"sessionId": sid, "cwd": gw.config.agents[0].cwd, "replayFrom": {"type": "start"}},
        )
        assert "error" not in resumed, resumed
        replay = again.received[start : again.received.index(resumed)]
        assert states(replay) == ["idle"]  # the current state, after the replay
        user = [u for u in updates(replay) if u["sessionUpdate"] == "user_message_chunk"]
        assert user[0]["messageId"] == message_id
        assert [u["content"]["text"] for u in user] == ["please write", "slow"]
        replayed_ids = {u.get("messageId") for u in updates(replay) if "messageId" in u}
        live_ids = {u.get("messageId") for u in first_turns if "messageId" in u}
        assert replayed_ids == live_ids
        assert again.errors() == []
    finally:
        await again.close()


async def test_a_v1_client_on_the_same_session_meanwhile_gets_v1(
    remote_gateway: LiveGateway,
) -> None:
    gw = remote_gateway
    cwd = gw.config.agents[0].cwd
    url = f"http://127.0.0.1:{gw.port}/acp"
    v2, v1 = HttpV2(url), HttpV2(url, INIT_V1)
    try:
        await v2.open()
        sid = (await v2.call("session/new", {"cwd": cwd}))["result"]["sessionId"]
        await v2.watch(sid)
        assert (await v1.open())["result"]["protocolVersion"] == 1
        loaded = await v1.call("session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []})
        assert "error" not in loaded, loaded
        await v1.watch(sid)

        prompt = [{"type": "text", "text": "please write"}]
        await v2.call("session/prompt", {"sessionId": sid, "prompt": prompt}, sid)
        asked = await v2.wait_for(lambda m: m.get("method") == "session/request_permission")
        option = asked["params"]["options"][0]["optionId"]
        answer = {"outcome": {"outcome": "selected", "optionId": option}}
        await v2.send({"jsonrpc": "2.0", "id": asked["id"], "result": answer}, sid)
        await v2.wait_for(is_update("state_update", state="idle"))
        await v1.wait_for(lambda _m: v1_text(v1.received) == "Wrote hello.txt.")

        asked_v1 = next(m for m in v1.received if m.get("method") == "session/request_permission")
        assert "toolCall" in asked_v1["params"] and "subject" not in asked_v1["params"]
        kinds = [u["sessionUpdate"] for u in updates(v1.received)]
        assert "tool_call" in kinds and "plan" in kinds, kinds
        assert "state_update" not in kinds and "plan_update" not in kinds
        assert not any("messageId" in u for u in updates(v1.received))
        # (v1's load reply names its session on purpose, for the SDK's client: service.py)
        assert [e for e in v1.errors(version=1) if "LoadSessionResponse" not in e] == []
        assert v2.errors() == []
    finally:
        await v1.close()
        await v2.close()


def v1_text(messages: list[Message]) -> str:
    return "".join(
        u["content"]["text"]
        for u in updates(messages)
        if u["sessionUpdate"] == "agent_message_chunk"
    )


INIT_V1: Message = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": 1, "clientCapabilities": {}},
}


async def test_a_v2_sse_stream_dropped_mid_turn_resumes_with_last_event_id(
    remote_gateway: LiveGateway,
) -> None:
    gw = remote_gateway
    peer = RawPeer(f"http://127.0.0.1:{gw.port}/acp")
    try:
        response = await peer.send(INIT)
        peer.connection_id = response.headers["acp-connection-id"]
        assert response.json()["result"]["protocolVersion"] == 2
        async with peer.stream() as events:
            new_id, _ = await peer.post("session/new", {"cwd": gw.config.agents[0].cwd})
            sid = (await until(events, reply_to(new_id)))[-1].message["result"]["sessionId"]
        first: list[Event] = []
        async with peer.stream(sid) as events:
            prompt = [{"type": "text", "text": "slow"}]
            await peer.post("session/prompt", {"sessionId": sid, "prompt": prompt}, session=sid)
            async for event in events:
                first.append(event)
                if "tick tick tick" in v1_text([e.message for e in first]):
                    break
        # The stream dropped mid-turn; the turn goes on. Resume after the last id seen.
        async with peer.stream(sid, last_event_id=first[-1].id) as events:
            rest = await until(events, lambda e: is_update("state_update", state="idle")(e.message))
        ids = [e.id for e in first + rest]
        assert ids == sorted(set(ids))  # in order, nothing twice
        messages = [e.message for e in first + rest]
        assert v1_text(messages) == SLOW_TEXT  # nothing missing
        agent = [u for u in updates(messages) if u["sessionUpdate"] == "agent_message_chunk"]
        assert len({u["messageId"] for u in agent}) == 1  # one message, one id
    finally:
        await peer.close()


@pytest.mark.parametrize("scheme", ["http", "ws"])
def test_the_official_ts_v2_client_through_the_gateway(
    v2_peers: NpmPeers, remote_gateway: LiveGateway, scheme: str
) -> None:
    """The TS SDK's v2 client spawns `agentao connect URL` (a stdio agent that is the
    gateway's): a prompt, a permission allowed, and a resume with replay from the log in a
    second `connect` process. Every line either side wrote validates against v2."""
    gw = remote_gateway
    connect = [sys.executable, "-m", "agentao", "connect", f"{scheme}://127.0.0.1:{gw.port}/acp"]
    lines = run_client(
        v2_peers, connect, "--cwd", gw.config.agents[0].cwd, "--prompt", "please write",
        "--permission", "allow", "--resume",
    )  # fmt: skip
    assert check_recording(lines, 2) == []
    (prompted,) = result_of(lines, "session/prompt")
    echoed = [u for u in ts_updates(lines) if u["sessionUpdate"] == "user_message_chunk"]
    assert [u["messageId"] for u in echoed] == [prompted["messageId"]] * 2  # live, replayed
    assert ts_states(lines) == ["running", "requires_action", "running", "idle", "idle"]


async def test_a_v2_prompt_on_a_session_another_replica_holds_is_acknowledged_at_once(
    gateway_factory: Any, pg_url: str
) -> None:
    """B serves its v2 client as a far session (A holds the conversation): the prompt
    is answered with its `messageId` before the turn asks anything (not after the turn),
    the same id the log's echo of the prompt carries; the turn is then its states."""
    a, b = gateway_factory(store=pg_url), gateway_factory(store=pg_url)
    at_a, at_b = peer_for(a, "ws"), peer_for(b, "ws")
    try:
        await at_a.open()
        opened = await at_a.call("session/new", {"cwd": a.config.agents[0].cwd})
        sid = opened["result"]["sessionId"]
        await at_a.call("session/prompt", {"sessionId": sid, "prompt": [_text("hello")]})
        await at_a.wait_for(is_update("state_update", state="idle"))  # its row is stored
        await at_b.open()
        resumed = await at_b.call(
            "session/resume", {"sessionId": sid, "cwd": b.config.agents[0].cwd}
        )
        assert "configOptions" in resumed["result"], resumed  # the holder's (far_open.py)
        assert states(at_b.received) == ["idle"]  # the current state, before the reply
        start = len(at_b.received)
        await at_b.send(_request(99, "session/prompt", sid, "please write"))
        first = await at_b.wait_for(
            lambda m: m.get("id") == 99 or m.get("method") == "session/request_permission",
            start,
        )
        assert first.get("id") == 99 and "method" not in first, first  # before any question
        message_id = first["result"]["messageId"]
        echo = await at_b.wait_for(is_update("user_message_chunk", messageId=message_id), start)
        assert update_of(echo)["content"]["text"] == "please write"
        asked = await at_b.wait_for(
            lambda m: m.get("method") == "session/request_permission", start
        )
        option = asked["params"]["options"][0]["optionId"]
        answer = {"outcome": {"outcome": "selected", "optionId": option}}
        await at_b.send({"jsonrpc": "2.0", "id": asked["id"], "result": answer})
        idle = await at_b.wait_for(is_update("state_update", state="idle"), start)
        assert update_of(idle)["stopReason"] == "end_turn"
        assert states(at_b.received[start:]) == ["running", "requires_action", "running", "idle"]
        assert at_b.errors() == []
    finally:
        await at_a.close()
        await at_b.close()


async def test_a_far_v2_prompt_is_acknowledged_before_what_the_log_gave_while_it_started(
    gateway_factory: Any, pg_url: str
) -> None:
    """B starts the turn on A (`POST /v1/tasks`) and acknowledges the prompt with the id A
    gives; B's reader of the log, woken through the store, may read the turn's first
    frames (its question included) before A's reply reaches B. Those frames wait for the
    acknowledgement: a v2 client is never asked about a turn whose prompt it has not seen
    acknowledged. Here A's reply is held until B has read the turn's question, every time."""
    a, b = gateway_factory(store=pg_url), gateway_factory(store=pg_url)
    at_a, at_b = peer_for(a, "ws"), peer_for(b, "ws")
    try:
        await at_a.open()
        opened = await at_a.call("session/new", {"cwd": a.config.agents[0].cwd})
        sid = opened["result"]["sessionId"]
        await at_b.open()
        await at_b.call("session/resume", {"sessionId": sid, "cwd": b.config.agents[0].cwd})
        (far,) = b.gateway.remote.far._far.values()
        asked = _read_question_before_a_s_reply(far)
        start = len(at_b.received)
        await at_b.send(_request(98, "session/prompt", sid, "please write"))
        first = await at_b.wait_for(
            lambda m: m.get("id") == 98 or m.get("method") == "session/request_permission",
            start,
        )
        assert asked.is_set()  # the question was read while the prompt was on its way
        assert first.get("id") == 98 and "method" not in first, first
        question = await at_b.wait_for(
            lambda m: m.get("method") == "session/request_permission", start
        )
        option = question["params"]["options"][0]["optionId"]
        answer = {"outcome": {"outcome": "selected", "optionId": option}}
        await at_b.send({"jsonrpc": "2.0", "id": question["id"], "result": answer})
        await at_b.wait_for(is_update("state_update", state="idle"), start)
        assert at_b.errors() == []
    finally:
        await at_a.close()
        await at_b.close()


def _read_question_before_a_s_reply(far: Any) -> threading.Event:
    """Hold the holder's reply to B's `POST /v1/tasks` until B's reader of the log has read
    past the turn's permission question (both in B's event loop)."""
    asked = threading.Event()
    read_past = asyncio.Event()
    read, call = far._read, far.peers.call

    async def reading() -> None:
        await read()
        frames = await far.store.events_after(far.conv.id, 0)
        if any(f.type == "permission-request" and f.seq <= far._position for f in frames):
            asked.set()
            read_past.set()

    async def calling(url: str, method: str, path: str, *args: Any) -> Any:
        reply = await call(url, method, path, *args)
        if method == "POST" and path == "/v1/tasks":
            await asyncio.wait_for(read_past.wait(), 30)
        return reply

    far._read, far.peers.call = reading, calling
    return asked


def _text(text: str) -> Message:
    return {"type": "text", "text": text}


def _request(request_id: int, method: str, sid: str, text: str) -> Message:
    params = {"sessionId": sid, "prompt": [_text(text)]}
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


# ---- what v2 names otherwise: the mode as a config option, tool_call/cancel (bridge_calls.py)

ASKER = {"Authorization": "Bearer sk-asker"}
# The ceiling `ask` may switch to read-only and back to where it starts; never to `plan`,
# although the agent's process (its ceiling: workspace-write) offers it.
ASK_RULES = CeilingRules(
    mode="workspace-write", modes=frozenset({"read-only"}), options={"model": frozenset({"*"})}
)


def asker_gateway(gateway_factory: Any, tmp_path: Path) -> LiveGateway:
    key = ApiKey("asker", hashlib.sha256(b"sk-asker").hexdigest(), ceiling="ask", policy="ask")
    spec = replace(scripted_spec(tmp_path), ceilings=(("ask", ASK_RULES),))
    return gateway_factory(keys=(key,), agents=(spec,))


def option(result: Message, config_id: str) -> Message:
    [found] = [o for o in result["configOptions"] if o["configId"] == config_id]
    return found


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_a_v2_client_sets_the_mode_as_a_config_option_held_to_its_keys_ceiling(
    gateway_factory: Any, tmp_path: Path, scheme: str
) -> None:
    gw = asker_gateway(gateway_factory, tmp_path)
    peer = peer_for(gw, scheme, ASKER)
    try:
        await peer.open()
        opened = await peer.call("session/new", {"cwd": gw.config.agents[0].cwd})
        sid = opened["result"]["sessionId"]
        await peer.watch(sid)
        mode = {"sessionId": sid, "configId": "mode", "type": "id"}
        ok = await peer.call("session/set_config_option", {**mode, "value": "read-only"}, sid)
        above = await peer.call("session/set_config_option", {**mode, "value": "plan"}, sid)
        unknown = await peer.call("session/set_config_option", {**mode, "value": "yolo"}, sid)
        model = option(opened["result"], "model")["currentValue"]
        same = {"sessionId": sid, "configId": "model", "type": "id", "value": model}
        models = await peer.call("session/set_config_option", same, sid)
        assert peer.errors() == []
    finally:
        await peer.close()
    start = option(opened["result"], "mode")
    assert start["currentValue"] == "workspace-write" and start["category"] == "mode"
    assert [o["value"] for o in start["options"]] == ["read-only", "workspace-write"]
    assert option(ok["result"], "mode")["currentValue"] == "read-only", ok
    assert above["error"]["code"] == -32602 and above["error"]["data"]["reason"] == "above_ceiling"
    assert "ceiling 'ask'" in above["error"]["message"]
    assert unknown["error"]["code"] == -32602 and "yolo" in unknown["error"]["message"]
    assert option(models["result"], "mode")["currentValue"] == "read-only"  # refusals: no change
    assert option(models["result"], "model")["currentValue"] == model


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_tool_call_cancel_on_a_v1_agent_is_refused_and_never_offered(
    remote_gateway: LiveGateway, scheme: str
) -> None:
    gw = remote_gateway
    peer = peer_for(gw, scheme)
    try:
        await peer.open()
        sid = (await peer.call("session/new", {"cwd": gw.config.agents[0].cwd}))["result"][
            "sessionId"
        ]
        await peer.watch(sid)
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "please write"}]}
        await peer.call("session/prompt", prompt, sid)
        asked = await peer.wait_for(lambda m: m.get("method") == "session/request_permission")
        call_id = asked["params"]["subject"]["toolCall"]["toolCallId"]
        refused = await peer.call(
            "tool_call/cancel", {"sessionId": sid, "toolCallId": call_id}, sid
        )
        answer = {"outcome": {"outcome": "selected", "optionId": "allow"}}
        await peer.send({"jsonrpc": "2.0", "id": asked["id"], "result": answer}, sid)
        idle = await peer.wait_for(is_update("state_update", state="idle"))
        assert peer.errors() == []
    finally:
        await peer.close()
    assert refused["error"]["code"] == -32602, refused
    assert refused["error"]["data"]["reason"] == "not_cancellable"
    assert update_of(idle)["stopReason"] == "end_turn"  # control: the turn was not touched
    calls = [u for u in updates(peer.received) if u["sessionUpdate"] == "tool_call_update"]
    assert calls and not [u for u in calls if "capabilities" in u]


@pytest.mark.parametrize("scheme", ["http", "ws"])
def test_the_official_ts_v2_client_answers_a_permission_and_cancels_mid_turn(
    v2_peers: NpmPeers, remote_gateway: LiveGateway, scheme: str
) -> None:
    """The TS SDK's v2 client through the gateway: a permission allowed, then a turn
    cancelled while the agent streams (session/cancel at its first text): idle cancelled."""
    gw = remote_gateway
    connect = [sys.executable, "-m", "agentao", "connect", f"{scheme}://127.0.0.1:{gw.port}/acp"]
    lines = run_client(
        v2_peers, connect, "--cwd", gw.config.agents[0].cwd, "--prompt", "please write",
        "--permission", "allow", "--prompt", "slow", "--cancel-prompt", "slow",
    )  # fmt: skip
    assert check_recording(lines, 2) == []
    sent = [m["msg"].get("method") for m in lines if m["dir"] == "send"]
    assert "session/cancel" in sent
    permission = [m for m in lines if m["msg"].get("method") == "session/request_permission"]
    assert len(permission) == 1
    ends = [u for u in ts_updates(lines) if u["sessionUpdate"] == "state_update"]
    assert [u["state"] for u in ends] == [
        "running", "requires_action", "running", "idle", "running", "idle",
    ]  # fmt: skip
    assert [u.get("stopReason") for u in ends if u["state"] == "idle"] == ["end_turn", "cancelled"]
    told = "".join(
        u["content"]["text"]
        for u in ts_updates(lines)
        if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert told.startswith("Wrote hello.txt.tick") and told.count("tick") < 150  # cut short
