"""How a turn ends cancelled: decided here, and every other place asks.

Theory of operation
-------------------
Cancellation is structured: whoever runs a turn cancels its task (`session/cancel`,
`$/cancel_request`, a session closing) or closes its event stream. The CancelledError
(or GeneratorExit) lands on whatever the turn awaits and escapes the turn loop. Then:

- the staged turn is committed as `ending(exc, events)` says: stop reason "cancelled",
  its events closed by `closing_events` (a failed finish for each open tool call, a
  cancelled finish for an open compaction, then TurnEnded("cancelled")); an LLM error
  or a bug ends it with no stop reason and an error instead. A turn whose events end in
  TurnEnded is over: a cancel that lands after it (a slow reader) changes nothing;
- the task that runs the turn asks `cancel_ends_turn()` in its `except CancelledError`:
  yes (the cancel is taken back), and it emits the same `closing_events` and answers
  "cancelled"; no (cancelled more than once, e.g. by an enclosing timeout as well), and
  the CancelledError propagates; `task_end(task)` then reads that as TurnEnded("cancelled");
- a question to the client in flight asks `turn_cancelling()`: is its CancelledError the
  turn's (re-raise it) or only its own (the question was withdrawn)?

The client may also answer a permission request "cancelled": the call is refused with
`ASK_CANCELLED`, and the turn ends "cancelled" after it, with its usage.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from agentao.agent.events import (
    CompactionFinished,
    CompactionStarted,
    StopReason,
    TextOutput,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
    TurnEvent,
)
from agentao.agent.providers.errors import LlmError

__all__ = [
    "ASK_CANCELLED",
    "CANCELLED",
    "CANCELLED_TEXT",
    "Ending",
    "cancel_ends_turn",
    "closing_events",
    "ending",
    "task_end",
    "turn_cancelling",
]

CANCELLED = TurnEnded("cancelled")  # how a turn cut short ends: no usage is known
CANCELLED_TEXT = "Cancelled"  # what the user and the model see for a call cut short
ASK_CANCELLED = "cancelled: the turn was cancelled while asking"  # the call never ran


@dataclass(frozen=True, slots=True)
class Ending:
    """How a turn that an exception escaped is committed."""

    stop: StopReason | None  # None: it failed (`error` says why)
    error: str | None
    closing: tuple[TurnEvent, ...]  # the events that close what was left open


def ending(exc: BaseException, events: Sequence[TurnEvent]) -> Ending:
    """The record's end for a turn that `exc` escaped after `events`."""
    if isinstance(exc, asyncio.CancelledError | GeneratorExit):
        return Ending("cancelled", None, tuple(closing_events(events)))
    reason = exc.reason if isinstance(exc, LlmError) else "internal"
    return Ending(None, reason, ())


def closing_events(events: Sequence[TurnEvent]) -> list[TurnEvent]:
    """What ends a turn cut short after `events`: a failed finish for each open tool call
    (and a cancelled one for an open compaction), then TurnEnded("cancelled"). Nothing
    when `events` already end in TurnEnded: a cancel that lands then finds the turn over."""
    if events and isinstance(events[-1], TurnEnded):
        return []
    open_calls: dict[str, None] = {}
    compacting: CompactionStarted | None = None
    for event in events:
        if isinstance(event, ToolCallStarted):
            open_calls[event.call_id] = None
        elif isinstance(event, ToolCallFinished):
            open_calls.pop(event.call_id, None)
        elif isinstance(event, CompactionStarted):
            compacting = event
        elif isinstance(event, CompactionFinished):
            compacting = None
    cancelled = (TextOutput(CANCELLED_TEXT),)
    closing: list[TurnEvent] = [ToolCallFinished(c, "failed", cancelled) for c in open_calls]
    if compacting is not None:
        closing.insert(
            0, CompactionFinished(compacting.compaction_id, "cancelled", compacting.tokens_before)
        )
    return [*closing, CANCELLED]


def cancel_ends_turn() -> bool:
    """Asked in the turn task's `except CancelledError`: whether this cancel ends the
    turn (it is taken back: the turn answers "cancelled"), or must propagate because the
    task was cancelled more than once."""
    task = asyncio.current_task()
    return task is None or task.uncancel() == 0


def task_end(task: asyncio.Task[TurnEnded]) -> TurnEnded:
    """How the turn run by `task` (done) ended: its TurnEnded, CANCELLED when the
    cancellation propagated; a failure is raised."""
    return CANCELLED if task.cancelled() else task.result()


def turn_cancelling() -> bool:
    """Whether the running task (a turn) is being cancelled, as opposed to only the
    awaitable it waits on."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
