"""Building a `LiveSession`: the runtime session wired to this client.

The client's advertised capabilities decide the `ToolEnv` (editor fs/terminal
where offered, local elsewhere); the session's mode and stored grants decide
its permission engine; the user's rules file (under AGENTAO_HOME, never the
project) is read for every session, so an edit applies to the next one. Shell
commands are confined by the agent process's one `Sandbox`, in whichever
environment runs them. The system prompt is built from the session's facts
(agent/system_prompt.py): its instruction files and its repository's state, whose
`git status` runs locally and confined, never in the editor's terminal; a client's own
`systemPrompt` is applied to it (client_prompt.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from agentao.agent.catalog import Catalog
from agentao.agent.ceiling import ModeCeiling
from agentao.agent.checkpoints import Checkpoints, plain_name
from agentao.agent.config import LlmConfig
from agentao.agent.instructions import find_instructions
from agentao.agent.permissions import (
    PermissionEngine,
    PermissionRulesError,
    UserPolicy,
    load_policy,
)
from agentao.agent.providers import LlmProvider, make_provider
from agentao.agent.repository import repo_state
from agentao.agent.roots import RootError
from agentao.agent.sandbox import Sandbox
from agentao.agent.session import AgentSession
from agentao.agent.system_prompt import SystemFacts, build_system_prompt
from agentao.agent.tools.base import Tool, ToolEnv
from agentao.protocol.endpoint import Endpoint
from agentao.protocol.errors import InternalError, InvalidParams
from agentao.server.client_env import ClientEnv, ClientIo
from agentao.server.client_prompt import with_client_prompt
from agentao.server.config_options import DEFAULT_MODE, PRESETS
from agentao.server.interaction import ClientInteraction
from agentao.server.live import LiveSession
from agentao.server.models import budget_for
from agentao.server.outbox import Outbox
from agentao.server.persistence import SessionArchive
from agentao.server.settings import ServerSettings
from agentao.store.paths import state_dir

CHECKPOINTS_DIR = "checkpoints"  # under the state directory: <session id>/turn-N.json, blobs/


class SessionFactory:
    """Live sessions for one client connection: its endpoint, I/O and outbox."""

    def __init__(
        self,
        endpoint: Endpoint,
        io: ClientIo,
        outbox: Outbox,
        archive: SessionArchive,
        settings: ServerSettings,
        sandbox: Sandbox,
        interaction: Callable[[Endpoint, str], ClientInteraction] = ClientInteraction,
    ) -> None:
        self.endpoint = endpoint
        self.interaction = interaction  # the protocol version's questions (server/v2.py)
        self.io = io
        self.outbox = outbox
        self.archive = archive
        self.settings = settings
        self.sandbox = sandbox

    def open(
        self,
        agent: AgentSession,
        llm: LlmConfig,
        grants: dict[str, Any],
        servers: list[Any],
        catalog: Catalog,
    ) -> LiveSession:
        _pin_roots(agent)
        policy = _policy()
        clamp_mode(agent, self.settings.ceiling)
        engine = PermissionEngine.from_dict(
            grants, posture(agent), policy.rules, self.sandbox.status(), policy.sandbox
        )
        interaction = self.interaction(self.endpoint, agent.id)
        interaction.children_shown = self.outbox.shows_children()
        return LiveSession(
            agent=agent,
            llm=llm,
            provider=self.provider(llm),
            engine=engine,
            interaction=interaction,
            env=self.env(agent.id),
            make_tools=self.tools,
            outbox=self.outbox,
            archive=self.archive,
            catalog=catalog,
            context=budget_for(llm, catalog, self.settings.context),
            make_provider=self.provider,
            make_system_prompt=self.system_prompt,
            compaction=self.settings.compaction,
            ceiling=self.settings.ceiling,
            mcp_servers=servers,
            checkpoints=self.checkpoints(agent),
        )

    def checkpoints(self, agent: AgentSession) -> Checkpoints | None:
        """The session's file checkpoints, in the agent's state directory (never the
        project's); None when turned off (AGENTAO_CHECKPOINTS=off)."""
        limits = self.settings.checkpoints
        if not limits.enabled or not plain_name(agent.id):
            return None
        return Checkpoints(state_dir() / CHECKPOINTS_DIR, agent.id, limits)

    def provider(self, llm: LlmConfig) -> LlmProvider:
        """The LLM client: the lean HTTP one for OpenAI-compatible endpoints by default."""
        return make_provider(llm, self.settings.openai_client)

    async def system_prompt(self, agent: AgentSession) -> str:
        """The session's system prompt: where it works, its instructions, its repository."""
        from agentao.agent.local_env import LocalEnv

        files = await asyncio.to_thread(find_instructions, agent.cwd, self.settings.instructions)
        run = LocalEnv(self.settings.shell, sandbox=self.sandbox).run_command
        # The probe's answer is known once any session opened (AcpAgent._probe_sandbox):
        # a thread hop per session to read it cost more than the rest of this prompt.
        status = self.sandbox.known or await asyncio.to_thread(self.sandbox.status)
        sandboxed = status.available
        state = await repo_state(agent.cwd, run if sandboxed else None)
        facts = SystemFacts(agent.cwd, agent.workspace, state, files)
        return with_client_prompt(agent, build_system_prompt(facts))

    def tools(self) -> list[Tool]:
        from agentao.agent.subagents import SubagentTool
        from agentao.agent.tools.registry import builtin_tools

        s = self.settings
        tools = builtin_tools(s.files, s.shell, s.web)
        return [*tools, SubagentTool()] if s.turn.subagent_depth >= 1 else tools

    def env(self, session_id: str) -> ToolEnv:
        from agentao.agent.local_env import LocalEnv

        local = LocalEnv(self.settings.shell, sandbox=self.sandbox)
        if not self.io.any:
            return local
        return ClientEnv(self.endpoint, session_id, self.io, local, self.sandbox)


def _pin_roots(agent: AgentSession) -> None:
    """Resolve and pin the session's directories now, as it opens (session/new, load,
    resume): every later decision uses these and refuses a swap (agent/roots.py)."""
    try:
        agent.pin_roots()
    except RootError as exc:
        raise InvalidParams(f"Invalid params: {exc}", {"field": "cwd"}) from None


def posture(agent: AgentSession) -> str:
    """The permission preset in force: the mode if it is one, else the last preset set."""
    if agent.mode_id in PRESETS:
        return agent.mode_id
    return agent.meta.get("posture") or DEFAULT_MODE


def clamp_mode(agent: AgentSession, ceiling: ModeCeiling) -> None:
    """A session opens within the process's ceiling: a new one in its default mode if
    allowed, a stored one (its mode set under another ceiling) lowered to the ceiling."""
    held = posture(agent)
    allowed = ceiling.clamp(held)
    if allowed != held:
        agent.mode_id = allowed
        agent.meta["posture"] = allowed


def _policy() -> UserPolicy:
    try:
        return load_policy()
    except PermissionRulesError as exc:
        raise InternalError(
            f"Internal error: the permission rules file is invalid: {exc}",
            {"reason": "permission_rules"},
        ) from None


__all__ = ["SessionFactory", "clamp_mode", "posture"]
