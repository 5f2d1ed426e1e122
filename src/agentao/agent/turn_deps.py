"""What a turn runs against: the provider, the tools and their gate, the window.

The server builds one `TurnDeps` per session (`server/live.py`); every part of a turn
(`turn.py`, `staging.py`, `tool_call.py`, `compaction_trigger.py`) reads it, none
changes it, except the record of stoppable calls (`stoppable.py`), which the session
shares with whoever may stop one, and the steering inbox (`steering.py`), which it
shares with whoever may steer the running turn, and the children running
(`child_runs.py`), which it shares with whoever may cancel one alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agentao.agent.checkpoints import Checkpoints
from agentao.agent.child_runs import RunningChildren
from agentao.agent.compaction import CompactionSettings
from agentao.agent.config import Limits
from agentao.agent.context import ContextBudget
from agentao.agent.providers.base import LlmProvider
from agentao.agent.steering import SteeringInbox
from agentao.agent.stoppable import StoppableCalls
from agentao.agent.tools.base import Interaction, PermissionGate, Tool, ToolEnv

__all__ = ["TurnDeps"]


@dataclass(frozen=True, slots=True)
class TurnDeps:
    """What a turn runs against; built by the server per session."""

    provider: LlmProvider
    tools: Sequence[Tool]
    gate: PermissionGate
    env: ToolEnv
    interaction: Interaction
    limits: Limits = field(default_factory=Limits)
    system_prompt: str = ""
    context: ContextBudget | None = None  # the window and its meter; None: never compacts
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    # the session's calls the client may stop alone; the one part a turn changes
    stoppable: StoppableCalls = field(default_factory=StoppableCalls)
    # the session's file checkpoints (checkpoints.py); None: none are kept
    checkpoints: Checkpoints | None = None
    # words a person adds mid-turn (steering.py); the turn opens, drains and closes it
    steering: SteeringInbox = field(default_factory=SteeringInbox)
    # the children running in its turns, theirs too (child_runs.py): each may be cancelled
    children: RunningChildren = field(default_factory=RunningChildren)
