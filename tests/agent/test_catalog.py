"""catalog.py: the models.toml file, the config directory, provider model lists, images;
config.resolve_model: switching to a catalog provider with its key from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentao.agent.catalog import (
    CatalogError,
    ModelInfo,
    config_dir,
    configured_model,
    load_catalog,
    parse_model_list,
    takes_images,
)
from agentao.agent.config import resolve_model
from agentao.agent.providers import MissingCredentials, ProviderNotFound

CATALOG = """
[providers.openai]
[[providers.openai.models]]
id = "gpt-4o"
name = "GPT-4o"
context_window = 128000
input_price = 2.5
output_price = 10
images = true

[providers.claude]
kind = "anthropic"
api_key_env = "MY_CLAUDE_KEY"
[[providers.claude.models]]
id = "claude-sonnet-4-5"
context_window = 200000

[providers.local]
base_url = "http://127.0.0.1:8000/v1"
[[providers.local.models]]
id = "qwen-coder"
context_window = 32768
images = false
"""


def write(tmp_path: Path, text: str) -> dict[str, str]:
    (tmp_path / "agentao").mkdir(exist_ok=True)
    (tmp_path / "agentao" / "models.toml").write_text(text)
    return {"XDG_CONFIG_HOME": str(tmp_path)}


def test_config_dir_follows_xdg_and_can_be_overridden(tmp_path: Path) -> None:
    home = str(Path("~").expanduser())
    assert config_dir({}) == f"{home}/.config/agentao"
    assert config_dir({"XDG_CONFIG_HOME": "/x"}) == "/x/agentao"
    assert config_dir({"XDG_CONFIG_HOME": "/x", "AGENTAO_CONFIG_DIR": "/y"}) == "/y"


def test_the_catalog_file(tmp_path: Path) -> None:
    catalog = load_catalog(write(tmp_path, CATALOG))
    assert catalog is not None and catalog.source.endswith("models.toml")
    gpt = catalog.find("openai/gpt-4o")
    assert gpt == ModelInfo("openai", "gpt-4o", "GPT-4o", 128000, 2.5, 10.0, "USD", True)
    assert gpt.cost(1_000_000, 100_000) == pytest.approx(3.5)
    assert [m.value for m in catalog.models] == [
        "openai/gpt-4o", "claude/claude-sonnet-4-5", "local/qwen-coder",
    ]  # fmt: skip
    assert catalog.provider("CLAUDE").kind == "anthropic"
    assert load_catalog({"XDG_CONFIG_HOME": str(tmp_path / "none")}) is None


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ('[providers.x]\napi_key = "sk-1"', "keys never go in the catalog"),
        ('[providers.x]\nkind = "gemini"', "kind"),
        ("[providers.x]\n[[providers.x.models]]\nname = 'no id'", "needs an id"),
        (
            "[providers.x]\n[[providers.x.models]]\nid = 'm'\ncontext_window = 'big'",
            "context_window",
        ),
        ("not toml = = =", "models.toml"),
    ],
)
def test_a_bad_catalog_says_what_is_wrong(tmp_path: Path, text: str, complaint: str) -> None:
    with pytest.raises(CatalogError, match=complaint):
        load_catalog(write(tmp_path, text))


def test_switching_to_a_catalog_provider_resolves_its_key_from_the_environment(
    tmp_path: Path,
) -> None:
    catalog = load_catalog(write(tmp_path, CATALOG))
    env = {"OPENAI_API_KEY": "k1", "MY_CLAUDE_KEY": "k2", "LOCAL_API_KEY": "k3"}
    claude = resolve_model("claude", None, catalog, env)
    assert (claude.provider_id, claude.model, claude.api_key, claude.api) == (
        "CLAUDE", "claude-sonnet-4-5", "k2", "anthropic",
    )  # fmt: skip
    local = resolve_model("local", "qwen-coder", catalog, env)
    assert (local.base_url, local.api) == ("http://127.0.0.1:8000/v1", "openai")
    overridden = resolve_model("local", None, catalog, {**env, "LOCAL_BASE_URL": "http://h/v1"})
    assert overridden.base_url == "http://h/v1"  # the environment wins over the file
    with pytest.raises(MissingCredentials, match="MY_CLAUDE_KEY"):
        resolve_model("claude", None, catalog, {})
    with pytest.raises(ProviderNotFound):
        resolve_model("elsewhere", "m", catalog, env)


def test_a_providers_model_list_and_its_windows() -> None:
    body = {"data": [
        {"id": "a", "context_length": 8192},
        {"id": "b", "max_model_len": 32768},
        {"id": "c"},
        {"no": "id"},
        {"id": "text-embedding-3-large"},
        {"id": "whisper-1"},
    ]}  # fmt: skip
    models = parse_model_list("OPENAI", body)
    assert [(m.value, m.context_window) for m in models] == [
        ("openai/a", 8192), ("openai/b", 32768), ("openai/c", None),
    ]  # fmt: skip
    assert parse_model_list("x", "garbage") == ()


def test_images_the_catalogs_word_else_the_family() -> None:
    assert takes_images(None, "gpt-4o-mini") and takes_images(None, "claude-sonnet-4-5")
    assert not takes_images(None, "deepseek-chat") and not takes_images(None, "fake-model")
    assert not takes_images(ModelInfo("o", "gpt-4o", images=False), "gpt-4o")
    assert takes_images(ModelInfo("o", "my-vlm", images=True), "my-vlm")


def test_the_configured_model() -> None:
    assert configured_model({}) == ("OPENAI", "gpt-4o")
    assert configured_model({"LLM_PROVIDER": "vllm", "VLLM_MODEL": "q"}) == ("VLLM", "q")
    assert configured_model({"LLM_PROVIDER": "vllm"}) == ("VLLM", None)
