"""What an API key may read about itself.

    GET /v1/keys/me   {object: "key", name, budgets: {tokens_per_day, usd_per_day},
                       today: {day, tokens, usd, resets_in_seconds}}

`budgets` are the key's `[[keys]]` limits (null: none of that kind); `today` is what it
spent this UTC day on every replica (store/spend.py: the count its next turn is checked
against, budgets.py), and the seconds until the count starts over; null for a key with
no budget (its turns are not counted: a store write a turn saved). The keyless local
user is `local`, with no budgets. A key reads its own, never another's: the name comes
from the credentials, not from the path.
"""

from __future__ import annotations

import datetime
import math
from typing import Any

from fastapi import APIRouter, Request

from agentao.gateway.budgets import DAY_SECONDS
from agentao.gateway.service import Gateway

router = APIRouter()


@router.get("/v1/keys/me")
async def key_me(request: Request) -> dict[str, Any]:
    gw: Gateway = request.app.state.gateway
    name = gw.principal(request).name
    budgets = gw.budgets
    budget = budgets.of(name)
    limits = {"tokens_per_day": budget.tokens_per_day, "usd_per_day": budget.usd_per_day}
    today = None
    if name in budgets.budgets:  # counted only where a budget is
        spent = await budgets.spent(name)
        today = _today(gw) | {"tokens": spent.tokens, "usd": spent.usd}
    return {"object": "key", "name": name, "budgets": limits, "today": today}


def _today(gw: Gateway) -> dict[str, Any]:
    """Today (UTC) and the seconds until it ends."""
    day = datetime.datetime.fromtimestamp(gw.budgets.today() * DAY_SECONDS, datetime.UTC)
    left = max(1, math.ceil(DAY_SECONDS - gw.budgets.clock() % DAY_SECONDS))
    return {"day": day.date().isoformat(), "resets_in_seconds": left}


__all__ = ["key_me", "router"]
