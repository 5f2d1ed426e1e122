"""Which LLM to talk to, resolved from the environment, and the limits of a turn.

    LLM_PROVIDER=DEEPSEEK            picks the prefix (default OPENAI), any case
    DEEPSEEK_API_KEY=...             required
    DEEPSEEK_BASE_URL=...            optional for known prefixes (see _KNOWN), else required
    DEEPSEEK_MODEL=...               optional for known prefixes, else required

`ANTHROPIC` speaks the Anthropic Messages API, `SCRIPTED` plays the file named by
`AGENTAO_SCRIPT` (no key), every other prefix an OpenAI-compatible endpoint. Credentials
are resolved here, server-side, and never travel on the wire (seed C.8).

A provider the model catalog lists (`catalog.py`) resolves the same way, with its
key from the environment (`resolve_model`), so a session can switch to it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from agentao.agent.catalog import DEFAULT_PROVIDER, KNOWN_PROVIDERS, Catalog, KnownProvider
from agentao.agent.providers.errors import MissingCredentials, ProviderNotFound

__all__ = [
    "Limits",
    "LlmConfig",
    "resolve_model",
    "resolve_provider",
    "split_model_value",
]


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds of one turn. Each can be set from the environment (see `from_env`)."""

    request_timeout: float = 600.0  # seconds without progress before an LLM request fails
    max_retries: int = 3  # retries of a transient LLM error (each announced by a Notice)
    retry_backoff: float = 1.0  # seconds before the first retry; doubles each time
    max_retry_wait: float = 60.0  # cap on one wait, also on a provider's Retry-After
    max_tool_rounds: int = 50  # LLM replies with tool calls per turn → max_turn_requests
    tool_cancel_grace: float = 2.0  # seconds a cancelled tool gets to clean up
    max_output_tokens: int = 8192  # sent only where the API requires it (Anthropic)
    # How deep children may hand work on (agent/subagents.py): 1, children cannot delegate.
    subagent_depth: int = 1
    subagent_parallel: int = 4  # children of one model step that run at once

    _ENV = {
        "request_timeout": "AGENTAO_LLM_TIMEOUT",
        "max_retries": "AGENTAO_LLM_MAX_RETRIES",
        "retry_backoff": "AGENTAO_LLM_RETRY_BACKOFF",
        "max_tool_rounds": "AGENTAO_MAX_TOOL_ROUNDS",
        "subagent_depth": "AGENTAO_SUBAGENT_DEPTH",
        "subagent_parallel": "AGENTAO_SUBAGENT_PARALLEL",
    }

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Limits:
        """Defaults, overridden by AGENTAO_LLM_TIMEOUT, AGENTAO_LLM_MAX_RETRIES,
        AGENTAO_LLM_RETRY_BACKOFF, AGENTAO_MAX_TOOL_ROUNDS, AGENTAO_SUBAGENT_DEPTH and
        AGENTAO_SUBAGENT_PARALLEL where set."""
        values = {}
        for name, var in cls._ENV.items():
            if raw := env.get(var, "").strip():
                kind = type(getattr(cls(), name))
                try:
                    values[name] = kind(raw)
                except ValueError:
                    raise ValueError(f"{var}={raw!r} is not a valid {kind.__name__}") from None
        return cls(**values)


@dataclass(frozen=True, slots=True)
class LlmConfig:
    """One resolved provider. `provider_id` is the upper-case prefix ("OPENAI")."""

    provider_id: str
    model: str
    api_key: str = field(default="", repr=False)
    base_url: str | None = None
    script: str | None = None  # SCRIPTED only: the script file
    limits: Limits = field(default_factory=Limits)
    kind: str = ""  # the API: "anthropic", "openai"; empty: by provider_id

    @property
    def api(self) -> str:
        """ "anthropic", "scripted" or "openai" (any OpenAI-compatible endpoint)."""
        if self.kind:
            return self.kind
        return {"ANTHROPIC": "anthropic", "SCRIPTED": "scripted"}.get(self.provider_id, "openai")

    @property
    def model_value(self) -> str:
        """The ConfigOption value: "openai/gpt-4o" (provider lower-cased)."""
        return f"{self.provider_id.lower()}/{self.model}"

    def with_model(self, model: str) -> LlmConfig:
        return replace(self, model=model)


