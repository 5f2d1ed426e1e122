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

A call is `offered` as stoppable before the client is told so (its "running now"
update), and its task registered just after: a stop that lands in between is kept and
delivered the moment the task is registered, so a client that acts on the offer at once
is never refused.

The calls of the turn that is running are remembered with their state (announced,
offered, final), so a refusal can say why: unknown, not stoppable (a call waiting for
permission, or a tool that cannot be stopped) or already over. A new turn forgets the
last one's calls, so the record never outgrows one turn.

A command the shell tool shows as a terminal of its own (events.TerminalStarted) is
registered here too, by terminal id: `stop_terminal` kills that command alone (its task
is the command's, not the tool's), and the tool then finishes as a command killed by a
signal does; the call is not "cancelled" (ACP v2's `terminal/cancel` stops the process
and leaves the tool call's status to the agent). A new turn forgets the exited ones.
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


_ANNOUNCED, _OFFERED, _FINAL = "announced", "offered", "final"


class StoppableCalls:
    """The tool calls of a session's running turn, and which of them can be stopped now."""

    def __init__(self) -> None:
        self._states: dict[str, str] = {}  # call id -> announced | offered | final
        self._running: dict[str, asyncio.Task[None]] = {}  # the stoppable ones, running
        self._stopped: set[str] = set()
        self._terminals: dict[str, asyncio.Task[object] | None] = {}  # None: exited

    def new_turn(self) -> None:
        """Forget the last turn's calls (their ids are unknown from now on)."""
        self._states.clear()
        self._running.clear()
        self._stopped.clear()
        self._terminals.clear()

    def terminal_running(self, terminal_id: str, task: asyncio.Task[object]) -> None:
        """`task` runs the terminal's command: `stop_terminal` cancels it from now on."""
        self._terminals[terminal_id] = task

    def terminal_exited(self, terminal_id: str) -> None:
        self._terminals[terminal_id] = None

    def stop_terminal(self, terminal_id: str) -> StopRefused | None:
        """Kill the terminal's command now (None: accepted), else why not: unknown, or
        FINAL once it exited."""
        if terminal_id not in self._terminals:
            return StopRefused.UNKNOWN
        task = self._terminals[terminal_id]
        if task is None or task.done():
            return StopRefused.FINAL
        task.cancel()
        return None

    def announced(self, call_id: str) -> None:
        self._states[call_id] = _ANNOUNCED

    def offered(self, call_id: str) -> None:
        """The client is about to be told `call_id` can be stopped: a stop is taken."""
        self._states[call_id] = _OFFERED

    def running(self, call_id: str, task: asyncio.Task[None]) -> None:
        """`task` runs the offered call: `stop` cancels it (a stop already taken, now)."""
        self._running[call_id] = task
        if call_id in self._stopped:
            task.cancel()

    def finished(self, call_id: str) -> None:
        self._running.pop(call_id, None)
        self._states[call_id] = _FINAL

    def stop(self, call_id: str) -> StopRefused | None:
        """Stop the call's tool now (None: accepted), else why not. Accepted means the
        cancel is delivered; the call's final status says whether it stopped or had
        already finished."""
        state = self._states.get(call_id)
        if state == _OFFERED:
            self._stopped.add(call_id)
            task = self._running.get(call_id)
            if task is not None:  # else `running` cancels it once it is registered
                task.cancel()
            return None
        if state is None:
            return StopRefused.UNKNOWN
        return StopRefused.FINAL if state == _FINAL else StopRefused.NOT_CANCELLABLE

    def was_stopped(self, call_id: str) -> bool:
        """Whether a CancelledError in this call's tool is `stop`'s (not the turn's)."""
        return call_id in self._stopped
