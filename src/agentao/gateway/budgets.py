"""Per-key daily budgets: `[[keys]] tokens_per_day` and `usd_per_day`.

Every turn that ends is charged to its conversation's owner: the tokens the agent
reported for it (input + output), or, when it reports none, the same estimate the
answer's `usage` carries (`x_estimated`, mapping.py); and its cost: the agent's own
where it reports one in dollars (`usage_update.cost`, the session's total: what the
turn added to it), else those tokens priced by `[prices]` (prices.py; a turn priced by
neither costs 0). The answer's `usage.x_cost_usd` is that cost (`cost_of`). The count is kept
in the gateway's store (store/spend.py), one row per key and UTC day, added to by one
statement in the database: a restart keeps the day's count, and replicas on one
PostgreSQL share it (neither's charge is lost when both charge at once).

A key whose tokens or dollars today (UTC) reached a budget is refused before its next
turn starts, on every face (Chat Completions, Responses, Anthropic Messages, the task
stream: `429 token_budget_exceeded` or `usd_budget_exceeded`, with `Retry-After`, the
seconds until the next UTC midnight, when the count starts over; remote ACP's
`session/prompt`: `-32600` with the same reason, remote/api_errors.py). A turn is admitted while today's
count is below the budget, and a turn admitted is never cut short: a key ends a day at
most its budget plus the cost of the turns it had running when the budget was reached
(each replica admits against the stored count, so that holds across replicas too).

A charge the store refuses (the database away for a moment) is not lost: it is owed, in
this replica's memory, counted in what this replica reads as the key's spend, and stored
again before each later read of that key's spend (`spent`) until the store takes it.
It is lost only if this replica stops meanwhile; a charge whose statement failed after
the database had applied it is counted twice (a budget errs on the side of refusing).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

from agentao.client import TurnEnd
from agentao.client.view import Message, SessionView
from agentao.gateway.config import ApiKey
from agentao.gateway.errors import ApiError
from agentao.gateway.mapping import TokenUsage, estimate_usage, usage_from_agent
from agentao.gateway.prices import Prices
from agentao.store.spend import SpendStore, Spent

DAY_SECONDS = 86_400
log = logging.getLogger("agentao.gateway")


class BudgetExceeded(ApiError):
    status = 429
    type = "rate_limit_error"

    def __init__(self, owner: str, spent: str, code: str, retry_after: int) -> None:
        super().__init__(
            f"the API key {owner!r} used its {spent} for today (UTC); "
            f"the count starts over in {retry_after} s",
            code=code,
            headers={"Retry-After": str(retry_after)},
        )


@dataclass(frozen=True, slots=True)
class KeyBudget:
    """One key's limits a UTC day; None: no limit of that kind."""

    tokens_per_day: int | None = None
    usd_per_day: float | None = None


