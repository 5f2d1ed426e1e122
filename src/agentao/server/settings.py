"""The agent server's named settings, grouped; each limit has a documented default."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from agentao.agent.ceiling import ModeCeiling
from agentao.agent.checkpoints import CheckpointLimits
from agentao.agent.compaction import CompactionSettings
from agentao.agent.config import Limits as TurnLimits
from agentao.agent.context import ContextSettings
from agentao.agent.instructions import InstructionSettings
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
    ceiling: ModeCeiling = field(default_factory=ModeCeiling)  # AGENTAO_MODE_CEILING
    context: ContextSettings = field(default_factory=ContextSettings)  # AGENTAO_CONTEXT_TOKENS
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    instructions: InstructionSettings = field(default_factory=InstructionSettings)
    checkpoints: CheckpointLimits = field(default_factory=CheckpointLimits)  # AGENTAO_CHECKPOINT*
    models_timeout: float = 2.0  # AGENTAO_MODELS_TIMEOUT: seconds for a provider's /v1/models
    close_grace: float = 2.0  # seconds a closing session's turn gets to end (close, EOF)
    # AGENTAO_PROMPT_QUEUE_DEPTH: prompts that may wait for a session's running turn (those
    # that ask to, server/prompt_queue.py); one more is refused as "busy"; 0: never wait
    prompt_queue_depth: int = 16
    # AGENTAO_STEERING_MAX_PENDING: steering messages that may wait for the running turn's
    # next step (server/steering.py); one more is refused (-32600, reason "steering_full")
    steering_max_pending: int = 32
    log_level: str = "INFO"  # AGENTAO_LOG_LEVEL
    # OpenAI-compatible providers: "http" (http1.py + msgspec, agent/providers/openai_http.py)
    # or "sdk" (the openai SDK); AGENTAO_OPENAI_CLIENT.
    openai_client: str = "http"

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> ServerSettings:
        """Defaults, with the turn limits' variables (agent/config.py), AGENTAO_LOG_LEVEL,
        AGENTAO_OPENAI_CLIENT, AGENTAO_SANDBOX (auto or off), AGENTAO_MODE_CEILING (the
        highest mode a session may be in; agent/ceiling.py) and
        AGENTAO_WEB_ALLOW_PRIVATE (1: web_fetch may reach loopback and private
        addresses, e.g. a local docs server or a test), the context and compaction
        variables (agent/context.py, agent/compaction.py), AGENTAO_INSTRUCTIONS_MAX_CHARS
        and AGENTAO_MODELS_TIMEOUT (0: never ask a provider for its model list), the
        file checkpoints' bounds (AGENTAO_CHECKPOINT_*, agent/checkpoints.py),
        AGENTAO_PROMPT_QUEUE_DEPTH (prompts that may wait for a running turn) and
        AGENTAO_STEERING_MAX_PENDING (steering messages waiting for the turn's next step)."""
        level = env.get("AGENTAO_LOG_LEVEL", "").strip().upper() or "INFO"
        client = env.get("AGENTAO_OPENAI_CLIENT", "").strip().lower() or "http"
        private = env.get("AGENTAO_WEB_ALLOW_PRIVATE", "").strip().lower() in TRUE_WORDS
        return cls(
            turn=TurnLimits.from_env(env),
            web=WebLimits(allow_private_addresses=private),
            log_level=level,
            openai_client=client,
            sandbox=SandboxSettings.from_env(env),
            ceiling=ModeCeiling.from_env(env),
            context=ContextSettings.from_env(env),
            compaction=CompactionSettings.from_env(env),
            instructions=InstructionSettings.from_env(env),
            checkpoints=CheckpointLimits.from_env(env),
            models_timeout=_seconds(env.get("AGENTAO_MODELS_TIMEOUT", ""), 2.0),
            prompt_queue_depth=_count("AGENTAO_PROMPT_QUEUE_DEPTH", env, 16),
            steering_max_pending=_count("AGENTAO_STEERING_MAX_PENDING", env, 32),
        )


def _count(name: str, env: Mapping[str, str], default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a whole number") from None
    if value < 0:
        raise ValueError(f"{name}={raw!r} must be 0 or more")
    return value


def _seconds(raw: str, default: float) -> float:
    if not raw.strip():
        return default
    try:
        return max(0.0, float(raw))
    except ValueError:
        raise ValueError(f"AGENTAO_MODELS_TIMEOUT={raw!r} is not a number of seconds") from None


__all__ = ["ServerSettings"]
