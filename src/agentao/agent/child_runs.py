"""The children running in one session's turns (and their children), by session id.

A subagent (subagents.py) runs its turn in a task of its own; it is registered here
while it runs, so whoever may cancel one child alone (the server, for a `session/cancel`
naming the child's id) finds its task, and the parent's turn goes on. A child's own
children share its parent's record: one record per session, however deep.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["RunningChildren"]


class RunningChildren:
    """Child session id -> the task that runs its turn, while it runs."""

    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[Any]] = {}

    def started(self, child_id: str, task: asyncio.Task[Any]) -> None:
        self._tasks[child_id] = task

    def ended(self, child_id: str) -> None:
        self._tasks.pop(child_id, None)

    def __contains__(self, child_id: object) -> bool:
        return child_id in self._tasks

    def cancel(self, child_id: str) -> bool:
        """Cancel that child's turn alone; False when no such child runs here."""
        task = self._tasks.get(child_id)
        if task is None or task.done():
            return False
        task.cancel()
        return True
