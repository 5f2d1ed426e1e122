"""Prompts that wait for a session's running turn: first in, first out, bounded.

A v1 `session/prompt` that finds a turn running is refused as "busy" (turns.py), unless
it asks to wait (`_meta["agentao.cn/queue"]: true`, our client does) and fewer than
`ServerSettings.prompt_queue_depth` prompts already wait (AGENTAO_PROMPT_QUEUE_DEPTH).
Then it waits here and runs as a turn of its own, with its own reply, when the turns
before it have ended. Clients that never ask keep the "busy" refusal.

The session is handed from one prompt to the next without passing through idle, so a
prompt arriving in between queues behind the waiting ones instead of jumping the line.
The hand-over happens once the finished prompt's reply is written (`release`, called as
the prompt handler returns, writes nothing itself): a client reads each prompt's answer
before the next turn's first update. `session/cancel` cancels the running turn and
drops every prompt still waiting (`drop`): each answers `stopReason: "cancelled"`. A
waiting prompt whose own request is cancelled (`$/cancel_request`) or whose connection
closes just leaves the line.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, Final, Protocol

from agentao.server.turn_state import TurnState

QUEUE_META_KEY: Final = "agentao.cn/queue"  # session/prompt _meta: may wait for the turn


class PromptQueue:
    """One session's waiting prompts; each waits on a future that says whether it runs."""

    def __init__(self) -> None:
        self._waiting: deque[asyncio.Future[bool]] = deque()
        self.held = False  # a turn ended with prompts waiting: the session is kept for them

    @property
    def waiting(self) -> int:
        """How many prompts wait (those that left the line are not counted)."""
        return sum(not f.done() for f in self._waiting)

    def join(self) -> asyncio.Future[bool]:
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting.append(future)
        return future

    def hand_over(self) -> bool:
        """Let the first prompt still waiting run (True), or say none waits (False)."""
        while self._waiting:
            future = self._waiting.popleft()
            if not future.done():
                future.set_result(True)
                return True
        return False

    def drop(self) -> int:
        """Every waiting prompt is told it will not run; how many there were."""
        dropped = 0
        while self._waiting:
            future = self._waiting.popleft()
            if not future.done():
                future.set_result(False)
                dropped += 1
        return dropped


class LiveSession(Protocol):
    """What the line needs of a live session (server/live.py)."""

    queue: PromptQueue
    state: TurnState


def wants_queue(meta: dict[str, Any] | None) -> bool:
    """Whether a prompt's `_meta` asks to wait for a running turn instead of "busy"."""
    return isinstance(meta, dict) and meta.get(QUEUE_META_KEY) is True


async def wait_turn(live: LiveSession) -> bool:
    """Wait in line: True once the session is this prompt's (still `prompting`), False
    when a cancel dropped it before it started."""
    future = live.queue.join()
    try:
        return await future
    except asyncio.CancelledError:  # the request left; if it had just been let in, pass on
        if future.done() and not future.cancelled() and future.result():
            live.queue.held = True
            release(live)
        raise


def keep_for_queue(live: LiveSession) -> bool:
    """At a turn's end: keep the session `prompting` for the next waiting prompt (True),
    to be handed over by `release` after this prompt's reply."""
    if live.queue.waiting and live.state.state == "prompting":
        live.queue.held = True
    return live.queue.held


def release(live: LiveSession) -> None:
    """After a prompt's reply: hand a kept session to the next prompt, or let it go idle."""
    if not live.queue.held:
        return
    live.queue.held = False
    if live.state.state == "prompting" and live.queue.hand_over():
        return
    if live.state.can("finish"):
        live.state.fire("finish")


__all__ = [
    "QUEUE_META_KEY",
    "PromptQueue",
    "keep_for_queue",
    "release",
    "wait_turn",
    "wants_queue",
]
