"""A session's turn states as a table: idle -> prompting -> cancelling -> idle.

Everything that changes a session's turn state lives here; handlers fire
events and read the verdict, they do not test states themselves.

    (state, event)          -> next state
    idle      + prompt      -> prompting
    prompting + cancel      -> cancelling      (the turn task is cancelled)
    prompting | cancelling + finish -> idle    (the turn answered its prompt)
    any       + close       -> closed

A `session/prompt` that finds the session busy gets the verdict of `ON_BUSY`:
while a turn runs it is *rejected* (-32600, data.reason "busy": two turns at
once would interleave one conversation; the client should cancel first, as an
editor does); while a cancelled turn winds down it *waits* for it and then
runs, so "cancel, then prompt again at once" just works.
"""

from __future__ import annotations

import asyncio
from typing import Final, Literal

State = Literal["idle", "prompting", "cancelling", "closed"]
Event = Literal["prompt", "cancel", "finish", "close"]
Verdict = Literal["reject", "wait", "gone"]

TRANSITIONS: Final[dict[tuple[State, Event], State]] = {
    ("idle", "prompt"): "prompting",
    ("idle", "cancel"): "idle",  # nothing to cancel: a no-op, never an error
    ("prompting", "cancel"): "cancelling",
    ("prompting", "finish"): "idle",
    ("cancelling", "cancel"): "cancelling",
    ("cancelling", "finish"): "idle",
    ("idle", "close"): "closed",
    ("prompting", "close"): "closed",
    ("cancelling", "close"): "closed",
    ("closed", "close"): "closed",
    ("closed", "cancel"): "closed",
    ("closed", "finish"): "closed",
}

# What a prompt gets in a state with no ("…", "prompt") transition.
ON_BUSY: Final[dict[State, Verdict]] = {
    "prompting": "reject",
    "cancelling": "wait",
    "closed": "gone",
}


class TurnState:
    """One session's turn state; `wait_idle()` returns when no turn runs."""

    def __init__(self) -> None:
        self.state: State = "idle"
        self._idle = asyncio.Event()
        self._idle.set()

    def can(self, event: Event) -> bool:
        return (self.state, event) in TRANSITIONS

    @property
    def idle(self) -> bool:
        """No turn runs and the session is open (only then may a prompt start)."""
        return self.can("prompt")

    def cancel(self) -> bool:
        """Fire `cancel`; whether it stopped a running turn (not a no-op transition)."""
        before = self.state
        return self.fire("cancel") != before

    def fire(self, event: Event) -> State:
        """Apply `event`; KeyError when the table has no such transition."""
        self.state = TRANSITIONS[(self.state, event)]
        if self.state in ("idle", "closed"):
            self._idle.set()
        else:
            self._idle.clear()
        return self.state

    def verdict(self) -> Verdict:
        """What a new prompt gets now that `prompt` is not a transition."""
        return ON_BUSY[self.state]

    async def wait_idle(self) -> None:
        await self._idle.wait()


__all__ = ["ON_BUSY", "TRANSITIONS", "Event", "State", "TurnState", "Verdict"]
