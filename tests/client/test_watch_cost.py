"""What a session's watcher pays per update to know whether it is a turn's.

A gateway watches every session it holds (`gateway/sessions.py`: what the agent sends
between turns goes to the log as a note) and asks `Session.answering` on the read path
for every streamed update it relays, so the question is answered without building
anything: no list of the pending turns, just the first one not `done`. Counted with a
trace function, not timed (`bench/gateway.py`'s relay row is where it shows). The
control shows the answers are what they were: a turn's updates are, one that came after
the prompt's answer is not.
"""

from __future__ import annotations

import asyncio

from agentao.client import TurnEnd
from tests.client.test_reopen import SID, Peer, chunk, started
from tests.gateway.test_relay_cost import agentao_lines


async def test_a_watcher_learns_an_update_is_a_turns_in_two_calls_and_a_late_one_in_one(
    tmp_path,
) -> None:
    peer = Peer(close=False)
    client = await started(peer)
    session = await peer.answer(client.new_session(str(tmp_path)))
    answers: list[bool] = []
    calls: list[int] = []

    def watcher(_update: object) -> None:
        calls.append(agentao_lines(lambda: answers.append(session.answering), "call"))

    session.watch(watcher)
    turn = session.prompt("go")
    await peer.reply(chunk("a"), chunk("b"))
    peer.send(chunk("late"))  # after the prompt's answer: outside every turn
    events = [event async for event in turn]
    assert isinstance(events[-1], TurnEnd)
    for _ in range(10_000):  # until the late one is read off the wire too (a bound)
        if client._connection.received(SID) == 3:
            break
        await asyncio.sleep(0)
    assert answers == [True, True, False]
    assert calls == [2, 2, 1]  # `answering` and its turn's `done`; after the answer, itself
    peer.eof()
    await client.close()
