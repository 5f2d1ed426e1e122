"""One session id closed and opened again on one connection: turns still end.

A turn ends at the count of its session's updates read off the wire before the
prompt's answer (tracking.py); the session's stream must number them the same
way however often the id's state was dropped, including updates still on their
way to the handler when it was. The agent here is the test itself, in memory,
so the timing of each line is exact.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agentao.client import Client, TurnEnd
from tests.protocol.memory import pipe

SID = "s1"


class Peer:
    """The agent's end of two in-memory pipes; each test plays the agent by hand."""

    def __init__(self, close: bool) -> None:
        self.client_reader, self._to_client = pipe()
        self._from_client, self.client_writer = pipe()
        self.close_capability = {"close": {}} if close else {}

    async def answer(self, work: Any, *lines: Any) -> Any:
        """Run `work` (a client call) and answer its request, after `lines` of updates."""
        task = asyncio.ensure_future(work)
        await self.reply(*lines)
        return await asyncio.wait_for(task, 5)

    async def reply(self, *lines: Any) -> None:
        """Answer the client's next request, after `lines`."""
        request = json.loads(await self._from_client.readline())
        self.send(*lines, {"jsonrpc": "2.0", "id": request["id"], "result": self.result(request)})

    def result(self, request: dict[str, Any]) -> dict[str, Any]:
        method = request["method"]
        if method == "initialize":
            caps = {"loadSession": True, "sessionCapabilities": self.close_capability}
            return {"protocolVersion": 1, "agentCapabilities": caps}
        if method == "session/new":
            return {"sessionId": SID}
        if method == "session/prompt":
            return {"stopReason": "end_turn"}
        return {}

    def send(self, *messages: Any) -> None:
        self._to_client.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))

    def eof(self) -> None:
        self._to_client.close()


def chunk(text: str) -> dict[str, Any]:
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": SID, "update": update},
    }


async def started(peer: Peer) -> Client:
    """A client started against the peer: it offers v2, the peer answers 1 (a v1 agent),
    and the client initializes again as v1 (client.py "Protocol versions")."""
    client = Client()
    task = asyncio.ensure_future(client.start((peer.client_reader, peer.client_writer)))
    await peer.reply()  # the v2 offer
    await peer.answer(task)  # the v1 initialize
    return client


async def turn_texts(peer: Peer, session: Any, text: str) -> list[str | None]:
    """A turn whose answer follows one chunk; every event it yields, as text."""
    turn = session.prompt(text)
    await peer.reply(chunk(text))
    events = await asyncio.wait_for(_collect(turn), 5)  # the bug: this never ended
    assert isinstance(events[-1], TurnEnd)
    return [e.text for e in events[:-1]]


async def test_close_reload_close_reload(tmp_path):
    peer = Peer(close=True)
    client = await started(peer)
    session = await peer.answer(client.new_session(str(tmp_path)), chunk("early"))
    assert await turn_texts(peer, session, "one") == ["early", "one"]
    for again in ("two", "three"):
        await peer.answer(session.close())
        session = await peer.answer(client.load_session(SID, str(tmp_path)), chunk("replayed"))
        assert [e.text for e in session.drain()] == ["replayed"]
        assert await turn_texts(peer, session, again) == [again]
    peer.eof()
    await client.close()


async def test_an_update_after_close_leads_the_reloaded_session(tmp_path):
    peer = Peer(close=True)
    client = await started(peer)
    session = await peer.answer(client.new_session(str(tmp_path)))
    await turn_texts(peer, session, "one")
    await peer.answer(session.close())
    peer.send(chunk("late"))  # for a session the client no longer has
    session = await peer.answer(client.load_session(SID, str(tmp_path)), chunk("replayed"))
    assert [e.text for e in session.drain()] == ["late", "replayed"]
    assert await turn_texts(peer, session, "two") == ["two"]
    peer.eof()
    await client.close()


async def test_updates_read_before_the_session_closes_leave_with_it(tmp_path):
    # Without `session/close`, Session.close() drops the state at once. The client's
    # update handler runs as each line is read (protocol/lanes.py), so nothing read off
    # the wire before the close is left in flight to land in a new state: what was read
    # leaves with the closed session, and the reopened one counts from zero.
    peer = Peer(close=False)
    client = await started(peer)
    session = await peer.answer(client.new_session(str(tmp_path)))
    await turn_texts(peer, session, "one")
    peer.send(chunk("late 1"), chunk("late 2"))
    for _ in range(100):  # until both are read off the wire
        if client._connection.received(SID) == 3:
            break
        await asyncio.sleep(0)
    assert [e.text for e in session.state.stream.drain()] == ["late 1", "late 2"]
    await session.close()
    session = await peer.answer(client.resume_session(SID, str(tmp_path)))
    assert session.drain() == []
    assert await turn_texts(peer, session, "two") == ["two"]
    await session.close()
    assert client._connection.received(SID) == 0  # a closed id costs nothing
    peer.eof()
    await client.close()


async def _collect(turn: Any) -> list[Any]:
    return [event async for event in turn]
