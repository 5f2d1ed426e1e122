"""A turn's burst of events taken at once (`Turn.ready`), against an agent played by the
test over in-memory pipes, so the timing of each line is exact."""

from __future__ import annotations

import asyncio
import json

import pytest

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


async def test_a_prompt_is_on_the_wire_when_the_turn_is_made_not_a_loop_pass_later(tmp_path):
    """A relay (the gateway) starts a turn in the middle of other work; the prompt leaves
    in that same step, not when a task of the turn's first runs, behind whatever else the
    loop has ready by then."""
    peer = Peer(close=False)
    client = await started(peer)
    session = await peer.answer(client.new_session(str(tmp_path)))
    written = len(peer.client_writer.log)
    turn = session.prompt("go")
    sent = [json.loads(line) for line in peer.client_writer.log[written:]]  # no await yet
    assert [m.get("method") for m in sent] == ["session/prompt"]
    assert sent[0]["params"]["prompt"] == [{"type": "text", "text": "go"}]
    await peer.reply(chunk("a"))
    assert [e.text for e in [e async for e in turn] if isinstance(e, Update)] == ["a"]
    peer.eof()
    await client.close()


async def test_a_prompt_that_cannot_be_written_fails_its_turn_and_the_session_goes_on(tmp_path):
    """Written at once, a prompt whose params cannot be encoded still fails where it
    always did: iterating its turn, not the call that made it; the next turn runs."""
    peer = Peer(close=False)
    client = await started(peer)
    session = await peer.answer(client.new_session(str(tmp_path)))
    turn = session.prompt([{"type": "text", "text": "a", "x": object()}])
    with pytest.raises(TypeError, match="object is unsupported"):
        [e async for e in turn]
    turn = session.prompt("go")
    await peer.reply(chunk("b"))
    assert [e.text for e in [e async for e in turn] if isinstance(e, Update)] == ["b"]
    peer.eof()
    await client.close()
