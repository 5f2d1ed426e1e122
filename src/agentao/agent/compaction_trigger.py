"""When a turn compacts: past the threshold, after a refusal for length, or on `/compact`.

Before each request the turn asks `fit`: it measures the request against the window
(`TurnDeps.context`) and, past `threshold` x window, compacts the staged turn's context
first (`compaction.py` says how). A provider's refusal for length, and `/compact`, compact
whatever the measure. The summary request goes out like a reply (retries announced) and
its cost counts; the outcome is adopted by the staged turn, and the context's new usage
is reported at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing

from agentao.agent.compaction import Compacted, CompactionJob, compact
from agentao.agent.context import ContextBudget, estimate_messages, estimate_tools
from agentao.agent.events import CompactionTrigger, Notice, TurnEvent
from agentao.agent.providers.base import LlmEvent, LlmFinished, LlmRequest
from agentao.agent.replies import llm_events
from agentao.agent.staging import StagedTurn
from agentao.agent.turn_deps import TurnDeps

__all__ = ["fit"]


async def fit(
    turn: StagedTurn, deps: TurnDeps, trigger: CompactionTrigger
) -> AsyncIterator[TurnEvent]:
    """Compact if the next request would pass the threshold (always, for a refusal or
    `/compact`); yields the compaction's events, then the context's new usage."""
    budget = deps.context
    if budget is None:
        return
    tokens = budget.meter.measure(turn.request()).tokens
    if trigger == "threshold" and tokens <= deps.compaction.threshold * budget.window.tokens:
        return
    job = _job(turn, budget, tokens, trigger)

    async def summary_stream(request: LlmRequest) -> AsyncIterator[LlmEvent | Notice]:
        async with aclosing(llm_events(deps.provider, deps.limits, request)) as events:
            async for item in events:
                if isinstance(item, LlmFinished):
                    turn.use.charge(item.usage)
                yield item

    async with aclosing(compact(job, summary_stream, deps.compaction)) as steps:
        async for item in steps:
            if isinstance(item, Compacted):
                turn.adopt(item)
                budget.meter.forget()  # the history was rewritten: estimate until a count
                yield turn.use.report(budget.meter.measure(turn.request()))
            else:
                yield item


def _job(
    turn: StagedTurn, budget: ContextBudget, tokens: int, trigger: CompactionTrigger
) -> CompactionJob:
    bpt = budget.bytes_per_token
    prefix, keep_from = turn.context_base()
    plan = turn.plan if turn.plan is not None else turn.session.plan
    return CompactionJob(
        model=turn.session.model,
        turns=turn.session.turns,
        prefix=prefix,
        keep_from=keep_from,
        current=tuple(turn.messages),
        plan=plan,
        overhead=estimate_messages(turn.system, bpt) + estimate_tools(turn.specs, bpt),
        window=budget.window.tokens,
        tokens_before=tokens,
        trigger=trigger,
        bytes_per_token=bpt,
    )
