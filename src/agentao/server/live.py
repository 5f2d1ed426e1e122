"""Sessions this process serves: the runtime session plus everything a turn runs against.

A `LiveSession` owns its LLM provider, permission engine, tools (built-ins and
its MCP servers' tools), the client-backed `Interaction` and `ToolEnv`, its turn
state (`turn_state.py`), the prompts waiting for its turn (`prompt_queue.py`) and its
steering inbox (agent/steering.py), its way out (`emit`/`send` through the connection's
`Outbox`) and its way to the store (`commit`); its model's catalog and context
budget (`models.py`), and its system prompt, built before its first turn (and again
after `/clear` or `/init`). `setup` is work scheduled after the session's reply
(starting MCP servers, a startup-resume replay); a turn waits for it.
The `SessionRegistry` maps ids to live sessions: there is no cap on how many.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agentao.agent.catalog import Catalog
from agentao.agent.ceiling import ModeCeiling
from agentao.agent.checkpoints import Checkpoints
from agentao.agent.child_runs import RunningChildren
from agentao.agent.compaction import CompactionSettings
from agentao.agent.config import Limits as TurnLimits
from agentao.agent.config import LlmConfig
from agentao.agent.context import ContextBudget, estimate_messages, estimate_tools
from agentao.agent.events import ContextUsage, TurnEvent
from agentao.agent.permissions import PermissionEngine
from agentao.agent.providers import LlmProvider
from agentao.agent.providers.messages import SystemMessage
from agentao.agent.session import AgentSession
from agentao.agent.steering import SteeringInbox
from agentao.agent.stoppable import StoppableCalls
from agentao.agent.tools.base import Tool, ToolEnv
from agentao.agent.turn_deps import TurnDeps
from agentao.protocol.errors import SessionNotFound
from agentao.server.interaction import ClientInteraction
from agentao.server.outbox import Outbox
from agentao.server.persistence import SessionArchive
from agentao.server.prompt_queue import PromptQueue
from agentao.server.turn_state import TurnState

log = logging.getLogger("agentao.server")


@dataclass(eq=False)
class LiveSession:
    agent: AgentSession
    llm: LlmConfig
    provider: LlmProvider
    engine: PermissionEngine
    interaction: ClientInteraction
    env: ToolEnv
    make_tools: Callable[[], list[Tool]]  # the built-ins, made at the first turn
    outbox: Outbox
    archive: SessionArchive
    catalog: Catalog
    context: ContextBudget
    make_provider: Callable[[LlmConfig], LlmProvider]
    make_system_prompt: Callable[[AgentSession], Awaitable[str]]
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    ceiling: ModeCeiling = field(default_factory=ModeCeiling)  # no way above it (ceiling.py)
    system: str | None = None  # the system prompt, once built
    mcp_servers: list[Any] = field(default_factory=list)  # agent.mcp.McpServerConfig
    mcp: Any = None  # agent.mcp.McpHub once started
    _builtins: list[Tool] | None = None
    state: TurnState = field(default_factory=TurnState)
    turn_task: asyncio.Task[Any] | None = None
    setup: asyncio.Task[Any] | None = None
    stoppable: StoppableCalls = field(default_factory=StoppableCalls)  # v2's tool_call/cancel
    checkpoints: Checkpoints | None = None  # its turns' file checkpoints (agent/checkpoints.py)
    queue: PromptQueue = field(default_factory=PromptQueue)  # prompts waiting for the turn
    steering: SteeringInbox = field(default_factory=SteeringInbox)  # _session/steering
    children: RunningChildren = field(default_factory=RunningChildren)  # cancelled alone

    @property
    def id(self) -> str:
        return self.agent.id

    @property
    def tools(self) -> list[Tool]:
        from agentao.agent.tools.registry import combine

        if self._builtins is None:
            self._builtins = self.make_tools()
        return combine(self._builtins, self.mcp.tools if self.mcp else [])

    def deps(self, limits: TurnLimits) -> TurnDeps:
        return TurnDeps(
            provider=self.provider,
            tools=self.tools,
            gate=self.engine,
            env=self.env,
            interaction=self.interaction,
            limits=limits,
            system_prompt=self.system or "",
            context=self.context,
            compaction=self.compaction,
            stoppable=self.stoppable,
            checkpoints=self.checkpoints,
            steering=self.steering,
            children=self.children,
        )

    async def prepare(self) -> None:
        """Build the system prompt if it is not built (instructions, repository state)."""
        if self.system is None:
            self.system = await self.make_system_prompt(self.agent)

    def usage(self) -> ContextUsage:
        """How full the context is now: the last provider count, else an estimate."""
        budget = self.context
        last = budget.meter.last
        if last is not None:
            used, estimated = last.tokens, last.estimated
        else:
            bpt = budget.bytes_per_token
            system = [SystemMessage(self.system)] if self.system else []
            specs = [t.schema() for t in self.tools]
            used = estimate_messages([*system, *self.agent.messages], bpt)
            used, estimated = used + estimate_tools(specs, bpt), True
        priced = budget.model is not None and budget.model.cost(0, 0) is not None
        cost = self.agent.cost if priced else None
        currency = budget.model.currency if budget.model is not None else "USD"
        return ContextUsage(used, budget.window.tokens, estimated, cost, currency)

    async def emit(self, event: TurnEvent) -> None:
        """A runtime event to the client, as its session/update."""
        await self.outbox.emit(self.id, event)

    async def send(self, update: Any) -> None:
        """A session/update (mode, config options) to the client."""
        await self.outbox.send(self.id, update)

    async def commit(self) -> None:
        """The finished turn (and the session's state) into the store."""
        await self.archive.commit_turn(self.agent, self.engine)

    async def save_state(self) -> None:
        """The session's state (mode, model, grants) into the store, between turns."""
        await self.archive.save_state(self.agent, self.engine)

    async def wait_setup(self) -> None:
        """Wait for the post-reply setup (never fails: its errors were reported)."""
        if self.setup is not None and not self.setup.done():
            await asyncio.wait([self.setup])

    def cancel(self) -> bool:
        """Cancel the running turn (seed C.6): pending questions to the client first, and
        the prompts waiting for it (prompt_queue.py) never start."""
        if not self.state.cancel():  # idle or already cancelling: nothing more to do
            return False
        self.queue.drop()
        self.interaction.cancel_pending()
        if self.turn_task is not None:
            self.turn_task.cancel()
        return True

    async def close(self, grace: float) -> None:
        """Cancel any turn, wait up to `grace` for it, then stop the MCP servers."""
        self.cancel()
        tasks = [t for t in (self.turn_task, self.setup) if t is not None and not t.done()]
        if self.setup in tasks:
            self.setup.cancel()  # type: ignore[union-attr]
        if tasks:
            await asyncio.wait(tasks, timeout=grace)
        self.state.fire("close")
        if self.mcp is not None:
            with contextlib.suppress(Exception):
                await self.mcp.aclose()
        aclose = getattr(self.provider, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()


class SessionRegistry:
    """Live sessions by id."""

    def __init__(self) -> None:
        self._sessions: dict[str, LiveSession] = {}

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._sessions

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: str) -> LiveSession:
        """The live session, or -32002 with data {"sessionId"}."""
        live = self._sessions.get(session_id)
        if live is None:
            raise SessionNotFound(session_id)
        return live

    def find(self, session_id: str) -> LiveSession | None:
        return self._sessions.get(session_id)

    def add(self, live: LiveSession) -> None:
        self._sessions[live.id] = live

    def remove(self, session_id: str) -> LiveSession | None:
        return self._sessions.pop(session_id, None)

    def all(self) -> list[LiveSession]:
        return list(self._sessions.values())


__all__ = ["LiveSession", "SessionRegistry"]
