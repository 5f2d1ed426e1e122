"""Held v2 prompts (remote/held.py) keep their order while a held prompt's budget is read
again: the next in line waits, though the conversation is free meanwhile."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from agentao.gateway.limits import Limits
from agentao.gateway.remote.held import HeldPrompts


@dataclass
class Turn:
    done: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class Conv:
    id: str = "c1"
    reserved: bool = True
    turn: Turn | None = field(default_factory=Turn)

    def end_turn(self) -> None:
        assert self.turn is not None
        self.reserved = False
        self.turn.done.set()

    def begin(self) -> None:  # as Conversations.begin reserves, with nothing awaited first
        self.reserved, self.turn = True, Turn()


async def test_the_next_held_prompt_waits_while_the_first_ones_budget_is_read() -> None:
    held, conv = HeldPrompts(Limits()), Conv()
    reading = {"second": asyncio.Event(), "third": asyncio.Event()}
    read = asyncio.Event()  # the second's budget: read when the test says so
    order: list[str] = []

    async def admit(owner: str) -> None:
        reading[owner].set()
        if owner == "second":
            await read.wait()

    async def prompt(name: str) -> None:
        await held.wait(conv, name, admit)
        order.append(name)
        conv.begin()

    second = asyncio.create_task(prompt("second"))
    third = asyncio.create_task(prompt("third"))
    await asyncio.sleep(0)  # both run to their first wait: in line, the first turn running
    assert len(held._held[conv.id]) == 2
    conv.end_turn()
    await reading["second"].wait()
    # The second reads its budget; the third must not get past the line meanwhile.
    for _ in range(20):
        await asyncio.sleep(0)
    assert not reading["third"].is_set() and order == []
    read.set()
    await second
    assert order == ["second"] and not third.done()
    conv.end_turn()
    await third
    assert order == ["second", "third"]
