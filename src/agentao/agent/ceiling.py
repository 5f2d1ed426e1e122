"""The highest mode a session of this agent process may be in, set by whoever started it.

A gateway serves one agent process per key ceiling (gateway/pool.py) and starts it with
`AGENTAO_MODE_CEILING` in its environment: the process's environment is the one place no
client on the wire can reach (a `_meta` field or a mode id could be sent by any client).
Every way a session's mode changes asks `ModeCeiling.allows` first: `session/set_mode`,
the `/mode` command, a stored session loaded again (its mode is clamped when it opens),
so a key whose ceiling maps to `workspace-write` cannot talk its way to `full-access`.

Modes are ranked by what they let the model do without asking: `read-only` and `plan`
(nothing written), then `workspace-write`, then `full-access` (everything, unconfined). A
mode id that is not one of the presets is UI state and never changes the permissions
(server/commands.py), so it is allowed under any ceiling.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from agentao.modes import CEILING_ENV, HIGHEST_MODE, MODE_RANK


class ModeAboveCeiling(ValueError):
    """A mode above the process's ceiling was asked for; the message says which."""

    def __init__(self, mode: str, highest: str) -> None:
        super().__init__(
            f"mode {mode!r} is above this agent's ceiling {highest!r} (set by whoever started "
            f"the agent, e.g. a gateway for this API key's ceiling)"
        )
        self.mode = mode
        self.highest = highest


@dataclass(frozen=True, slots=True)
class ModeCeiling:
    """The highest preset a session may be in (default: every mode)."""

    highest: str = HIGHEST_MODE

    def __post_init__(self) -> None:
        if self.highest not in MODE_RANK:
            raise ValueError(
                f"{CEILING_ENV}={self.highest!r}: expected one of {', '.join(MODE_RANK)}"
            )

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> ModeCeiling:
        return cls(env.get(CEILING_ENV, "").strip().lower() or HIGHEST_MODE)

    @property
    def bounded(self) -> bool:
        return MODE_RANK[self.highest] < MODE_RANK[HIGHEST_MODE]

    def allows(self, mode: str) -> bool:
        rank = MODE_RANK.get(mode)
        return rank is None or rank <= MODE_RANK[self.highest]

    def check(self, mode: str) -> str:
        """`mode`, or `ModeAboveCeiling`."""
        if not self.allows(mode):
            raise ModeAboveCeiling(mode, self.highest)
        return mode

    def clamp(self, mode: str) -> str:
        """`mode` if allowed, else the ceiling itself (a stored session opened again)."""
        return mode if self.allows(mode) else self.highest


__all__ = ["CEILING_ENV", "ModeAboveCeiling", "ModeCeiling"]
