"""A session's ordered event stream, and where each turn ends in it.

Theory of operation. Every `session/update` of a session gets a sequence
number (1, 2, ...) in the order the endpoint hands it over, which is the
order the agent sent it. When the `session/prompt` answer is *read off the
wire*, the tracking connection (`tracking.py`) notes how many updates of that
session had been received before it: that number is the turn's `end_seq`.
A turn yields items up to `end_seq` and then its `TurnEnd`; anything with a
higher number arrived after the answer and stays queued for the next reader
(the next turn, or `Session.drain()`). So late updates are never lost and
never reordered across the turn boundary, however the tasks interleave.
The numbers start at 1 with each stream: when the client drops a session's
state (close), the connection's count drops that state's updates with it.

Nobody reading? The queue keeps at most `Limits.max_backlog` items while no
turn runs; beyond that the oldest are dropped with a warning.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any

log = logging.getLogger("agentao.client")


class EventStream:
    def __init__(self, max_backlog: int) -> None:
        self.max_backlog = max_backlog
        self.seq = 0  # updates received so far
        self._items: deque[tuple[int, Any]] = deque()
        self._changed = asyncio.Event()
        # Whether `_changed` is set: it is set and cleared only here, and a burst of updates
        # then sets it once, not once per update (Event.set is a Python call).
        self._signalled = False
        self.reading = False  # a turn is consuming
        self.dropped = 0

    def push_update(self, item: Any) -> None:
        self.seq = seq = self.seq + 1
        if self.reading:  # `_push`'s common case, inline (a turn reads: nothing is dropped)
            self._items.append((seq, item))
            if not self._signalled:
                self.wake()
        else:
            self._push(seq, item)

    def push_event(self, item: Any) -> None:
        """A non-update event (a permission decision): ordered after the updates so far."""
        self._push(self.seq, item)

    def _push(self, seq: int, item: Any) -> None:
        self._items.append((seq, item))
        if not self.reading and len(self._items) > self.max_backlog:
            self._items.popleft()
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning("session backlog full: dropped %d unread updates", self.dropped)
        if not self._signalled:
            self.wake()

    def pop(self, up_to: int | None) -> Any | None:
        """The next item if its sequence number is <= up_to (None: no bound), else None."""
        if not self._items:
            return None
        seq, item = self._items[0]
        if up_to is not None and seq > up_to:
            return None
        self._items.popleft()
        return item

    def take(self, up_to: int | None) -> list[Any]:
        """Every item now queued whose sequence number is <= up_to (None: no bound)."""
        items = self._items
        if up_to is None or (items and items[-1][0] <= up_to):
            return self.drain()
        out = []
        while items and items[0][0] <= up_to:
            out.append(items.popleft()[1])
        return out

    def drain(self) -> list[Any]:
        items = [item for _seq, item in self._items]
        self._items.clear()
        return items

    def wake(self) -> None:
        self._signalled = True
        self._changed.set()

    async def changed(self) -> None:
        """Wait until something was pushed (or `wake()` was called)."""
        await self._changed.wait()
        self._signalled = False
        self._changed.clear()

    def __len__(self) -> int:
        return len(self._items)


__all__ = ["EventStream"]
