"""A turn's burst of events taken at once (`Turn.ready`), against an agent played by the
test over in-memory pipes, so the timing of each line is exact."""

from __future__ import annotations

import asyncio

from agentao.client import TurnEnd, Update
from tests.client.test_reopen import SID, Peer, chunk, started


async def test_ready_takes_the_burst_already_received_and_iteration_goes_on(tmp_path):
    peer = Peer(close=False)
    client = await started(peer)
    session = await peer.answer(client.new_session(str(tmp_path)))
    turn = session.prompt("go")
    assert turn.ready() == []  # nothing received yet: no waiting, nothing taken
    await peer.reply(chunk("a"), chunk("b"), chunk("c"))  # the answer comes after them
    first = await asyncio.wait_for(turn.__anext__(), 5)
    rest = turn.ready()
    assert [e.text for e in (first, *rest)] == ["a", "b", "c"]
    assert all(isinstance(e, Update) for e in rest)  # never the end: iterating gives it
    end = await asyncio.wait_for(turn.__anext__(), 5)
    assert isinstance(end, TurnEnd) and end.stop_reason == "end_turn"
    assert turn.ready() == []
    peer.eof()
    await client.close()


async def test_ready_leaves_what_came_after_the_answer_to_the_next_turn(tmp_path):
    peer = Peer(close=False)
    client = await started(peer)
    session = await peer.answer(client.new_session(str(tmp_path)))
    turn = session.prompt("go")
    await peer.reply(chunk("mine"))
    peer.send(chunk("late"))  # after the prompt's answer: not this turn's
    for _ in range(10_000):  # until the late one is read off the wire too (a bound)
        if client._connection.received(SID) == 2:
            break
        await asyncio.sleep(0)
    else:  # else `ready() == []` below would hold whatever `ready` did
        raise AssertionError("the late update was never read")
    first = await asyncio.wait_for(turn.__anext__(), 5)
    assert first.text == "mine" and turn.ready() == []
    assert isinstance(await asyncio.wait_for(turn.__anext__(), 5), TurnEnd)
    assert [e.text for e in session.drain()] == ["late"]
    peer.eof()
    await client.close()
