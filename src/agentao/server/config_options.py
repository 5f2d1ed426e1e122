"""Seed C.8/C.9/C.10: the "model" ConfigOption, the mode presets, and how to change them.

The ConfigOption: `{id: "model", name: "Model", category: "model", type: "select",
currentValue: "provider/model", options: [{value, name, description}]}`, one option per
model of the session's catalog (server/models.py), the current one always among them;
a description tells the window, prices and image support where the catalog knows them.

`session/set_config_option` accepts exactly `sessionId`, `configId`, `value`: any other
field (`_meta`, `apiKey`, `type`, ...) is -32602, a `configId` other than "model" is
-32600, and `value` is "provider/model" (split on the first "/", provider lower-cased)
or a bare model. `_agentao.cn/set_model` accepts exactly `sessionId` and `model`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentao.agent.catalog import Catalog, ModelInfo, takes_images
from agentao.agent.ceiling import ModeCeiling
from agentao.agent.config import LlmConfig
from agentao.agent.permissions import MODES
from agentao.protocol import schema
from agentao.protocol.errors import InvalidParams, InvalidRequest

MODEL_CONFIG_ID = "model"
DEFAULT_MODE = "workspace-write"
PRESETS = frozenset(m.id for m in MODES)
SET_CONFIG_FIELDS = frozenset({"sessionId", "configId", "value"})
SET_MODEL_FIELDS = frozenset({"sessionId", "model"})


def model_options(llm: LlmConfig, catalog: Catalog) -> list[Any]:
    """The session's `configOptions` (one: the model selector)."""
    choices = [
        schema.SessionConfigSelectOption(
            value=m.value, name=m.name or m.id, description=_describe(m, llm) or None
        )
        for m in catalog.models
    ]
    return [
        schema.SelectSessionConfigOption(
            id=MODEL_CONFIG_ID,
            name="Model",
            category="model",
            current_value=llm.model_value,
            options=choices,
        )
    ]


def _describe(model: ModelInfo, llm: LlmConfig) -> str:
    if llm.api == "scripted" and model.value == llm.model_value:
        return "scripted responses, no LLM"
    parts = []
    if model.context_window:
        parts.append(f"{model.context_window // 1000}k context")
    if model.input_price is not None or model.output_price is not None:
        parts.append(
            f"{model.input_price or 0:g}/{model.output_price or 0:g} {model.currency} per "
            "million tokens in/out"
        )
    if takes_images(model, model.id):
        parts.append("images")
    return ", ".join(parts)


def mode_state(current: str, ceiling: ModeCeiling | None = None) -> schema.SessionModeState:
    """The presets within the process's ceiling (all four without one); a custom current
    mode id is listed too, so it can be shown."""
    allowed = ceiling or ModeCeiling()
    modes = [
        schema.SessionMode(id=m.id, name=m.name, description=m.description)
        for m in MODES
        if allowed.allows(m.id)
    ]
    if current not in PRESETS:
        modes.append(
            schema.SessionMode(
                id=current, name=current, description="Custom mode (workspace-write permissions)"
            )
        )
    return schema.SessionModeState(current_mode_id=current, available_modes=modes)


def only_fields(raw: Any, allowed: Iterable[str]) -> dict[str, Any]:
    """`raw` params, or -32602 naming the first field outside `allowed`."""
    if not isinstance(raw, dict):
        raise InvalidParams('Invalid params: "params" must be an object')
    allowed = frozenset(allowed)
    extra = sorted(k for k in raw if k not in allowed)
    if extra:
        raise InvalidParams(
            f"Invalid params: unexpected field {extra[0]!r} (credentials resolve server-side "
            "and never travel on the wire)",
            {"field": extra[0]},
        )
    return raw


def config_value(raw: dict[str, Any]) -> str:
    """The requested "provider/model" or bare model of a valid set_config_option."""
    if raw.get("configId") != MODEL_CONFIG_ID:
        raise InvalidRequest(
            f"Invalid Request: unknown configId {raw.get('configId')!r} (only 'model')",
            {"configId": raw.get("configId")},
        )
    value = raw.get("value")
    if not isinstance(value, str) or not value.strip() or value.strip().endswith("/"):
        raise InvalidParams("Invalid params: value must be 'provider/model' or a model id")
    return value.strip()


def model_value(raw: dict[str, Any]) -> str:
    """The model of a valid `_agentao.cn/set_model`, stripped."""
    model = raw.get("model")
    if not isinstance(model, str) or not model.strip():
        raise InvalidParams("Invalid params: model must be a non-empty string", {"field": "model"})
    return model.strip()


def mode_value(mode_id: str) -> str:
    if not mode_id.strip():
        raise InvalidParams("Invalid params: modeId must be non-empty", {"field": "modeId"})
    return mode_id


__all__ = [
    "DEFAULT_MODE",
    "MODEL_CONFIG_ID",
    "PRESETS",
    "SET_CONFIG_FIELDS",
    "SET_MODEL_FIELDS",
    "config_value",
    "mode_state",
    "mode_value",
    "model_options",
    "model_value",
    "only_fields",
]
