"""context.py: the window's sources, the estimate, the meter, refusals for length."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentao.agent.context import (
    IMAGE_TOKENS,
    ContextBudget,
    ContextMeter,
    ContextSettings,
    Window,
    WindowMemory,
    estimate_text,
    estimate_tools,
    is_context_overflow,
    learned_window,
    resolve_window,
)
from agentao.agent.events import Usage
from agentao.agent.providers.base import LlmRequest
from agentao.agent.providers.errors import status_error
from agentao.agent.providers.messages import (
    AssistantMessage,
    ImagePart,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
)

OPENAI = (
    "Error code: 400 - This model's maximum context length is 12000 tokens. However, your "
    "messages resulted in 13021 tokens. Please reduce the length of the messages."
)
ANTHROPIC = (
    "Error code: 400 - {'type': 'error', 'error': {'type': 'invalid_request_error', "
    "'message': 'prompt is too long: 208746 tokens > 200000 maximum'}}"
)


@pytest.mark.parametrize(
    ("message", "window"),
    [(OPENAI, 12000), (ANTHROPIC, 200000), ("input is too long (context_length_exceeded)", None)],
)
def test_a_refusal_for_length_is_recognized_and_teaches_the_window(message, window) -> None:
    error = status_error(400, message)
    assert error.reason == "context_length" and is_context_overflow(error)
    assert learned_window(message) == window


def test_other_errors_are_not_overflows() -> None:
    assert not is_context_overflow(status_error(400, "bad request: context too long"))
    assert not is_context_overflow(status_error(429, "maximum context length is 10 tokens"))


def test_window_sources_in_order() -> None:
    plain = ContextSettings()
    assert resolve_window(plain) == Window(128_000, "default")
    assert resolve_window(plain, provider=32_000) == Window(32_000, "provider")
    assert resolve_window(plain, catalog=64_000, provider=32_000) == Window(64_000, "catalog")
    assert resolve_window(plain, catalog=64_000, learned=12_000) == Window(12_000, "learned")
    assert resolve_window(plain, catalog=8_000, learned=12_000) == Window(8_000, "catalog")
    told = ContextSettings(window_tokens=5_000)
    assert resolve_window(told, catalog=64_000, learned=1) == Window(
        5_000, "AGENTAO_CONTEXT_TOKENS"
    )


def test_settings_from_env() -> None:
    env = {"AGENTAO_CONTEXT_TOKENS": "12_000", "AGENTAO_DEFAULT_CONTEXT_TOKENS": "32000"}
    assert ContextSettings.from_env(env) == ContextSettings(12_000, 32_000)
    with pytest.raises(ValueError, match="AGENTAO_CONTEXT_TOKENS"):
        ContextSettings.from_env({"AGENTAO_CONTEXT_TOKENS": "-3"})


def test_learned_windows_are_remembered(tmp_path: Path) -> None:
    memory = WindowMemory(tmp_path / "state" / "windows.json")
    budget = ContextBudget(Window(128_000, "default"), memory=memory, model_value="openai/m")
    budget.learn(status_error(400, OPENAI), refused_tokens=13_500)
    assert budget.window == Window(12_000, "learned")
    assert WindowMemory(memory.path).get("openai/m") == 12_000
    # A refusal that names no number: a tenth under what was refused.
    budget.learn(status_error(400, "prompt is too long"), refused_tokens=10_000)
    assert budget.window.tokens == 9_000


def test_the_estimate_is_conservative() -> None:
    prose = "The quick brown fox jumps over the lazy dog. " * 100
    assert estimate_text(prose) >= len(prose) / 4  # real tokenizers: ~4.5 bytes a token
    assert estimate_text("漢字" * 300) == 600  # 3 bytes a character, ~1 token each
    image = UserMessage("look", (ImagePart("image/png", "AAAA"),))
    meter = ContextMeter()
    assert meter.measure(LlmRequest("m", (image,))).tokens >= IMAGE_TOKENS


def test_the_meter_counts_what_the_provider_counted_plus_an_estimate_of_the_rest() -> None:
    meter = ContextMeter()
    system, user = SystemMessage("sys"), UserMessage("hi")
    first = LlmRequest("m", (system, user))
    assert meter.measure(first).estimated
    assert meter.observe(first, Usage(1000, 50, 1050)).tokens == 1050
    reply = AssistantMessage("", ())
    result = ToolResultMessage("c1", "read_file", "x" * 3000)
    second = LlmRequest("m", (system, user, reply, result))
    measure = meter.measure(second)
    assert measure.estimated and measure.tokens == 1050 + 1000 + 4  # reply counted already
    other = LlmRequest("m", (SystemMessage("another"), user))
    assert meter.measure(other).tokens < 100  # not a continuation: estimated whole
    meter.forget()
    assert meter.last is None and meter.measure(second).estimated


def test_no_reported_usage_is_an_estimate() -> None:
    meter = ContextMeter()
    request = LlmRequest("m", (UserMessage("x" * 300),))
    measure = meter.observe(request, None)
    assert measure.estimated and measure.tokens >= 100


def test_a_tool_list_is_encoded_once_and_again_when_it_changes(monkeypatch) -> None:
    """Each request's tool list is measured (twice a turn, every session the same
    built-ins): an equal list reuses the size; one changed, even in place, is encoded."""
    import copy
    import json

    from agentao.agent import context

    def size(tools: object) -> int:
        return estimate_text(json.JSONEncoder(ensure_ascii=False).encode(tools), 2.0)

    encoded: list[object] = []
    real = json.dumps
    monkeypatch.setattr(
        context.json, "dumps", lambda obj, **kw: encoded.append(obj) or real(obj, **kw)
    )
    spec = {
        "type": "function",
        "function": {"name": "t", "description": "é" * 30, "parameters": {}},
    }
    tools = (spec, {**spec, "function": {**spec["function"], "name": f"u{id(encoded)}"}})
    assert estimate_tools(tools, 2.0) == size(list(tools)) and len(encoded) == 1
    same = copy.deepcopy(list(tools))  # another session's equal list
    assert estimate_tools(same, 2.0) == size(same) and estimate_tools(same) and len(encoded) == 1
    same[0]["function"]["description"] = "longer " * 50  # changed in place after measuring
    assert estimate_tools(same, 2.0) == size(same) > size(list(tools)) and len(encoded) == 2
