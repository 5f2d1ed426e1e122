"""Test doubles for the agent's seams that stand for a person, not for our own code."""

from __future__ import annotations

from pathlib import Path

from agentao.agent.local_env import LocalEnv
from agentao.agent.tools.base import ASK_USER_UNAVAILABLE, ToolContext, ToolEnv


class Nobody:
    """The `Interaction` when nobody is there: every permission request is rejected
    (and counted), no question is answered."""

    def __init__(self) -> None:
        self.asked = 0

    async def request_permission(self, call: object) -> str:
        self.asked += 1
        return "reject"

    async def ask_user(self, question: str) -> str:
        return ASK_USER_UNAVAILABLE


def make_ctx(
    ws: Path, env: ToolEnv | None = None, call_id: str = "", interaction: object | None = None
) -> ToolContext:
    """A tool context for workspace `ws` (its only root), local I/O, nobody to ask."""
    return ToolContext(
        cwd=ws,
        env=env or LocalEnv(),
        interaction=interaction or Nobody(),  # type: ignore[arg-type]
        workspace=(ws,),
        call_id=call_id,
    )


__all__ = ["Nobody", "make_ctx"]
