"""Waiting on a condition in a test, never a guessed pause.

Where nothing announces the event a test needs (a file a shell command writes, a
process that must be gone), `until` checks the condition itself, often, and fails
naming what never happened once `timeout` has passed. The timeout only bounds a
failure: a test that passes never waits longer than its condition takes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
POLL = 0.01  # seconds between checks: cheap conditions (a stat, a kill(pid, 0))


async def until(condition: Callable[[], T], what: str, timeout: float = 10.0) -> T:
    """The first truthy value of `condition()`; fails naming `what` after `timeout`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not (found := condition()):
        assert loop.time() < deadline, f"waited {timeout}s for {what}"
        await asyncio.sleep(POLL)
    return found


__all__ = ["until"]
