"""What the client pays per streamed update, from its line to the turn's stream.

Every `session/update` of an answer goes through the client's handler
(`ClientSide.session_update`): the session's view folds it, the stream queues it for
the turn, the children links look at it. Thousands per turn, in the client and in the
gateway alike, so each Python call shows in the relay's CPU per chunk
(bench/gateway.py). Counted with a trace function, not timed; the control shows the
turn still yields every update, in order, and the view holds the joined text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from agentao.client import TurnEnd
from agentao.client.state import SessionState
from agentao.protocol import schema
from tests.client.test_reopen import SID, Peer, chunk, started
from tests.gateway.test_relay_cost import agentao_lines


async def test_a_text_chunk_goes_from_its_line_to_the_turn_in_fourteen_calls_of_ours(
    tmp_path,
) -> None:
    peer = Peer(close=False)
    client = await started(peer)
    session = await peer.answer(client.new_session(str(tmp_path)))
    turn = session.prompt("go")
    endpoint = client._endpoint
    assert endpoint is not None
    endpoint._dispatch(msgspec.json.encode(chunk("warm")))  # binds the decoder, the handler
    lines = [msgspec.json.encode(chunk(str(i))) for i in range(10)]
    calls = agentao_lines(lambda: [endpoint._dispatch(line) for line in lines], "call")
    await peer.reply()
    events = [event async for event in turn]
    assert [e.text for e in events[:-1]] == ["warm", *map(str, range(10))]
    assert isinstance(events[-1], TurnEnd)
    assert session.view.text == "warm0123456789"
    assert client._connection.received(SID) == 11
    # Per update: the endpoint's 5 (tests/protocol/test_update_cost.py; this handler takes
    # the message too: no wrapper) and TrackingConnection.receive, then session_update,
    # SessionState.apply, SessionView.fold and apply, _text, Message.continues,
    # push_update and follow. Was 17 (the endpoint read the line's dicts first: 3 more),
    # and before that 29: the endpoint's 8 more, and content_text, block_type,
    # EventStream._push, ChildLinks.note and root, each once per update.
    assert calls == 14 * 10
    peer.eof()
    await client.close()


def test_watchers_see_an_update_as_registered_when_it_came_without_a_copy_per_update() -> None:
    # A gateway watches every session it holds, so `apply` runs its watchers for every
    # update: the list is replaced on watch/unwatch, not copied per update. A watcher that
    # stops others (or itself) during an update still leaves that update to all of them.
    st = SessionState("s1", 10)
    seen: list[tuple[str, str | None]] = []

    def watcher(name: str) -> Callable[[Any], None]:
        return lambda update: seen.append((name, update.text))

    a, c = watcher("a"), watcher("c")

    def b(update: Any) -> None:
        seen.append(("b", update.text))
        st.remove_watcher(a)
        st.remove_watcher(b)

    for w in (a, b, c, c):
        st.add_watcher(w)
    watchers = st.watchers
    st.apply("agent_message_chunk", _text_chunk("1"), {})
    assert watchers == [a, b, c, c]  # the list an update ran over is never changed in place
    st.remove_watcher(c)  # its first registration only
    st.remove_watcher(a)  # gone already: nothing
    st.apply("agent_message_chunk", _text_chunk("2"), {})
    assert seen == [("a", "1"), ("b", "1"), ("c", "1"), ("c", "1"), ("c", "2")]


def _text_chunk(text: str) -> schema.AgentMessageChunk:
    return schema.AgentMessageChunk(content=schema.TextContentBlock(text=text))
