"""A session's model: the catalog it picks from, the window it works in, and switching.

The catalog (agent/catalog.py) is the user's `models.toml` when there is one, else what
the configured provider's `/v1/models` lists (asked once per agent process, for at most
`ServerSettings.models_timeout` seconds), else the configured model alone; the current
model is always among its options. The window budget follows the model: its catalog or
provider entry, a window learned from an earlier refusal, `AGENTAO_CONTEXT_TOKENS`.
Switching (`session/set_config_option`, `_agentao.cn/set_model`, `/model`) resolves the
new provider's credentials here, on the agent's side, never from the wire.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import urllib.request
from typing import TYPE_CHECKING, Any

from agentao.agent.catalog import (
    Catalog,
    CatalogError,
    ModelInfo,
    ProviderEntry,
    load_catalog,
    parse_model_list,
    takes_images,
)
from agentao.agent.config import LlmConfig, resolve_model
from agentao.agent.context import (
    WINDOW_FILE,
    ContextBudget,
    ContextMeter,
    ContextSettings,
    Window,
    WindowMemory,
    resolve_window,
)
from agentao.agent.providers.errors import MissingCredentials, ProviderNotFound
from agentao.agent.settings import agentao_home
from agentao.protocol.errors import InternalError, InvalidRequest

if TYPE_CHECKING:
    from agentao.server.live import LiveSession

log = logging.getLogger("agentao.server")

MAX_LISTED = 200  # models taken from a provider's /v1/models


class ModelDirectory:
    """What each provider's `/v1/models` lists, asked once per process and endpoint."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._listed: dict[tuple[str, str], tuple[ModelInfo, ...]] = {}

    async def listing(self, llm: LlmConfig) -> tuple[ModelInfo, ...]:
        if llm.api != "openai" or not llm.base_url or self.timeout <= 0:
            return ()
        key = (llm.provider_id, llm.base_url)
        if key not in self._listed:
            self._listed[key] = await self._fetch(llm)
        return self._listed[key]

    async def _fetch(self, llm: LlmConfig) -> tuple[ModelInfo, ...]:
        url = f"{(llm.base_url or '').rstrip('/')}/models"
        headers = {"Authorization": f"Bearer {llm.api_key}", "Accept": "application/json"}
        try:
            body = await asyncio.wait_for(
                asyncio.to_thread(_get, url, headers, self.timeout), self.timeout + 0.5
            )
            models = parse_model_list(llm.provider_id, json.loads(body))[:MAX_LISTED]
        except Exception as exc:  # a slow or odd endpoint: the configured model alone
            log.info("%s/models not listed: %s", llm.provider_id.lower(), type(exc).__name__)
            return ()
        log.info("%s/models: %d models listed", llm.provider_id.lower(), len(models))
        return models


def _get(url: str, headers: dict[str, str], timeout: float) -> bytes:
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.read(4 * 1024 * 1024)


async def session_catalog(llm: LlmConfig, directory: ModelDirectory) -> Catalog:
    """The catalog a session offers, the current model among it."""
    try:
        catalog = load_catalog()
    except CatalogError as exc:
        raise InternalError(
            f"Internal error: the model catalog is invalid: {exc}", {"reason": "model_catalog"}
        ) from None
    if catalog is None:
        listed = await directory.listing(llm)
        pid = llm.provider_id.lower()
        catalog = Catalog((ProviderEntry(pid, models=listed),), "provider") if listed else Catalog()
    return catalog.with_model(current_model(llm, catalog))


def current_model(llm: LlmConfig, catalog: Catalog) -> ModelInfo:
    found = catalog.find(llm.model_value)
    if found is not None:
        return found
    return ModelInfo(llm.provider_id.lower(), llm.model)


# The window each model's line last logged: the line is written when a model's window is
# first known or changes, not again for every session that opens on it (it names no
# session, so a repeat says nothing new, and writing it cost more than the rest of
# budget_for). One entry per model this process has run.
_logged_windows: dict[str, Window] = {}


def budget_for(llm: LlmConfig, catalog: Catalog, settings: ContextSettings) -> ContextBudget:
    """The window (and prices) of `llm`'s model, from every source that knows it."""
    info = current_model(llm, catalog)
    memory = WindowMemory(agentao_home() / WINDOW_FILE)
    listed = info.context_window
    from_file = catalog.source not in ("provider", "configured")
    window = resolve_window(
        settings,
        catalog=listed if from_file else None,
        provider=None if from_file else listed,
        learned=memory.get(llm.model_value),
    )
    if _logged_windows.get(llm.model_value) != window:
        _logged_windows[llm.model_value] = window
        log.info("%s: context window %d tokens (%s)", llm.model_value, window.tokens, window.source)
    return ContextBudget(
        window, ContextMeter(settings.bytes_per_token), info, memory, llm.model_value
    )


def supports_images(live: LiveSession) -> bool:
    return takes_images(live.catalog.find(live.llm.model_value), live.llm.model)


async def switch_model(
    live: LiveSession, provider: str, model: str, settings: ContextSettings
) -> None:
    """Make `provider/model` the session's model (credentials from the environment)."""
    if provider == live.llm.provider_id.lower():
        llm = live.llm.with_model(model)  # same provider: the model rides on requests
    else:
        try:
            llm = resolve_model(provider, model, live.catalog, os.environ)
        except (ProviderNotFound, MissingCredentials) as exc:
            # Only the id and the exception type: a message could embed a key.
            log.warning("cannot resolve provider %r: %s", provider, type(exc).__name__)
            raise InvalidRequest(f"cannot resolve provider '{provider}'") from None
        await _close_provider(live.provider)
        live.provider = live.make_provider(llm)
    live.llm = llm
    live.catalog = live.catalog.with_model(current_model(llm, live.catalog))
    live.context = budget_for(llm, live.catalog, settings)
    live.agent.provider_id, live.agent.model = llm.provider_id, llm.model
    await live.save_state()


async def _close_provider(provider: Any) -> None:
    aclose = getattr(provider, "aclose", None)
    if aclose is not None:
        await aclose()


__all__ = [
    "ModelDirectory",
    "budget_for",
    "current_model",
    "session_catalog",
    "supports_images",
    "switch_model",
]
