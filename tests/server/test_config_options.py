"""Seed C.8-C.10 helpers (server/config_options.py)."""

from __future__ import annotations

import msgspec
import pytest

from agentao.agent.catalog import Catalog, ModelInfo, ProviderEntry
from agentao.agent.config import LlmConfig
from agentao.protocol.errors import InvalidParams, InvalidRequest
from agentao.server import config_options as opts


def test_model_option_shape():
    [option] = opts.model_options(
        LlmConfig("OPENAI", "gpt-4o"), Catalog().with_model(ModelInfo("openai", "gpt-4o"))
    )
    wire = msgspec.to_builtins(option)
    assert {k: wire[k] for k in ("id", "name", "category", "type", "currentValue")} == {
        "id": "model",
        "name": "Model",
        "category": "model",
        "type": "select",
        "currentValue": "openai/gpt-4o",
    }
    assert [o["value"] for o in wire["options"]] == ["openai/gpt-4o"]
    assert wire["options"][0]["name"] == "gpt-4o"
    assert wire["options"][0]["description"] == "images"  # its family takes images


def test_catalog_models_are_alternatives_with_their_window_and_prices():
    catalog = Catalog(
        (
            ProviderEntry(
                "openai", models=(ModelInfo("openai", "gpt-4o", "GPT-4o", 128_000, 2.5, 10.0),)
            ),
            ProviderEntry(
                "local", models=(ModelInfo("local", "qwen", context_window=32_768, images=False),)
            ),
        ),
        "models.toml",
    )
    [option] = opts.model_options(LlmConfig("LOCAL", "qwen"), catalog)
    wire = msgspec.to_builtins(option)
    assert wire["currentValue"] == "local/qwen"
    assert [(o["value"], o["name"], o.get("description")) for o in wire["options"]] == [
        ("openai/gpt-4o", "GPT-4o", "128k context, 2.5/10 USD per million tokens in/out, images"),
        ("local/qwen", "qwen", "32k context"),
    ]


def test_modes_list_the_presets_and_a_custom_current_mode():
    state = opts.mode_state("workspace-write")
    assert [m.id for m in state.available_modes] == list(
        ("read-only", "workspace-write", "full-access", "plan")
    )
    custom = opts.mode_state("code")
    assert custom.current_mode_id == "code" and custom.available_modes[-1].id == "code"


def test_only_fields():
    assert opts.only_fields({"sessionId": "s", "model": "m"}, opts.SET_MODEL_FIELDS)
    with pytest.raises(InvalidParams) as caught:
        opts.only_fields({"sessionId": "s", "model": "m", "apiKey": "k"}, opts.SET_MODEL_FIELDS)
    assert caught.value.data == {"field": "apiKey"}


def test_config_value_rules():
    assert opts.config_value({"configId": "model", "value": " a/b "}) == "a/b"
    with pytest.raises(InvalidRequest):
        opts.config_value({"configId": "mode", "value": "x"})
    for bad in (True, "", "openai/", 3):
        with pytest.raises(InvalidParams):
            opts.config_value({"configId": "model", "value": bad})
