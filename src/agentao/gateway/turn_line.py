"""Requests that wait their turn: what the OpenAI face does with a request for a
conversation whose turn is running.

`[agents.NAME] busy` names it per agent (config.py):
- "reject" (the default): 409 `session_busy` with Retry-After, as before;
- "queue": the request waits in line until the conversation's turn ends, first come first
  served, then runs as a turn of its own; one that has waited `[limits]
  queue_wait_seconds` gets the 409 after all, and one whose client disconnects while it
  waits leaves the line (nothing of it ever reaches the agent).

`wait_turn` is called right before `Conversations.begin`: nothing suspends between its
return and the conversation's reservation there (sessions.py), so the first in line takes
the turn before the next one looks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Final, Literal

from starlette.requests import Request

from agentao.gateway.errors import SessionBusy
from agentao.gateway.keyed_locks import KeyedLocks

Busy = Literal["reject", "queue"]
BUSY_CHOICES: Final[tuple[Busy, ...]] = ("reject", "queue")
OPENING_POLL_SECONDS: Final = 0.02  # a turn being opened has nothing to wait on yet


class TurnLine:
    """Requests waiting for conversations' running turns, in order per conversation."""

    def __init__(self) -> None:
        self._places = KeyedLocks()  # asyncio.Lock wakes its waiters first come first served
        self.waiting = 0  # requests in line now, over every conversation

    async def wait_turn(self, conv: Any, request: Request, seconds: float, retry: int) -> None:
        """Return once `conv` has no turn and this request is first in line; 409 after
        `seconds`; CancelledError if the client leaves meanwhile (it leaves the line)."""
        if conv.reserved:
            await unless_left(request, self.wait_free(conv, seconds, retry))

    async def wait_free(
        self,
        conv: Any,
        seconds: float,
        retry: int,
        admit: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """`wait_turn` for a caller that is no HTTP request (remote ACP's held v2 prompts,
        remote/held.py): its own cancellation is how it leaves the line. `admit` (a key's
        budget, read again) runs once the conversation is free, still first in line: the
        next in line cannot take the turn while it reads."""
        self.waiting += 1
        try:  # nothing below suspends once the line is passed: the reservation comes next
            async with asyncio.timeout(seconds), self._places.hold(conv.id):
                await _free(conv)
                while admit is not None:
                    await admit()
                    if not conv.reserved:  # nobody took the turn while the budget was read
                        break
                    await _free(conv)
        except TimeoutError:
            raise SessionBusy(retry) from None
        finally:
            self.waiting -= 1


async def when_left(request: Request, leave: Any) -> None:
    """Call `leave()` when the client disconnects (its body is read already)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
    leave()


async def unless_left(request: Request, wait: Awaitable[None]) -> None:
    """Await `wait` (a wait in a line); CancelledError if the client leaves meanwhile."""
    waiter = asyncio.current_task()
    assert waiter is not None
    listener = asyncio.create_task(when_left(request, waiter.cancel))
    try:
        await wait
    finally:
        listener.cancel()


async def _free(conv: Any) -> None:
    """Until the conversation's turn has ended and nobody is opening the next one."""
    while conv.reserved:
        turn = conv.turn
        if turn is None or turn.done.is_set():  # another request is opening a turn
            await asyncio.sleep(OPENING_POLL_SECONDS)
        else:
            await turn.done.wait()


async def wait_if_queued(gw: Any, conv: Any, request: Request) -> None:
    """Wait in line when the conversation's agent queues (`busy = "queue"`)."""
    if conv.pool.spec.busy != "queue":
        return
    limits = gw.limits
    await gw.line.wait_turn(conv, request, limits.queue_wait_seconds, limits.retry_after_seconds)


__all__ = ["BUSY_CHOICES", "Busy", "TurnLine", "unless_left", "wait_if_queued", "when_left"]
