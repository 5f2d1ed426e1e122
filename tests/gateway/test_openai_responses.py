"""`/v1/responses` through the real `openai` SDK: create, stream, the stream helper, continuity."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest
from websockets.sync.client import connect

from tests.fakes.fake_llm import FakeLLM
from tests.gateway.conftest import ON_EACH_STORE, SHARED_ON_EACH_STORE, LiveGateway, llm_spec


def test_create_is_not_streamed_by_default(shared_gateway: LiveGateway) -> None:
    response = shared_gateway.openai().responses.create(model="agentao", input="hello")
    assert response.status == "completed"
    assert response.output_text == "Answer one."
    kinds = [item.type for item in response.output]
    assert kinds == ["reasoning", "message"]
    assert response.output[0].summary[0].text == "Thinking it over."
    assert response.usage.output_tokens > 0 and response.usage.x_estimated is True
    assert response.id.startswith("resp_")


def test_stream_true_sends_typed_events_with_sequence_numbers(shared_gateway: LiveGateway) -> None:
    events = list(
        shared_gateway.openai().responses.create(model="agentao", input="hello", stream=True)
    )
    types = [e.type for e in events]
    assert types[:2] == ["response.created", "response.in_progress"]
    assert types[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(1, len(events) + 1))
    assert "response.reasoning_summary_text.delta" in types
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == "Answer one."
    assert events[-1].response.output_text == "Answer one."
    assert types.count("response.output_item.added") == types.count("response.output_item.done")


def test_the_stream_helper_accumulates_the_final_response(shared_gateway: LiveGateway) -> None:
    with shared_gateway.openai().responses.stream(model="agentao", input="hello") as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == final.output_text == "Answer one."
    assert final.status == "completed"


@SHARED_ON_EACH_STORE
def test_previous_response_id_continues_the_session(shared_gateway: LiveGateway) -> None:
    client = shared_gateway.openai()
    first = client.responses.create(model="agentao", input="one")
    second = client.responses.create(model="agentao", input="two", previous_response_id=first.id)
    third = client.responses.create(model="agentao", input="3", previous_response_id=second.id)
    assert [first.output_text, second.output_text, third.output_text] == [
        "Answer one.",
        "Answer two.",
        "Answer three.",
    ]
    forked = client.responses.create(model="agentao", input="fork", previous_response_id=first.id)
    assert forked.model_extra["x_conversation_id"] != third.model_extra["x_conversation_id"]
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="agentao", input="x", previous_response_id="resp_nope")


@SHARED_ON_EACH_STORE
def test_retrieve_and_delete(shared_gateway: LiveGateway) -> None:
    client = shared_gateway.openai()
    created = client.responses.create(model="agentao", input="keep me")
    fetched = client.responses.retrieve(created.id)
    assert fetched.output_text == created.output_text and fetched.status == "completed"
    client.responses.delete(created.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(created.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="agentao", input="x", previous_response_id=created.id)


@SHARED_ON_EACH_STORE
def test_background_response_can_be_cancelled(shared_gateway: LiveGateway) -> None:
    client = shared_gateway.openai()
    # It waits for a human to allow the write: in progress until cancelled, however slow
    # the machine.
    raw = client.responses.with_raw_response.create(
        model="agentao",
        input="write the file",
        background=True,
        extra_headers={"X-Permission-Policy": "ask"},
    )
    started = raw.parse()
    assert started.status == "in_progress"
    stream = shared_gateway.ws_url(f"/v1/tasks/{raw.headers['x-task-id']}/stream")
    with connect(stream) as ws:
        next(f for f in map(json.loads, ws) if f["type"] == "permission-request")
    assert client.responses.retrieve(started.id).status == "in_progress"
    cancelled = client.responses.cancel(started.id)
    assert cancelled.status == "cancelled"
    reasoning = cancelled.output[0].summary[0].text  # what it said before the cancel is kept
    assert "I will write the file." in reasoning
    assert client.responses.retrieve(started.id).status == "cancelled"
    assert client.responses.cancel(started.id) == cancelled  # again: the same object
    with pytest.raises(openai.BadRequestError):
        client.responses.cancel(client.responses.create(model="agentao", input="x").id)


@SHARED_ON_EACH_STORE
def test_stream_disconnect_stores_a_cancelled_response(shared_gateway: LiveGateway) -> None:
    client = shared_gateway.openai()
    stream = client.responses.create(model="agentao", input="slow please", stream=True)
    response_id = None
    for event in stream:
        if event.type == "response.created":
            response_id = event.response.id
        if event.type == "response.output_text.delta":
            break
    stream.close()
    assert response_id is not None
    shared_gateway.run(settled(shared_gateway, response_id))  # stored as it ended
    assert client.responses.retrieve(response_id).status == "cancelled"
    nxt = client.responses.create(model="agentao", input="hi", previous_response_id=response_id)
    assert nxt.output_text == "Answer one."  # the session continues, nothing of "tick" leaks


async def settled(gw: LiveGateway, response_id: str) -> None:
    """Return once the response is no longer being produced (its final row is stored)."""
    live = gw.gateway.live_responses.get(response_id)
    if live is not None:
        await live.done.wait()


def test_x_acp_adds_raw_updates_as_extension_items(shared_gateway: LiveGateway) -> None:
    response = shared_gateway.openai().responses.create(
        model="agentao",
        input="write the file",
        extra_body={"x_acp": True},
        extra_headers={"X-Permission-Policy": "all"},
    )
    raw = [item for item in response.output if item.type == "x_acp_update"]
    kinds = {item.update["sessionUpdate"] for item in raw}
    assert {"tool_call", "tool_call_update", "agent_message_chunk"} <= kinds
    assert response.output_text == "Wrote hello.txt."
    assert not any(item.type == "function_call" for item in response.output)


def test_refusal_maps_to_content_filter_and_a_refusal_part(shared_gateway: LiveGateway) -> None:
    client = shared_gateway.openai()
    chat = client.chat.completions.create(
        model="agentao", messages=[{"role": "user", "content": "refuse this"}]
    )
    assert chat.choices[0].finish_reason == "content_filter"
    response = client.responses.create(model="agentao", input="refuse this")
    assert response.status == "completed"
    parts = [p for item in response.output if item.type == "message" for p in item.content]
    assert parts[-1].type == "refusal"


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"tools": [{"type": "web_search"}]}, "tools[0].type"),
        ({"text": {"format": {"type": "json_object"}}}, "text.format"),
        (
            {"input": [{"type": "function_call_output", "call_id": "c", "output": "x"}]},
            "previous_response_id",
        ),
        (
            {"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": ""}]},
            "input[0].type",
        ),
    ],
)
def test_unsupported_parameters_are_a_400(
    shared_gateway: LiveGateway, extra: dict, param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        shared_gateway.openai().responses.create(**{"model": "agentao", "input": "hi", **extra})
    assert info.value.body["param"] == param


@ON_EACH_STORE
def test_continuity_survives_a_gateway_restart(
    gateway_factory, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    spec = llm_spec(tmp_path, fake_llm.env())
    fake_llm.reply("Nice to meet you, Ada.")
    first_gateway = gateway_factory(agents=(spec,))
    first = first_gateway.openai().responses.create(model="agentao", input="My name is Ada.")
    assert first.output_text == "Nice to meet you, Ada."
    first_gateway.stop()  # the gateway and its agent processes are gone

    fake_llm.reply("Your name is Ada.")
    second_gateway = gateway_factory(agents=(spec,))  # same store, same agent state
    second = second_gateway.openai().responses.create(
        model="agentao", input="What is my name?", previous_response_id=first.id
    )
    assert second.output_text == "Your name is Ada."
    sent = fake_llm.requests[-1].body["messages"]
    said = [str(m.get("content")) for m in sent]
    assert any("My name is Ada." in s for s in said)  # session/load gave the agent its memory
    assert any("Nice to meet you, Ada." in s for s in said)
