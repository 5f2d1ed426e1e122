"""The caller's own tools on the Responses API (issue 24, items 1-2; tool_bridge.py):
`function_call` items, and `function_call_output` with `previous_response_id`, with the
real `openai` package against a real gateway running our agent on the fake LLM."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.fakes.fake_llm import FakeLLM
from tests.gateway.conftest import LiveGateway
from tests.gateway.test_caller_tools import WEATHER, gw, model_call, tool_messages

__all__ = ["gw"]  # the fixture, shared

RESPONSES_WEATHER = {"type": "function", **WEATHER["function"]}


def respond(client: openai.OpenAI, *, stream: bool, **kw: Any) -> Any:
    """One Responses request, streamed (the SDK's stream helper, which checks the events
    as it assembles them) or not, as the final Response."""
    if not stream:
        return client.responses.create(model="agentao", **kw)
    with client.responses.stream(model="agentao", **kw) as events:
        kinds = [event.type for event in events]
        final = events.get_final_response()
    if any(item.type == "function_call" for item in final.output):
        for kind in (
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
        ):
            assert kind in kinds
    return final


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_responses_a_weather_tool_round_trip(
    gw: LiveGateway, fake_llm: FakeLLM, stream: bool
) -> None:
    """A `function_call` item with the caller's name, arguments and a call id; its
    `function_call_output` (with `previous_response_id`) resumes the same turn."""
    fake_llm.reply(tool_calls=[model_call("get_weather", city="Paris")])
    fake_llm.reply("It is sunny in Paris.")
    client = gw.openai()
    first = respond(client, stream=stream, input="weather in Paris?", tools=[RESPONSES_WEATHER])
    assert first.status == "completed"
    (call,) = [item for item in first.output if item.type == "function_call"]
    assert call.name == "get_weather" and call.call_id.startswith("call_")
    assert json.loads(call.arguments) == {"city": "Paris"}
    output = {"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 21 C"}
    second = respond(
        client,
        stream=stream,
        input=[output],
        previous_response_id=first.id,
        tools=[RESPONSES_WEATHER],
    )
    assert (second.status, second.output_text.strip()) == ("completed", "It is sunny in Paris.")
    assert tool_messages(fake_llm.requests[1]) == ["sunny, 21 C"]
    assert client.responses.retrieve(first.id).output[-1].type == "function_call"


def test_responses_bad_input_is_a_400_before_the_agent_sees_anything(
    gw: LiveGateway, fake_llm: FakeLLM
) -> None:
    client = gw.openai()
    bad = {"type": "function", "name": "f", "parameters": {"type": "array"}}
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(model="agentao", input="hi", tools=[bad])
    assert info.value.body["code"] == "invalid_tool_schema"
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(
            model="agentao", input="hi", tools=[RESPONSES_WEATHER, RESPONSES_WEATHER]
        )
    assert info.value.body["code"] == "duplicate_tool_name"
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(model="agentao", input="hi", tools=[bad], tool_choice="required")
    assert info.value.body["param"] == "tool_choice"
    assert fake_llm.requests == []
    fake_llm.reply(tool_calls=[model_call("get_weather", city="Rome")])
    first = client.responses.create(model="agentao", input="weather?", tools=[RESPONSES_WEATHER])
    unknown = {"type": "function_call_output", "call_id": "call_nope", "output": "x"}
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(model="agentao", input=[unknown], previous_response_id=first.id)
    assert info.value.body["code"] == "unknown_tool_call_id"
    with pytest.raises(openai.ConflictError) as info:
        client.responses.create(model="agentao", input="hello?", previous_response_id=first.id)
    assert info.value.body["code"] == "tool_result_expected"
    (call,) = [item for item in first.output if item.type == "function_call"]
    fake_llm.reply("Warm.")
    done = {"type": "function_call_output", "call_id": call.call_id, "output": "warm"}
    last = client.responses.create(model="agentao", input=[done], previous_response_id=first.id)
    assert last.output_text.strip() == "Warm."
