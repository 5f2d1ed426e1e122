"""Per-key token budgets: `[[keys]] tokens_per_day`.

Every turn that ends is charged to its conversation's owner: the tokens the agent reported
for it (input + output), or, when it reports none, the same estimate the answer's `usage`
carries (`x_estimated`, mapping.py). A key whose tokens today (UTC) reached its budget is
refused before its next Chat Completions or Responses turn starts: `429
token_budget_exceeded` with `Retry-After` (the seconds until the next UTC midnight, when
the count starts over). A turn already running is never cut short, so a key may end a day
a turn above its budget. The count is this gateway process's: replicas count apart, and a
restart starts it over (the store keeps no per-key counters yet).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from agentao.client import TurnEnd
from agentao.gateway.errors import ApiError
from agentao.gateway.mapping import estimate_usage, usage_from_agent

DAY_SECONDS = 86_400


class BudgetExceeded(ApiError):
    status = 429
    type = "rate_limit_error"

    def __init__(self, owner: str, budget: int, retry_after: int) -> None:
        super().__init__(
            f"the API key {owner!r} used its {budget} tokens for today (UTC); "
            f"the count starts over in {retry_after} s",
            code="token_budget_exceeded",
            headers={"Retry-After": str(retry_after)},
        )


class TokenBudgets:
    """Tokens each key used today, against its `tokens_per_day`."""

    def __init__(self, budgets: dict[str, int], clock: Callable[[], float] = time.time) -> None:
        self.budgets = budgets  # key name -> tokens a day (keys without one: unlimited)
        self.clock = clock
        self._day = -1
        self._used: dict[str, int] = {}

    def used(self, owner: str) -> int:
        self._roll()
        return self._used.get(owner, 0)

    def check(self, owner: str) -> None:
        """Refuse a turn of `owner` once its budget for today is spent."""
        budget = self.budgets.get(owner)
        if budget is not None and self.used(owner) >= budget:
            left = DAY_SECONDS - self.clock() % DAY_SECONDS
            raise BudgetExceeded(owner, budget, max(1, math.ceil(left)))

    def charge(self, owner: str, turn: Any) -> None:
        """A turn of `owner` ended (sessions.py): its tokens count against today."""
        if owner not in self.budgets:
            return
        self._roll()
        self._used[owner] = self._used.get(owner, 0) + turn_tokens(turn)

    def _roll(self) -> None:
        day = int(self.clock() // DAY_SECONDS)
        if day != self._day:
            self._day, self._used = day, {}


def turn_tokens(turn: Any) -> int:
    """A finished turn's tokens: as the agent reported them, else estimated."""
    result = turn.result
    usage = usage_from_agent(result.usage) if isinstance(result, TurnEnd) else None
    if usage is None:
        prompt_chars = sum(len(b.get("text", "")) for b in turn.prompt)
        usage = estimate_usage(prompt_chars, turn.mapper)
    return usage.input_tokens + usage.output_tokens


__all__ = ["DAY_SECONDS", "BudgetExceeded", "TokenBudgets", "turn_tokens"]
