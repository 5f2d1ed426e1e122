"""A prompt that waits for the session's turn before it: `session.prompt(p, queue=True)`.

ACP has one turn at a time per session, and the updates of a session are read in one
stream, so a prompt sent while a turn runs would mix two turns' updates (and most agents
refuse it as busy). A `QueuedTurn` is kept here instead and its `session/prompt` is sent
only once the turn before it has ended, i.e. once that turn's reader took its `TurnEnd`:
read queued turns in the order they were made. Prompts queue this way for any agent
(ours, codex-acp, or one that refuses overlapping prompts). `cancel()` before it is sent
drops it: nothing goes on the wire and its reader gets `TurnEnd(stop_reason="cancelled")`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agentao.client.channel import Channel
from agentao.client.events import Event, TurnEnd
from agentao.client.state import SessionState
from agentao.client.turn import Turn


class QueuedTurn(Turn):
    """A `Turn` whose prompt is sent once `before` has ended."""

    def __init__(
        self, channel: Channel, state: SessionState, prompt: list[Any], before: Turn
    ) -> None:
        # Turn.__init__ (which sends) runs only when this turn's time comes.
        self.channel = channel
        self.state = state
        self.session_id = state.session_id
        self._before = before
        self._prompt = prompt
        self._begun = False
        self._dropped = False
        self._finished = False
        self._error: BaseException | None = None
        self._ended = asyncio.Event()

    @property
    def sent(self) -> bool:
        """Whether its prompt has gone to the agent (its turn came)."""
        return self._begun

    async def __anext__(self) -> Event:
        if not self._begun and not self._finished:
            if not self._dropped:
                await self._before.ended()
            if self._dropped:  # before it came, or while it waited
                self._finished = True
                self._ended.set()
                return TurnEnd(self.session_id, "cancelled")
            super().__init__(self.channel, self.state, self._prompt)
            self._begun = True
        return await super().__anext__()

    def ready(self) -> list[Event]:
        return super().ready() if self._begun else []

    async def cancel(self) -> None:
        """Before its prompt was sent: dropped (nothing is sent); after: `Turn.cancel`."""
        if not self._begun:
            self._dropped = True
            self._ended.set()  # a turn queued behind it need not wait for its reader
            return
        await super().cancel()


__all__ = ["QueuedTurn"]
