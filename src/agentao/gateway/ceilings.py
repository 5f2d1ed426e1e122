"""What a key's ceiling lets its sessions do to an agent's modes and config options.

A key's ceiling (`reject` < `reads` < `ask` < `all`) bounds the permission answers its
turns may get; it must also bound the ways around them. An agent's mode is one: a
session switched to a mode that asks nothing (`full-access`, `yolo`, `bypassPermissions`)
needs no answer at all. So, per agent and per ceiling, the config names

    [agents.NAME.ceilings.ask]
    mode = "read-only"               # the mode its sessions start in (default: the agent's)
    modes = ["read-only", "plan"]    # the modes it may switch to ("*": any)
    options = { model = ["*"] }      # config option values it may set ("*": any)

and the gateway refuses every other `session/set_mode`, `session/set_config_option` and
model switch from a key with that ceiling, whichever face asked (OpenAI API, remote ACP).
Without a table: `all` may change anything; below `all`, nothing. Our own agent is held
by its process as well (agent/ceiling.py): each ceiling's processes start with
`AGENTAO_MODE_CEILING` set to the highest mode these rules allow, so not even a chat
message (`/mode full-access`) gets past it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentao.gateway.confine import string_list
from agentao.modes import DEFAULT_MODE, HIGHEST_MODE, MODE_RANK

ANY = "*"
UNBOUNDED = "all"  # the ceiling that may change anything by default
_SETTINGS = frozenset({"mode", "modes", "options"})


class CeilingRulesError(ValueError):
    """A `[agents.NAME.ceilings.*]` table is malformed; the message says where."""


@dataclass(frozen=True, slots=True)
class CeilingRules:
    """One ceiling's rules for one agent."""

    mode: str | None = None  # set after session/new when the agent starts elsewhere
    modes: frozenset[str] = frozenset()  # may switch to; ANY in it: every mode
    options: Mapping[str, frozenset[str]] = field(default_factory=dict)  # id -> values

    @classmethod
    def default(cls, ceiling: str) -> CeilingRules:
        if ceiling == UNBOUNDED:
            return cls(modes=frozenset({ANY}), options={ANY: frozenset({ANY})})
        return cls()

    def allows_mode(self, mode: str) -> bool:
        return ANY in self.modes or mode in self.modes or mode == self.mode

    def allows_option(self, config_id: str, value: str) -> bool:
        values = self.options.get(config_id, self.options.get(ANY, frozenset()))
        return ANY in values or value in values

    def our_highest_mode(self) -> str:
        """The highest of our agent's modes these rules reach (its process's ceiling)."""
        if ANY in self.modes:
            return HIGHEST_MODE
        start = self.mode or DEFAULT_MODE
        ranked = [m for m in (start, *sorted(self.modes)) if m in MODE_RANK]
        # Of equal ranks the start mode wins: the agent opens sessions at its ceiling.
        return max(ranked, key=MODE_RANK.__getitem__, default=DEFAULT_MODE)


def parse_rules(table: Any, where: str) -> CeilingRules:
    """One `[agents.NAME.ceilings.CEILING]` table."""
    if not isinstance(table, dict):
        raise CeilingRulesError(f"{where} must be a table")
    unknown = set(table) - _SETTINGS
    if unknown:
        raise CeilingRulesError(
            f"{where}: unknown settings {sorted(unknown)} (known: {', '.join(sorted(_SETTINGS))})"
        )
    mode = table.get("mode")
    if mode is not None and (not isinstance(mode, str) or not mode):
        raise CeilingRulesError(f"{where}: mode must be a mode id")
    options = table.get("options", {})
    if not isinstance(options, dict):
        raise CeilingRulesError(f"{where}: options must be a table of lists")
    return CeilingRules(
        mode=mode,
        modes=_names(table.get("modes", []), f"{where}: modes"),
        options={str(k): _names(v, f"{where}: options.{k}") for k, v in options.items()},
    )


def _names(value: Any, where: str) -> frozenset[str]:
    try:
        return frozenset(string_list(value, where))
    except ValueError as exc:
        raise CeilingRulesError(str(exc)) from None


__all__ = [
    "ANY",
    "CeilingRules",
    "CeilingRulesError",
    "parse_rules",
]
