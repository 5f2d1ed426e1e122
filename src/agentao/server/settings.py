"""The agent server's named settings, grouped; each limit has a documented default."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from agentao.agent.config import Limits as TurnLimits
from agentao.agent.sandbox import SandboxSettings
from agentao.agent.settings import FileLimits, McpLimits, ShellLimits, WebLimits
from agentao.store.sessions import StoreSettings

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})


@dataclass(frozen=True, slots=True)
class ServerSettings:
    turn: TurnLimits = field(default_factory=TurnLimits)
    files: FileLimits = field(default_factory=FileLimits)
    shell: ShellLimits = field(default_factory=ShellLimits)
    web: WebLimits = field(default_factory=WebLimits)
    mcp: McpLimits = field(default_factory=McpLimits)
    store: StoreSettings = field(default_factory=StoreSettings)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)  # AGENTAO_SANDBOX
    close_grace: float = 2.0  # seconds a closing session's turn gets to end (close, EOF)
    log_level: str = "INFO"  # AGENTAO_LOG_LEVEL
    # OpenAI-compatible providers: "http" (h11 + msgspec, agent/providers/openai_http.py)
    # or "sdk" (the openai SDK); AGENTAO_OPENAI_CLIENT.
    openai_client: str = "http"

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> ServerSettings:
        """Defaults, with the turn limits' variables (agent/config.py), AGENTAO_LOG_LEVEL,
        AGENTAO_OPENAI_CLIENT, AGENTAO_SANDBOX (auto or off) and
        AGENTAO_WEB_ALLOW_PRIVATE (1: web_fetch may reach loopback and private
        addresses, e.g. a local docs server or a test)."""
        level = env.get("AGENTAO_LOG_LEVEL", "").strip().upper() or "INFO"
        client = env.get("AGENTAO_OPENAI_CLIENT", "").strip().lower() or "http"
        private = env.get("AGENTAO_WEB_ALLOW_PRIVATE", "").strip().lower() in TRUE_WORDS
        return cls(
            turn=TurnLimits.from_env(env),
            web=WebLimits(allow_private_addresses=private),
            log_level=level,
            openai_client=client,
            sandbox=SandboxSettings.from_env(env),
        )


__all__ = ["ServerSettings"]
