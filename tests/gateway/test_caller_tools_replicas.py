"""The caller's tools across replicas (issue 24; tool_bridge.py, holders.py, openai_chat.py).

A turn waiting for the caller's tool result lives on the replica holding its
conversation: its agent's MCP call waits there, in memory. The caller's next request,
carrying the result, may land on any replica (a load balancer's choice); it must reach
the holder and resume the same turn there. Real `agentao serve` replicas on one real
PostgreSQL store (test_replicas.py's `Replicas`), our agent on the scripted provider.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.gateway.test_caller_tools import WEATHER, answer, ask, echo, user
from tests.gateway.test_caller_tools_responses import RESPONSES_WEATHER
from tests.gateway.test_replicas import ALICE, BOB, KEYS, Replicas
from tests.postgres import PostgresServer

pytestmark = pytest.mark.timeout(120)

# Each session plays the script from its top: the call, then (its last user message
# still the question) the answer.
WEATHER_SCRIPT: list[dict[str, Any]] = [
    {
        "match": "weather",
        "tool_calls": [{"name": "mcp__caller__get_weather", "arguments": {"city": "Paris"}}],
    },
    {"match": "weather", "text": "Sunny in Paris."},
]


@pytest.fixture(scope="module")
def _shared_pair(
    tmp_path_factory: pytest.TempPathFactory, postgres_server: PostgresServer
) -> Iterator[Replicas]:
    tmp, store = tmp_path_factory.mktemp("tools-pair"), postgres_server.create_database()
    with Replicas.pair(tmp, store, server=KEYS, script=WEATHER_SCRIPT) as group:
        yield group


@pytest.fixture
def pair(_shared_pair: Replicas) -> Replicas:
    """Two replicas with alice's and bob's keys, shared by the module's tests."""
    return _shared_pair.fresh()


def waiting_on_a(pair: Replicas, **extra: Any) -> tuple[list[Any], Any, Any]:
    """Alice's conversation on A, its turn waiting for her get_weather result."""
    a, _ = pair.started
    messages: list[Any] = [user("weather in Paris?")]
    message, finish, headers = ask(
        a.openai(ALICE), messages, stream=False, tools=[WEATHER], **extra
    )
    assert finish == "tool_calls"
    return [*messages, echo(message)], message.tool_calls[0], headers


@pytest.mark.parametrize(
    ("keyed", "stream"),
    [(True, False), (False, False), (False, True)],
    ids=["session-key", "transcript-only", "transcript-only-streamed"],
)
def test_a_chat_tool_result_sent_to_another_replica_resumes_the_turn_on_the_holder(
    pair: Replicas, keyed: bool, stream: bool
) -> None:
    a, b = pair.started
    extra = {"extra_headers": {"X-Session-Id": f"tools-{stream}"}} if keyed else {}
    messages: list[Any] = [user("weather in Paris?")]
    message, finish, first = ask(a.openai(ALICE), messages, stream=stream, tools=[WEATHER], **extra)
    assert finish == "tool_calls"
    (call,) = message.tool_calls
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "get_weather",
        {"city": "Paris"},
    )
    messages += [echo(message), answer(call, "sunny, 21 C")]
    message, finish, second = ask(
        b.openai(ALICE), messages, stream=stream, tools=[WEATHER], **extra
    )
    assert (message.content, finish) == ("Sunny in Paris.", "stop")
    assert second["x-task-id"] == first["x-task-id"]  # the same turn, on A
    assert "passing POST /v1/chat/completions to " + a.url in pair.since(b)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_responses_function_call_output_sent_to_another_replica_resumes_the_turn(
    pair: Replicas, stream: bool
) -> None:
    a, b = pair.started
    first = a.openai(ALICE).responses.create(
        model="agentao", input="weather in Paris?", tools=[RESPONSES_WEATHER]
    )
    (call,) = [item for item in first.output if item.type == "function_call"]
    output = {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}
    kw: dict[str, Any] = {"input": [output], "previous_response_id": first.id}
    if stream:
        with b.openai(ALICE).responses.stream(
            model="agentao", tools=[RESPONSES_WEATHER], **kw
        ) as s:
            second = s.get_final_response()
    else:
        second = b.openai(ALICE).responses.create(model="agentao", tools=[RESPONSES_WEATHER], **kw)
    assert (second.status, second.output_text.strip()) == ("completed", "Sunny in Paris.")
    assert "passing POST /v1/responses to " + a.url in pair.since(b)


def test_a_new_message_instead_of_the_result_on_another_replica_is_the_holders_409(
    pair: Replicas,
) -> None:
    """Named by its transcript alone, the conversation is not found on B (its transcript
    is stored when the turn ends): the asked calls name it, and A says a result is due."""
    a, b = pair.started
    messages, call, _ = waiting_on_a(pair)
    with pytest.raises(openai.ConflictError) as info:
        b.openai(ALICE).chat.completions.create(
            model="agentao", messages=[*messages, user("never mind")], tools=[WEATHER]
        )
    assert info.value.body["code"] == "tool_result_expected"
    assert "passing POST /v1/chat/completions to " + a.url in pair.since(b)
    reply = b.openai(ALICE).chat.completions.create(
        model="agentao", messages=[*messages, answer(call, "sunny")], tools=[WEATHER]
    )
    assert reply.choices[0].message.content.strip() == "Sunny in Paris."


def test_another_keys_result_is_not_passed_on_and_answers_nothing(pair: Replicas) -> None:
    """Bob sends alice's call id to B: B passes nothing on (her conversation is not his)
    and answers 400 as for any unknown id; alice's turn still waits for her result."""
    _, b = pair.started
    messages, call, _ = waiting_on_a(pair)
    with pytest.raises(openai.BadRequestError) as info:
        b.openai(BOB).chat.completions.create(
            model="agentao", messages=[*messages, answer(call, "stolen")], tools=[WEATHER]
        )
    assert info.value.body["code"] == "unknown_tool_call_id"
    assert "passing POST" not in pair.since(b)
    reply = b.openai(ALICE).chat.completions.create(
        model="agentao", messages=[*messages, answer(call, "sunny")], tools=[WEATHER]
    )
    assert reply.choices[0].message.content.strip() == "Sunny in Paris."
