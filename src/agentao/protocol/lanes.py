"""Per-key serial lanes: jobs with the same key run one after another, in order.

The endpoint puts every incoming notification of a session on that session's
lane, so a handler sees a session's `session/update`s exactly in arrival order
while different sessions (and all requests) proceed concurrently.

A job is a plain call, given with its arguments, that returns an awaitable (it goes on)
or anything else (done: None, or a handler's stray result). A job submitted to an idle
lane is called at once, in the submitter's step: a synchronous handler (the client's
`session/update`, once per streamed update) then costs one call, not a closure, nor a
task made, scheduled and torn down per update. Only a job that returns
an awaitable opens the lane: a worker task awaits it, and jobs submitted meanwhile
queue behind it and run in order. A lane's worker exists only while the lane has
such work, so idle sessions cost nothing.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger("agentao.protocol")

Job = Callable[..., Any]  # returns an awaitable (still going) or anything else (done)


def _pending(result: Any) -> Awaitable[Any] | None:
    """What a job still has to do: None when it is done."""
    if result is None:  # the common case, asked first: isawaitable(None) is an ABC check
        return None
    return result if inspect.isawaitable(result) else None


class Lanes:
    def __init__(self) -> None:
        self._queues: dict[Any, deque[Job]] = {}
        self._workers: set[asyncio.Task[None]] = set()

    def busy(self, key: Any) -> bool:
        return key in self._queues

    def submit(self, key: Any, job: Job, *args: Any) -> None:
        """Run `job(*args)` after every job already submitted under `key` (now, if none
        waits)."""
        queue = self._queues.get(key)
        if queue is not None:
            queue.append(functools.partial(job, *args) if args else job)
            return
        try:
            result = job(*args)
        except Exception:  # logged with its traceback; the lane serves the rest
            log.exception("notification handler failed (lane %r)", key)
            return
        if result is not None and (pending := _pending(result)) is not None:
            self._open(key, pending)

    def _open(self, key: Any, pending: Awaitable[Any]) -> None:
        """Hold the lane until `pending` is done; later jobs of `key` wait behind it."""
        self._queues[key] = deque((lambda: pending,))
        worker = asyncio.get_running_loop().create_task(self._drain(key))
        self._workers.add(worker)
        worker.add_done_callback(self._workers.discard)

    async def _drain(self, key: Any) -> None:
        queue = self._queues[key]
        try:
            while queue:
                job = queue[0]
                try:
                    pending = _pending(job())
                    if pending is not None:
                        await pending
                except asyncio.CancelledError:
                    raise
                except Exception:  # logged with its traceback; the lane serves the rest
                    log.exception("notification handler failed (lane %r)", key)
                queue.popleft()
        finally:
            del self._queues[key]

    async def join(self) -> None:
        """Wait until every lane is empty."""
        while self._workers:
            await asyncio.gather(*list(self._workers), return_exceptions=True)

    def cancel(self) -> None:
        for worker in list(self._workers):
            worker.cancel()
