"""What a turn uses: tokens, money, and room in the context window.

A reply's token counts add up into the turn's `Usage` (answered with `TurnEnded`); every
model request is priced from the model catalog, a compaction's summary request too, so
the session's cost counts all of them. After each reply (and after a compaction) the
user is told how full the context is and what the session has cost (`ContextUsage`).
"""

from __future__ import annotations

from agentao.agent.context import ContextBudget, Measure
from agentao.agent.events import ContextUsage, Usage
from agentao.agent.providers.base import LlmRequest

__all__ = ["TurnUsage", "add_usage"]


class TurnUsage:
    """One turn's tokens and cost so far, against its session's window and prices."""

    def __init__(self, budget: ContextBudget | None, session_cost: float) -> None:
        self.budget = budget
        self.session_cost = session_cost  # what the turns before this one cost
        self.tokens: Usage | None = None  # the replies' token counts, added up
        self.cost = 0.0

    def add_reply(self, usage: Usage | None) -> None:
        """A reply finished: its tokens count for the turn, and its price."""
        self.tokens = add_usage(self.tokens, usage)
        self.charge(usage)

    def charge(self, usage: Usage | None) -> None:
        """A request's price (a summary request's too), when the catalog prices the model."""
        model = self.budget.model if self.budget is not None else None
        if usage is not None and model is not None:
            self.cost += model.cost(usage.input_tokens, usage.output_tokens) or 0.0

    def after_reply(self, sent: LlmRequest | None, usage: Usage | None) -> ContextUsage | None:
        """The context's usage after the reply to `sent` (the provider's count when it
        gave one); None when there is no window to report against."""
        if self.budget is None or sent is None:
            return None
        return self.report(self.budget.meter.observe(sent, usage))

    def report(self, measure: Measure) -> ContextUsage:
        """`measure` against the window, with the session's cost when the model is priced."""
        assert self.budget is not None
        model, window = self.budget.model, self.budget.window
        priced = model is not None and model.cost(0, 0) is not None
        cost = self.session_cost + self.cost if priced else None
        currency = model.currency if model is not None else "USD"
        return ContextUsage(measure.tokens, window.tokens, measure.estimated, cost, currency)


def add_usage(a: Usage | None, b: Usage | None) -> Usage | None:
    """Two replies' token usage added up (None when neither reported any)."""
    if a is None or b is None:
        return a or b

    def opt(x: int | None, y: int | None) -> int | None:
        return None if x is None and y is None else (x or 0) + (y or 0)

    return Usage(
        a.input_tokens + b.input_tokens,
        a.output_tokens + b.output_tokens,
        a.total_tokens + b.total_tokens,
        opt(a.thought_tokens, b.thought_tokens),
        opt(a.cached_read_tokens, b.cached_read_tokens),
    )
