"""Held prompts: a v2 remote client's `session/prompt` sent while its session's turn runs.

ACP v2 answers a prompt at its *insertion* ("not receipt or queueing", the schema's
`session/prompt`), and a v2 agent holds a prompt sent during a turn until that turn ends:
codex-acp 2.6.0 does, and so does `agentao --acp` over v2 (server/prompt_queue.py). The
gateway's v2 bridge does the same for its remote clients whatever the agent behind it
speaks: the prompt's request waits here, first come first served (the gateway's
`TurnLine`), and once the conversation's turn has ended it begins its own turn and is
answered `{messageId}` (service.py `_prompt`), after the idle that ended the one before.

Bounds: at most `[limits] remote_prompt_queue_depth` held per conversation (one more is
refused as a v1 client's prompt on a busy session is: `session_busy`, -32600), each at
most `queue_wait_seconds` (then the same refusal). A held prompt passes its key's budget
check again when its turn comes (the turns before it may have spent the budget).
`session/cancel` answers every held prompt of the conversation -32800, nothing of it
inserted (`requests_in`: their request tasks are cancelled as `$/cancel_request` cancels
one); a prompt whose own request is cancelled just leaves the line. v1 clients keep the
busy refusal (v1 defines no holding). A v2 prompt of a session live on another replica
(far.py) is held here too, on the holder, in the same line and within the same depth:
that replica's `POST /v1/tasks` with `busy: "queue"` waits in `wait_far` (far_held.py),
and a `session/cancel` (from a client here or there) drops it (`drop_far`): the request
is answered 409 `prompt_cancelled`, which that replica answers its client -32800.

Order: a session's v2 prompts take their places in the order they were read, though
each looks at the store before it reaches the line (is the session held elsewhere?), and
on PostgreSQL the second's look could end after the third's. `arrive` (first thing in
the request's task, which the service starts in the order read) waits until the prompts
read before it have taken their places or gone; `entered` lets the next one go on (a
`session/cancel` meanwhile answers it -32800 like a held one: `requests_in`). A held
prompt's budget is read again inside its place in the line (`TurnLine.wait_free`), so the
one behind it cannot take the turn meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from agentao.gateway.errors import Conflict, SessionBusy
from agentao.gateway.limits import Limits
from agentao.gateway.turn_line import TurnLine

PROMPT_DROPPED = "prompt_cancelled"  # the error code of a far prompt session/cancel dropped
Admit = Callable[[str], Awaitable[None]]  # a key's budget check (budgets.py): raises when spent


class PromptDropped(Conflict):
    def __init__(self) -> None:
        super().__init__(
            "session/cancel dropped this prompt before its turn began", code=PROMPT_DROPPED
        )


class HeldPrompts:
    """The held prompts' request tasks, per conversation, in arrival order."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.line = TurnLine()
        self._held: dict[str, list[asyncio.Task[Any]]] = {}
        self._far: set[asyncio.Task[Any]] = set()  # held for another replica's client
        self._dropped: set[asyncio.Task[Any]] = set()  # of those, dropped by session/cancel
        # Per session, the place the last prompt read took; per request task, its own.
        self._last: dict[str, asyncio.Future[None]] = {}
        self._arriving: dict[asyncio.Task[Any], tuple[str, asyncio.Future[None]]] = {}

    async def arrive(self, session_id: str) -> None:
        """Take this request's place among the session's prompts, in the order read, and
        wait until those read before it are in line or gone. Call `entered` after."""
        task = asyncio.current_task()
        assert task is not None
        before = self._last.get(session_id)
        mine = asyncio.get_running_loop().create_future()
        self._last[session_id] = mine
        self._arriving[task] = (session_id, mine)
        if before is not None:
            await asyncio.shield(before)  # cancelled here: `entered` still lets the next go

    def arriving(self, task: asyncio.Task[Any]) -> bool:
        """Whether `task` waits for the prompts read before it (`arrive`)."""
        found = self._arriving.get(task)
        return found is not None and not found[1].done()

    def entered(self) -> None:
        """This request's prompt is in line, begun, or never will be (it failed, or went
        to another replica): the next one read may go on. Idempotent."""
        found = self._arriving.pop(asyncio.current_task(), None)  # type: ignore[arg-type]
        if found is None:
            return
        session_id, mine = found
        mine.set_result(None)
        if self._last.get(session_id) is mine:
            del self._last[session_id]

    async def wait(self, conv: Any, owner: str, admit: Admit | None = None) -> None:
        """Return at once when `conv` has no turn; else once its turn has ended and this
        prompt is first in line (SessionBusy when the line is full or the wait too long).
        A held prompt is admitted again (`admit(owner)`, the key's budgets) when its turn
        comes: what the key spent while it waited counts."""
        if not conv.reserved:
            self.entered()
            return
        held = self._held.setdefault(conv.id, [])
        if len(held) >= self.limits.remote_prompt_queue_depth:
            raise SessionBusy(self.limits.retry_after_seconds)
        task = asyncio.current_task()
        assert task is not None
        held.append(task)
        self.entered()
        try:
            seconds, retry = self.limits.queue_wait_seconds, self.limits.retry_after_seconds
            again = (lambda: admit(owner)) if admit is not None else None
            await self.line.wait_free(conv, seconds, retry, again)
        finally:
            held.remove(task)
            if not held:
                del self._held[conv.id]

    async def wait_far(self, conv: Any, owner: str, admit: Admit | None = None) -> None:
        """`wait` for a prompt another replica passed on (far.py): PromptDropped when a
        `session/cancel` drops it meanwhile (`drop_far`)."""
        task = asyncio.current_task()
        assert task is not None
        self._far.add(task)
        try:
            await self.wait(conv, owner, admit)
        except asyncio.CancelledError:
            if task not in self._dropped:  # its replica left, or this one stops
                raise
            task.uncancel()  # ours, not the request's: it is answered, as cancelled
            raise PromptDropped() from None
        finally:
            self._far.discard(task)
            self._dropped.discard(task)

    def drop_far(self, conv_id: str) -> None:
        """`session/cancel`: the prompts held for other replicas' clients of `conv_id`
        leave the line (`wait_far` raises PromptDropped), nothing of them inserted."""
        for task in self._held.get(conv_id, ()):
            if task in self._far and task not in self._dropped:
                self._dropped.add(task)
                task.cancel()

    def requests_in(
        self, conv_id: str, session_id: str, serving: dict[Any, asyncio.Task[Any]]
    ) -> list[Any]:
        """`session/cancel`: the keys in `serving` (the service's running requests) of the
        prompts held for the conversation, or read for its session and not yet in line
        (`arrive`), to be cancelled, each answered -32800."""
        held = self._held.get(conv_id, ())
        return [
            key
            for key, task in serving.items()
            if task in held or self._arriving.get(task, ("",))[0] == session_id
        ]


__all__ = ["PROMPT_DROPPED", "HeldPrompts", "PromptDropped"]
