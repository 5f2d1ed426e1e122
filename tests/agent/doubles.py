"""Test doubles for the agent's seams that stand for a person, not for our own code."""

from __future__ import annotations

from agentao.agent.tools.base import ASK_USER_UNAVAILABLE


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


__all__ = ["Nobody"]
