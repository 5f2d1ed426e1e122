"""The caller's own tools as real tool calls (issue 24, items 1-2; gateway/tool_bridge.py).

The real `openai` package against a real gateway running our agent on the fake LLM: the
model calls `mcp__caller__<name>` (the MCP server the gateway serves the conversation),
and the caller sees `tool_calls` with its own tool's name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fakes.fake_llm import FakeLLM, FakeToolCall
from tests.gateway.conftest import llm_spec

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def test_smoke(gateway_factory: Any, fake_llm: FakeLLM, tmp_path: Path) -> None:
    gw = gateway_factory(agents=(llm_spec(tmp_path, fake_llm.env()),))
    client = gw.openai()
    fake_llm.reply(tool_calls=[FakeToolCall("mcp__caller__get_weather", {"city": "Paris"})])
    fake_llm.reply("It is sunny in Paris.")
    messages: list[Any] = [user("weather in Paris?")]
    first = client.chat.completions.create(model="agentao", messages=messages, tools=[WEATHER])
    print(first)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    messages += [choice.message.model_dump(exclude_none=True)]
    messages += [{"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 C"}]
    second = client.chat.completions.create(model="agentao", messages=messages, tools=[WEATHER])
    print(second)
    assert second.choices[0].message.content == "It is sunny in Paris."
    tool_msgs = [m for m in fake_llm.requests[1].body["messages"] if m["role"] == "tool"]
    assert "sunny, 21 C" in tool_msgs[-1]["content"]
