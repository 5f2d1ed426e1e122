"""What one call of a caller's tool costs the gateway's MCP endpoint (gateway/tool_bridge.py,
"Per call, cheaply"): the SDK checks the call's `Mcp-Param-*` headers against the tool's
schema from our lookup, never by running the `tools/list` handler once more per call, and
its OpenTelemetry middleware runs for no message. Counted, not timed (the handler ran
once per call: `bench/tools.py`'s 100 round trips at once paid it 100 times).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp.server._otel import OpenTelemetryMiddleware

from agentao.gateway.tool_bridge import ToolBridges
from tests.fakes.fake_llm import FakeLLM
from tests.gateway.conftest import llm_spec
from tests.gateway.test_caller_tools import WEATHER, answer, ask, echo, model_call, user


def test_a_call_runs_no_tool_listing_and_no_otel_span(
    gateway_factory: Any,
    fake_llm: FakeLLM,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, list[Any]] = {"listings": [], "schemas": [], "spans": []}
    list_tools, input_schema = ToolBridges._list_tools, ToolBridges._input_schema
    span = OpenTelemetryMiddleware.__call__

    async def counted_list(self: ToolBridges, ctx: Any, params: Any) -> Any:
        seen["listings"].append(params)
        return await list_tools(self, ctx, params)

    def counted_schema(self: ToolBridges, name: str) -> Any:
        seen["schemas"].append(schema := input_schema(self, name))
        return schema

    async def counted_span(self: Any, ctx: Any, call_next: Any) -> Any:
        seen["spans"].append(ctx)
        return await span(self, ctx, call_next)

    monkeypatch.setattr(ToolBridges, "_list_tools", counted_list)  # before the bridge is made
    monkeypatch.setattr(ToolBridges, "_input_schema", counted_schema)
    monkeypatch.setattr(OpenTelemetryMiddleware, "__call__", counted_span)
    gw = gateway_factory(agents=(llm_spec(tmp_path, fake_llm.env()),))
    calls = [model_call("get_weather", city=city) for city in ("Paris", "Oslo", "Rome")]
    for call in calls:
        fake_llm.reply(tool_calls=[call])
    fake_llm.reply("Done.")
    client = gw.openai()
    messages: list[Any] = [user("weather in three cities?")]
    for reply in ("sunny", "cold", "warm"):
        message, finish, _ = ask(client, messages, stream=False, tools=[WEATHER])
        assert finish == "tool_calls"
        messages += [echo(message), answer(message.tool_calls[0], reply)]
    message, finish, _ = ask(client, messages, stream=False, tools=[WEATHER])
    assert (message.content, finish) == ("Done.", "stop")
    # The agent listed the tools when its session opened; each call asked our lookup,
    # which found the bridge's own schema (so the headers are still checked).
    assert len(seen["listings"]) == 1
    assert seen["schemas"] == [WEATHER["function"]["parameters"]] * 3
    assert seen["spans"] == []
