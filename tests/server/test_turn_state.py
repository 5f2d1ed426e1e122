"""The turn state table (server/turn_state.py) as data."""

from __future__ import annotations

import asyncio

import pytest

from agentao.server.turn_state import ON_BUSY, TRANSITIONS, TurnState

ROWS = [
    ("idle", "prompt", "prompting"),
    ("idle", "cancel", "idle"),
    ("prompting", "cancel", "cancelling"),
    ("prompting", "finish", "idle"),
    ("cancelling", "finish", "idle"),
    ("cancelling", "cancel", "cancelling"),
    ("prompting", "close", "closed"),
    ("closed", "cancel", "closed"),
]


@pytest.mark.parametrize("state, event, after", ROWS)
def test_transition_rows(state, event, after):
    assert TRANSITIONS[(state, event)] == after


def test_prompt_is_never_a_transition_out_of_a_busy_state():
    for state in ("prompting", "cancelling", "closed"):
        assert (state, "prompt") not in TRANSITIONS
        assert state in ON_BUSY
    assert ON_BUSY == {"prompting": "reject", "cancelling": "wait", "closed": "gone"}


async def test_wait_idle_returns_when_the_cancelled_turn_finishes():
    turn = TurnState()
    turn.fire("prompt")
    turn.fire("cancel")
    assert turn.verdict() == "wait"
    waiter = asyncio.create_task(turn.wait_idle())
    await asyncio.sleep(0)
    assert not waiter.done()
    turn.fire("finish")
    await asyncio.wait_for(waiter, 1)
    assert turn.can("prompt")


def test_unknown_transition_raises():
    turn = TurnState()
    with pytest.raises(KeyError):
        turn.fire("finish")
