"""What a turn costs: `[prices]` in the gateway config, in US dollars per million tokens.

    [prices.agentao]                    # every model of the agent `agentao`
    input_usd_per_million = 2.5
    output_usd_per_million = 10.0
    [prices."agentao/gpt-4o-mini"]      # one model of it (wins over the agent's price)
    input_usd_per_million = 0.15
    output_usd_per_million = 0.6

A turn is priced by its agent and model's entry, else its agent's; a turn of an agent
with no price costs nothing that is counted (`[[keys]] usd_per_day` then never refuses
it: budgets.py). Both settings are required in an entry, each a number at or above 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from agentao.gateway.mapping import TokenUsage

PRICE_SETTINGS = ("input_usd_per_million", "output_usd_per_million")
MILLION = 1_000_000


@dataclass(frozen=True, slots=True)
class Price:
    input_usd_per_million: float
    output_usd_per_million: float

    def cost(self, usage: TokenUsage) -> float:
        """US dollars for a turn's tokens."""
        return (
            usage.input_tokens * self.input_usd_per_million
            + usage.output_tokens * self.output_usd_per_million
        ) / MILLION

    def priced(self, usage: TokenUsage) -> TokenUsage:
        """`usage` with its cost (an answer's `usage.x_cost_usd`)."""
        return replace(usage, cost_usd=self.cost(usage))


@dataclass(frozen=True, slots=True)
class Prices:
    """`[prices]`: an agent's, or an "agent/model"'s, price."""

    table: dict[str, Price] = field(default_factory=dict)

    def of(self, agent: str, model: str | None) -> Price | None:
        """The price of `agent`'s `model`, else of the agent; None: not priced."""
        if model and (price := self.table.get(f"{agent}/{model}")) is not None:
            return price
        return self.table.get(agent)

    def unserved(self, agents: set[str]) -> list[str]:
        """The entries whose agent is not among `agents`."""
        return [name for name in self.table if name.split("/", 1)[0] not in agents]

    def priced(self, agent: str, model: str | None, usage: TokenUsage) -> TokenUsage:
        """`usage` with its cost where the agent (or its model) has a price."""
        price = self.of(agent, model)
        return usage if price is None else price.priced(usage)


NO_PRICES = Prices()  # nothing priced


def parse_prices(table: dict[str, Any], where: str) -> Prices:
    """`[prices]` read and checked; a bad entry is a ValueError naming it (config.py
    makes it a `ConfigError`)."""
    out: dict[str, Price] = {}
    for name, entry in table.items():
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: [prices] {name!r} must be a table of {PRICE_SETTINGS}")
        unknown = sorted(set(entry) - set(PRICE_SETTINGS))
        missing = [s for s in PRICE_SETTINGS if s not in entry]
        if unknown or missing:
            raise ValueError(
                f"{where}: [prices] {name!r}: unknown settings {unknown}, missing {missing}"
            )
        for setting in PRICE_SETTINGS:
            value = entry[setting]
            if type(value) not in (int, float) or not 0 <= value < math.inf:
                raise ValueError(f"{where}: [prices] {name!r} {setting} must be a number >= 0")
        out[str(name)] = Price(*(float(entry[s]) for s in PRICE_SETTINGS))
    return Prices(out)


__all__ = ["MILLION", "NO_PRICES", "PRICE_SETTINGS", "Price", "Prices", "parse_prices"]
