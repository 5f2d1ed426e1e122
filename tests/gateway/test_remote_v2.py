"""The bridge: a v2 remote client on the gateway's (v1) agent gets real ACP v2.

Real gateway, real `agentao --acp` processes behind it (the pool drives them over v1),
and raw v2 clients over HTTP/SSE and WebSocket: `initialize` settles v2, `session/new`
without `mcpServers`, a prompt acknowledged with the gateway's `messageId` and echoed,
`state_update` running -> requires_action (v2's permission question) -> running ->
idle, chunks with messageIds, keyed tool/plan updates, a cancel, and a resume that
replays the conversation's log. Every message the gateway sends a v2 client validates
against the official v2 schema; a v1 client on the same session meanwhile gets v1.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

import pytest
import websockets

from tests.gateway.acp_peers import RawPeer
from tests.gateway.conftest import LiveGateway
from tests.schema_check import check_all

pytestmark = pytest.mark.timeout(90)

Message = dict[str, Any]


class V2Peer:
    """A raw v2 client: everything it received, in arrival order, and what it sent."""

    def __init__(self) -> None:
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

    def errors(self) -> list[str]:
        return check_all(self.received, self.sent, version=2)


class HttpV2(V2Peer):
    """HTTP: POSTs, the connection's SSE stream and each session's, read into one list."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.raw = RawPeer(url)
        self._readers: list[asyncio.Task[None]] = []

    async def open(self) -> Message:
        self.sent.append(INIT)
        response = await self.raw.send(INIT)
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

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self.socket: Any = None
        self._reader: asyncio.Task[None] | None = None

    async def open(self) -> Message:
        self.socket = await websockets.connect(self.url)
        self._reader = asyncio.create_task(self._read())
        await self.send(INIT)
        return await self.wait_for(lambda m: m.get("id") == INIT["id"])

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


def peer_for(gw: LiveGateway, scheme: str) -> HttpV2 | WsV2:
    url = f"{scheme}://127.0.0.1:{gw.port}/acp"
    return HttpV2(url) if scheme == "http" else WsV2(url)


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
