"""The model catalog: the providers and models a session may switch between, with each
model's context window, prices and whether it takes images.

The catalog file is `models.toml` in the config directory (`config_dir`):
`$AGENTAO_CONFIG_DIR`, else `$XDG_CONFIG_HOME/agentao`, else `~/.config/agentao`.

    [providers.openai]                   # the id: values read "openai/<model>"
    kind = "openai"                      # "openai": any OpenAI-compatible API (default);
                                         # "anthropic": the Anthropic Messages API
    base_url = "https://api.openai.com/v1"   # optional; {ID}_BASE_URL overrides it
    api_key_env = "OPENAI_API_KEY"       # optional; default {ID}_API_KEY

    [[providers.openai.models]]
    id = "gpt-4o"
    name = "GPT-4o"                      # optional, shown in the picker
    context_window = 128000              # tokens
    input_price = 2.5                    # per million input tokens (optional)
    output_price = 10.0                  # per million output tokens (optional)
    currency = "USD"                     # optional, default "USD"
    images = true                        # takes image prompts (default: false)

Keys never go in the file (an `api_key` entry is refused): each provider's key is
read from the agent's environment when a session switches to it. Without a file,
the catalog is what the configured provider's `/v1/models` lists, when it answers
within `AGENTAO_MODELS_TIMEOUT` seconds, else the single configured model.

This module is imported while `initialize` is answered (for `promptCapabilities`),
before the event loop: it loads nothing heavy unless a catalog file exists.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CATALOG_FILE",
    "KNOWN_PROVIDERS",
    "Catalog",
    "CatalogError",
    "ModelInfo",
    "ProviderEntry",
    "catalog_path",
    "config_dir",
    "configured_model",
    "load_catalog",
    "parse_catalog",
    "parse_model_list",
    "takes_images",
]

CATALOG_FILE = "models.toml"
DEFAULT_PROVIDER = "OPENAI"


@dataclass(frozen=True, slots=True)
class KnownProvider:
    base_url: str | None
    model: str | None


# Prefixes whose endpoint and a sensible model are known; others must name both.
KNOWN_PROVIDERS: Mapping[str, KnownProvider] = {
    "OPENAI": KnownProvider("https://api.openai.com/v1", "gpt-4o"),
    "ANTHROPIC": KnownProvider(None, "claude-sonnet-4-5"),  # None: the SDK's default endpoint
    "DEEPSEEK": KnownProvider("https://api.deepseek.com", "deepseek-chat"),
}

# Model families that take images, for models no catalog describes. A catalog entry
# (`images = ...`) always wins over this guess.
_IMAGE_MODELS = re.compile(
    r"gpt-4o|gpt-4\.1|gpt-5|\bo[134]\b|o[34]-|claude-3|claude-(?:sonnet|opus|haiku)-4|"
    r"gemini|vision|-vl\b|-vl-|llava|pixtral",
    re.IGNORECASE,
)


# Model ids a provider lists that are no chat model (OpenAI's list has dozens).
_NOT_CHAT = re.compile(
    r"embed|whisper|tts|dall-e|moderation|transcribe|davinci|babbage|^sora|^gpt-image",
    re.IGNORECASE,
)


class CatalogError(ValueError):
    """The catalog file is invalid; the message names the file and the entry."""


@dataclass(frozen=True, slots=True)
class ModelInfo:
    provider: str  # lower-case provider id
    id: str
    name: str = ""
    context_window: int | None = None
    input_price: float | None = None  # per million tokens
    output_price: float | None = None
    currency: str = "USD"
    images: bool | None = None  # None: not said (see takes_images)

    @property
    def value(self) -> str:
        """The config option value: "provider/model"."""
        return f"{self.provider}/{self.id}"

    def cost(self, input_tokens: int, output_tokens: int) -> float | None:
        """What a request cost, when the catalog has prices."""
        if self.input_price is None and self.output_price is None:
            return None
        return (
            input_tokens * (self.input_price or 0.0) + output_tokens * (self.output_price or 0.0)
        ) / 1_000_000


@dataclass(frozen=True, slots=True)
class ProviderEntry:
    id: str  # lower-case
    kind: str = "openai"  # "openai" or "anthropic"
    base_url: str | None = None
    api_key_env: str | None = None
    models: tuple[ModelInfo, ...] = ()


@dataclass(frozen=True, slots=True)
class Catalog:
    """Providers and their models; `source` says where they came from."""

    providers: tuple[ProviderEntry, ...] = ()
    source: str = "configured"  # a file path, "provider" (/v1/models) or "configured"
    extra: tuple[ModelInfo, ...] = field(default=())  # models known beyond the providers

    @property
    def models(self) -> tuple[ModelInfo, ...]:
        return (*(m for p in self.providers for m in p.models), *self.extra)

    def provider(self, provider_id: str) -> ProviderEntry | None:
        wanted = provider_id.lower()
        return next((p for p in self.providers if p.id == wanted), None)

    def find(self, value: str) -> ModelInfo | None:
        """The model "provider/model", if the catalog lists it."""
        return next((m for m in self.models if m.value == value), None)

    def with_model(self, info: ModelInfo) -> Catalog:
        """This catalog, listing `info` too (the current model must always be offered)."""
        if self.find(info.value) is not None:
            return self
        return Catalog(self.providers, self.source, (*self.extra, info))


def config_dir(env: Mapping[str, str] = os.environ) -> str:
    """The user's agentao config directory (never the project): $AGENTAO_CONFIG_DIR,
    else $XDG_CONFIG_HOME/agentao, else ~/.config/agentao."""
    if explicit := env.get("AGENTAO_CONFIG_DIR", "").strip():
        return os.path.expanduser(explicit)
    base = env.get("XDG_CONFIG_HOME", "").strip() or os.path.join("~", ".config")
    return os.path.join(os.path.expanduser(base), "agentao")


def catalog_path(env: Mapping[str, str] = os.environ) -> str:
    return os.path.join(config_dir(env), CATALOG_FILE)


def load_catalog(env: Mapping[str, str] = os.environ) -> Catalog | None:
    """The catalog file's contents, or None when there is no file. CatalogError when
    the file is invalid."""
    path = catalog_path(env)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CatalogError(f"{path}: {exc.strerror}") from None
    import tomllib

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CatalogError(f"{path}: {exc}") from None
    return parse_catalog(data, path)


def parse_catalog(data: Mapping[str, Any], source: str) -> Catalog:
    providers = data.get("providers", {})
    if not isinstance(providers, dict):
        raise CatalogError(f"{source}: [providers] must be a table")
    return Catalog(tuple(_provider(k, v, source) for k, v in providers.items()), source)


def _provider(key: str, raw: Any, source: str) -> ProviderEntry:
    where = f"{source}: providers.{key}"
    if not isinstance(raw, dict):
        raise CatalogError(f"{where} must be a table")
    if "api_key" in raw:
        raise CatalogError(
            f"{where}.api_key: keys never go in the catalog; set {key.upper()}_API_KEY "
            "in the agent's environment (or name another variable with api_key_env)"
        )
    kind = raw.get("kind", "openai")
    if kind not in ("openai", "anthropic"):
        raise CatalogError(f'{where}.kind must be "openai" or "anthropic"')
    models = raw.get("models", [])
    if not isinstance(models, list):
        raise CatalogError(f"{where}.models must be an array of tables ([[...models]])")
    pid = key.lower()
    return ProviderEntry(
        pid,
        kind,
        _opt(raw, "base_url", str, where),
        _opt(raw, "api_key_env", str, where),
        tuple(_model(pid, m, f"{where}.models[{i}]") for i, m in enumerate(models)),
    )


def _model(provider: str, raw: Any, where: str) -> ModelInfo:
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not raw["id"]:
        raise CatalogError(f"{where} needs an id (a string)")
    window = _opt(raw, "context_window", int, where)
    if window is not None and window <= 0:
        raise CatalogError(f"{where}.context_window must be positive")
    return ModelInfo(
        provider,
        raw["id"],
        _opt(raw, "name", str, where) or "",
        window,
        _opt(raw, "input_price", float, where),
        _opt(raw, "output_price", float, where),
        _opt(raw, "currency", str, where) or "USD",
        _opt(raw, "images", bool, where),
    )


def _opt(raw: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    value = raw.get(key)
    if value is None:
        return None
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise CatalogError(f"{where}.{key} must be a {kind.__name__}")
    return value


def configured_model(env: Mapping[str, str] = os.environ) -> tuple[str, str | None]:
    """("PROVIDER", model or None): what LLM_PROVIDER and {PREFIX}_MODEL name."""
    provider = (env.get("LLM_PROVIDER") or DEFAULT_PROVIDER).strip().upper()
    known = KNOWN_PROVIDERS.get(provider)
    model = env.get(f"{provider}_MODEL", "").strip() or (known.model if known else None)
    return provider, model


def takes_images(info: ModelInfo | None, model: str) -> bool:
    """Whether `model` takes image prompts: the catalog's word, else its family's."""
    if info is not None and info.images is not None:
        return info.images
    return bool(_IMAGE_MODELS.search(model))


def parse_model_list(provider: str, data: Any) -> tuple[ModelInfo, ...]:
    """Models from an OpenAI-style `/v1/models` body, with the window where the server
    tells it (`context_length`: OpenRouter, LM Studio; `max_model_len`: vLLM). Models
    that cannot chat (embeddings, speech, images, moderation) are left out."""
    items = data.get("data") if isinstance(data, dict) else None
    out: list[ModelInfo] = []
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        if _NOT_CHAT.search(item["id"]):
            continue
        window = next(
            (
                item[k]
                for k in ("context_length", "max_model_len", "context_window")
                if isinstance(item.get(k), int) and not isinstance(item.get(k), bool)
            ),
            None,
        )
        out.append(ModelInfo(provider.lower(), item["id"], context_window=window))
    return tuple(out)