class Budgets:
    """Each key's spend today, in the store, against its budgets."""

    def __init__(
        self,
        keys: Sequence[ApiKey],
        spend: SpendStore,
        prices: Prices,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.budgets = {
            k.name: KeyBudget(k.tokens_per_day, k.usd_per_day)
            for k in keys
            if k.tokens_per_day is not None or k.usd_per_day is not None
        }
        self.spend = spend
        self.prices = prices
        self.clock = clock
        # Charges under way, by owner. A turn's end is in its log (where a task-stream
        # reader sees it) before its charge is stored; the charge is registered here in
        # the same step, so a read of this replica that waits for them counts the turn.
        self._charging: dict[str, set[asyncio.Event]] = {}
        # Where each live session's own cost report stood when its last turn here ended
        # (`usage_update.cost` is the session's total), and each turn's cost as charged,
        # for its answer's usage: both gone with their session or turn.
        self._agent_totals: WeakKeyDictionary[Any, float] = WeakKeyDictionary()
        self._turn_costs: WeakKeyDictionary[Any, float] = WeakKeyDictionary()
        self._owed: dict[tuple[str, int], Spent] = {}  # charges the store refused, by day
        self._settling = asyncio.Lock()

    def of(self, owner: str) -> KeyBudget:
        return self.budgets.get(owner) or KeyBudget()

    def today(self) -> int:
        """Today's number: whole UTC days since the epoch."""
        return int(self.clock() // DAY_SECONDS)

    async def spent(self, owner: str) -> Spent:
        """What `owner` spent today, as stored (every replica's turns), once the charges
        this replica has under way for it are stored."""
        for charging in list(self._charging.get(owner, ())):
            await charging.wait()
        await self._settle(owner)
        today = self.today()
        stored = await self.spend.spent(owner, today)
        owed = self._owed.get((owner, today), Spent())
        return Spent(stored.tokens + owed.tokens, stored.usd + owed.usd)

    async def check(self, owner: str) -> None:
        """Refuse a new turn of `owner` once a budget of today is spent."""
        budget = self.budgets.get(owner)
        if budget is None:
            return
        spent = await self.spent(owner)
        left = max(1, math.ceil(DAY_SECONDS - self.clock() % DAY_SECONDS))
        if budget.tokens_per_day is not None and spent.tokens >= budget.tokens_per_day:
            raise BudgetExceeded(
                owner, f"{budget.tokens_per_day} tokens", "token_budget_exceeded", left
            )
        if budget.usd_per_day is not None and spent.usd >= budget.usd_per_day:
            raise BudgetExceeded(owner, f"${budget.usd_per_day:g}", "usd_budget_exceeded", left)

    def cost_of(self, turn: Any) -> float | None:
        """The cost of an ended turn as charged (None: neither the agent nor `[prices]`
        priced it): what its answer's `usage.x_cost_usd` says."""
        return self._turn_costs.get(turn)

    def turn_cost(self, conv: Any, turn: Any, usage: TokenUsage) -> float | None:
        """A turn's cost in US dollars: the agent's own where it reports one in dollars,
        else `[prices]`'s for its tokens; None: neither prices it."""
        reported = self._reported_cost(turn.session)
        if reported is not None:
            return reported
        return self.prices.priced(conv.record.agent, conv.model, usage).cost_usd

    def _reported_cost(self, session: Any) -> float | None:
        """The session's reported total now, less where it stood when its previous turn
        ended here; None: it reports no dollars, or where it stood is unknown (a session
        loaded with a history this replica never charged: `[prices]` price that turn)."""
        cost = getattr(session.view.usage, "cost", None)
        if cost is None or cost.currency.upper() != "USD":
            return None
        before = self._agent_totals.get(session)
        if before is None and prompts_seen(session.view) <= 1:
            before = 0.0  # the session's first turn: its whole total is this turn's
        self._agent_totals[session] = cost.amount
        return None if before is None else max(0.0, cost.amount - before)

    async def charge(self, conv: Any, turn: Any) -> None:
        """A turn of `conv` (a LiveConversation) ended: its cost is noted for its answer,
        and its tokens and cost count against its owner's today (`record`)."""
        usage = turn_usage(turn)
        cost = self.turn_cost(conv, turn, usage)
        if cost is not None:
            self._turn_costs[turn] = cost
        owner = conv.record.owner
        if owner not in self.budgets:
            return
        charging = asyncio.Event()
        self._charging.setdefault(owner, set()).add(charging)
        try:
            await self.record(owner, usage.total_tokens, cost or 0.0)
        finally:
            charging.set()
            if not (under_way := self._charging[owner] - {charging}):
                del self._charging[owner]
            else:
                self._charging[owner] = under_way

    async def record(self, owner: str, tokens: int, usd: float) -> None:
        """Count `tokens` and `usd` against `owner`'s today; owed if the store refuses."""
        day = self.today()
        try:
            await self.spend.charge(owner, day, tokens, usd)
        except Exception:  # the turn's answer stands: its charge waits, it is not lost
            log.exception("budgets: a charge of %r is owed until the store takes it", owner)
            self._owe(owner, day, Spent(tokens, usd))

    def _owe(self, owner: str, day: int, charge: Spent) -> None:
        owed = self._owed.get((owner, day), Spent())
        self._owed[owner, day] = Spent(owed.tokens + charge.tokens, owed.usd + charge.usd)

    async def _settle(self, owner: str) -> None:
        """Store what `owner` owes, day by day; what the store still refuses stays owed."""
        async with self._settling:  # one at a time: an owed charge is stored once
            for day in [d for o, d in self._owed if o == owner]:
                owed = self._owed[owner, day]
                try:
                    await self.spend.charge(owner, day, owed.tokens, owed.usd)
                except Exception as exc:
                    log.warning("budgets: %r's owed charge is still not stored: %s", owner, exc)
                    continue
                # Kept owed until stored: a read meanwhile counts it (twice, not never).
                self._owe(owner, day, Spent(-owed.tokens, -owed.usd))
                if self._owed[owner, day].tokens == 0 and self._owed[owner, day].usd == 0:
                    del self._owed[owner, day]


def prompts_seen(view: SessionView) -> int:
    """How many prompts (with text) the session's view holds, replayed ones included."""
    return sum(1 for e in view.entries if isinstance(e, Message) and e.role == "user")


def turn_usage(turn: Any) -> TokenUsage:
    """A finished turn's tokens: as the agent reported them, else estimated from what it
    said: as its OpenAI answer mapped it, or, for a turn nobody mapped (the task stream's,
    remote ACP's), as its session's view holds it."""
    result = turn.result
    usage = usage_from_agent(result.usage) if isinstance(result, TurnEnd) else None
    if usage is None:
        prompt_chars = sum(len(b.get("text", "")) for b in turn.prompt)
        said = turn.mapper if turn.context.consumed else said_since_prompt(turn.session.view)
        usage = estimate_usage(prompt_chars, said)
    return usage


@dataclass(frozen=True, slots=True)
class SaidInView:
    """What an agent said in a turn, as `estimate_usage` reads a `TurnMapper`."""

    full_text: str = ""
    full_reasoning: str = ""


def said_since_prompt(view: SessionView) -> SaidInView:
    """The agent's text and thoughts after the view's last user message (the turn's
    prompt: `SessionView.prompted`)."""
    text: list[str] = []
    thought: list[str] = []
    for entry in reversed(view.entries):
        if isinstance(entry, Message):
            if entry.role == "user":
                break
            (thought if entry.role == "thought" else text).extend(entry.chunks)
    return SaidInView("".join(text), "".join(thought))


__all__ = [
    "DAY_SECONDS",
    "BudgetExceeded",
    "Budgets",
    "KeyBudget",
    "SaidInView",
    "prompts_seen",
    "said_since_prompt",
    "turn_usage",
]
