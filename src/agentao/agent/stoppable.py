"""One tool call stopped on its own, the turn going on: the session's stoppable calls.

Theory of operation
-------------------
A tool that can be stopped mid-way without harm (`Tool.cancellable`: a shell command, a
web fetch, an MCP call) runs as a child task of its turn (`tool_call.py`). While it runs
its task is registered here under its call id. `stop(call_id)` cancels that task alone:
the CancelledError lands on what the tool awaits (a shell command's process group is
killed, in its sandbox, by `local_env.py`), `tool_call.py` asks `was_stopped(call_id)`
to tell this cancel from the turn's own, and the call finishes "cancelled" with a result
that tells the model so. The turn itself is never cancelled: the next round starts.

The calls of the turn that is running are remembered with their state (announced,
running, final), so a refusal can say why: unknown, not stoppable (a call waiting for
permission, or a tool that cannot be stopped) or already over. A new turn forgets the
last one's calls, so the record never outgrows one turn.
"""

from __future__ import annotations

import asyncio
from enum import Enum

__all__ = ["StopRefused", "StoppableCalls"]


class StopRefused(Enum):
    """Why a call cannot be stopped (each its own reason on the wire)."""

    UNKNOWN = "unknown"  # never announced in the running turn
    NOT_CANCELLABLE = "not_cancellable"  # waiting to run, or a tool that cannot stop
    FINAL = "final"  # it already finished


_ANNOUNCED, _FINAL = "announced", "final"


class StoppableCalls:
    """The tool calls of a session's running turn, and which of them can be stopped now."""

    def __init__(self) -> None:
        self._states: dict[str, str] = {}  # call id -> announced | final
        self._running: dict[str, asyncio.Task[None]] = {}  # the stoppable ones, running
        self._stopped: set[str] = set()

    def new_turn(self) -> None:
        """Forget the last turn's calls (their ids are unknown from now on)."""
        self._states.clear()
        self._running.clear()
        self._stopped.clear()

    def announced(self, call_id: str) -> None:
        self._states[call_id] = _ANNOUNCED

    def running(self, call_id: str, task: asyncio.Task[None]) -> None:
        """`task` runs a stoppable tool for `call_id`: `stop` may cancel it from now on."""
        self._running[call_id] = task

    def finished(self, call_id: str) -> None:
        self._running.pop(call_id, None)
        self._states[call_id] = _FINAL

    def stop(self, call_id: str) -> StopRefused | None:
        """Stop the call's tool now (None: accepted), else why not. Accepted means the
        cancel is delivered; the call's final status says whether it stopped or had
        already finished."""
        task = self._running.get(call_id)
        if task is not None:
            self._stopped.add(call_id)
            task.cancel()
            return None
        state = self._states.get(call_id)
        if state is None:
            return StopRefused.UNKNOWN
        return StopRefused.FINAL if state == _FINAL else StopRefused.NOT_CANCELLABLE

    def was_stopped(self, call_id: str) -> bool:
        """Whether a CancelledError in this call's tool is `stop`'s (not the turn's)."""
        return call_id in self._stopped
