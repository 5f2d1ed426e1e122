"""Provider resolution from the environment (seed C.8) and the model catalog."""

from __future__ import annotations

import pytest

from agentao.agent.config import (
    Limits,
    LlmConfig,
    resolve_provider,
    split_model_value,
)
from agentao.agent.providers import MissingCredentials, ProviderNotFound, make_provider
from agentao.agent.providers.openai_http import HttpOpenAIProvider
from agentao.agent.providers.openai_provider import OpenAIProvider


def test_default_provider_is_openai_with_known_defaults() -> None:
    config = resolve_provider(None, {"OPENAI_API_KEY": "sk-1"})
    assert config == LlmConfig("OPENAI", "gpt-4o", "sk-1", "https://api.openai.com/v1")
    assert "sk-1" not in repr(config)
    assert isinstance(make_provider(config), HttpOpenAIProvider)
    assert isinstance(make_provider(config, openai_client="sdk"), OpenAIProvider)


def test_prefix_variables_and_case_insensitive_id() -> None:
    env = {
        "LLM_PROVIDER": "deepseek",
        "DEEPSEEK_API_KEY": "k",
        "DEEPSEEK_MODEL": "deepseek-reasoner",
    }
    config = resolve_provider("DeepSeek", env)
    assert (config.provider_id, config.model, config.base_url) == (
        "DEEPSEEK", "deepseek-reasoner", "https://api.deepseek.com",
    )  # fmt: skip
    assert config.model_value == "deepseek/deepseek-reasoner"


def test_anthropic_prefix_speaks_the_messages_api() -> None:
    from agentao.agent.providers.anthropic_provider import AnthropicProvider

    config = resolve_provider(None, {"LLM_PROVIDER": "Anthropic", "ANTHROPIC_API_KEY": "k"})
    assert (config.model, config.base_url) == ("claude-sonnet-4-5", None)
    assert isinstance(make_provider(config), AnthropicProvider)


def test_only_the_configured_provider_resolves() -> None:
    with pytest.raises(ProviderNotFound) as info:
        resolve_provider("anthropic", {"OPENAI_API_KEY": "k"})
    assert info.value.provider_id == "anthropic"
    assert str(info.value) == "cannot resolve provider 'anthropic'"


def test_missing_key_names_the_variables() -> None:
    with pytest.raises(MissingCredentials) as info:
        resolve_provider(None, {})
    assert info.value.variables == ["OPENAI_API_KEY"]
    assert str(info.value) == "set OPENAI_API_KEY (and optionally OPENAI_BASE_URL, OPENAI_MODEL)"
    assert info.value.reason == "missing_credentials" and not info.value.transient


def test_unknown_prefix_needs_endpoint_and_model() -> None:
    with pytest.raises(MissingCredentials) as info:
        resolve_provider(None, {"LLM_PROVIDER": "OLLAMA", "OLLAMA_API_KEY": "x"})
    assert info.value.variables == ["OLLAMA_BASE_URL", "OLLAMA_MODEL"]


def test_scripted_needs_a_script_not_a_key() -> None:
    with pytest.raises(MissingCredentials) as info:
        resolve_provider(None, {"LLM_PROVIDER": "scripted"})
    assert info.value.variables == ["AGENTAO_SCRIPT"]
    config = resolve_provider(None, {"LLM_PROVIDER": "scripted", "AGENTAO_SCRIPT": "/x/demo.json"})
    assert (config.model, config.script, config.api_key) == ("demo", "/x/demo.json", "")


def test_limits_from_env() -> None:
    env = {"OPENAI_API_KEY": "k", "AGENTAO_LLM_MAX_RETRIES": "0", "AGENTAO_LLM_RETRY_BACKOFF": ".5"}
    assert resolve_provider(None, env).limits == Limits(max_retries=0, retry_backoff=0.5)
    with pytest.raises(ValueError, match="AGENTAO_MAX_TOOL_ROUNDS"):
        Limits.from_env({"AGENTAO_MAX_TOOL_ROUNDS": "many"})


def test_model_values() -> None:
    config = LlmConfig("OPENAI", "gpt-4o", "k")
    assert config.model_value == "openai/gpt-4o"
    assert config.with_model("o3").model_value == "openai/o3"
    assert split_model_value("OpenRouter/meta/llama", "OPENAI") == ("openrouter", "meta/llama")
    assert split_model_value("gpt-4.1", "OPENAI") == ("openai", "gpt-4.1")