_VARS = ("API_KEY", "BASE_URL", "MODEL")  # {PREFIX}_...
_KNOWN = KNOWN_PROVIDERS
_Defaults = KnownProvider


def resolve_provider(
    provider_id: str | None = None, env: Mapping[str, str] = os.environ
) -> LlmConfig:
    """The configured provider (`LLM_PROVIDER`), or ProviderNotFound when `provider_id` names
    another one (case-insensitive); MissingCredentials names the variables to set."""
    configured = (env.get("LLM_PROVIDER") or DEFAULT_PROVIDER).strip().upper()
    if provider_id is not None and provider_id.strip().upper() != configured:
        raise ProviderNotFound(provider_id)
    limits = Limits.from_env(env)
    if configured == "SCRIPTED":
        return _scripted(env, limits)
    known = _KNOWN.get(configured, _Defaults(None, None))
    names = {v: f"{configured}_{v}" for v in _VARS}
    values = {v: env.get(names[v], "").strip() for v in _VARS}
    key = values["API_KEY"]
    base_url = values["BASE_URL"] or known.base_url
    model = values["MODEL"] or known.model
    required = ("API_KEY",) if configured in _KNOWN else _VARS
    found = {"API_KEY": key, "BASE_URL": base_url, "MODEL": model}
    if missing := [names[v] for v in required if not found[v]]:
        raise MissingCredentials(missing, [names[v] for v in _VARS if v not in required])
    assert model is not None  # required, or known
    return LlmConfig(configured, model, key, base_url, limits=limits)


def _scripted(env: Mapping[str, str], limits: Limits) -> LlmConfig:
    script = env.get("AGENTAO_SCRIPT", "").strip()
    if not script:
        raise MissingCredentials(["AGENTAO_SCRIPT"])
    return LlmConfig("SCRIPTED", Path(script).stem, script=script, limits=limits)


def resolve_model(
    provider_id: str,
    model: str | None,
    catalog: Catalog | None = None,
    env: Mapping[str, str] = os.environ,
) -> LlmConfig:
    """`provider_id` (any case) with `model` (None: its default): a provider the catalog
    lists, its key from `api_key_env` or {ID}_API_KEY and its endpoint from
    {ID}_BASE_URL or the catalog; else the configured provider (`resolve_provider`)."""
    entry = catalog.provider(provider_id) if catalog is not None else None
    if entry is None:
        config = resolve_provider(provider_id, env)
        return config.with_model(model) if model else config
    pid = entry.id.upper()
    known = _KNOWN.get(pid, _Defaults(None, None))
    key_var = entry.api_key_env or f"{pid}_API_KEY"
    key = env.get(key_var, "").strip()
    base_url = env.get(f"{pid}_BASE_URL", "").strip() or entry.base_url or known.base_url
    listed = entry.models[0].id if entry.models else None
    model = model or env.get(f"{pid}_MODEL", "").strip() or listed or known.model
    missing = [key_var] if not key else []
    if base_url is None and entry.kind == "openai":
        missing.append(f"{pid}_BASE_URL")
    if missing or not model:
        raise MissingCredentials(missing or [f"{pid}_MODEL"])
    return LlmConfig(pid, model, key, base_url, limits=Limits.from_env(env), kind=entry.kind)


def split_model_value(value: str, current_provider: str) -> tuple[str, str]:
    """("provider", "model") from "provider/model" (split on the first "/", provider
    lower-cased, model kept as is) or from a bare model (the current provider)."""
    provider, sep, model = value.strip().partition("/")
    if not sep:
        return current_provider.lower(), provider
    return provider.lower(), model
