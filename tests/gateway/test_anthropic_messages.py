"""`POST /v1/messages`, the Anthropic face (issue 24 item 5; gateway/anthropic_messages.py).

The real `anthropic` package against a real gateway running our agent (in its sandbox)
on the fake LLM: text whole and through the SDK's stream helper, the caller's tools as
`tool_use` / `tool_result`, `system`, keys, and bad input in Anthropic's error shape.
"""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest
from starlette.requests import Request

from agentao.gateway.config import ApiKey, Limits
from agentao.gateway.peers import credentials
from tests.fakes.fake_llm import FakeLLM, FakeToolCall
from tests.gateway.conftest import LiveGateway, llm_spec
from tests.gateway.test_openai_chat import wait_for_end

WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def model_call(name: str, **arguments: Any) -> FakeToolCall:
    return FakeToolCall(f"mcp__caller__{name}", arguments)


def _sha(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def client_of(gw: LiveGateway, key: str = "unused", **kw: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gw.url, api_key=key, max_retries=0, timeout=30, **kw)


@pytest.fixture
def gw(gateway_factory: Any, fake_llm: FakeLLM, tmp_path: Path) -> LiveGateway:
    return gateway_factory(agents=(llm_spec(tmp_path, fake_llm.env()),))


def create(client: anthropic.Anthropic, messages: list[Any], **kw: Any) -> tuple[Any, Any]:
    """One whole request: (the message, the answer's headers)."""
    raw = client.messages.with_raw_response.create(
        **{"model": "agentao", "max_tokens": 1024, "messages": messages, **kw}
    )
    return raw.parse(), raw.headers


def streamed(client: anthropic.Anthropic, messages: list[Any], **kw: Any) -> tuple[Any, list]:
    """One request through the SDK's stream helper: (its final message, the event types)."""
    args = {"model": "agentao", "max_tokens": 1024, "messages": messages, **kw}
    with client.messages.stream(**args) as stream:
        kinds = [event.type for event in stream]
        return stream.get_final_message(), kinds


def text_of(message: Any) -> str:
    """Our agent begins the text after a tool round with a blank line: not our business."""
    return "".join(b.text for b in message.content if b.type == "text").strip()


def echo(message: Any) -> dict[str, Any]:
    """The assistant message as a caller sends it back."""
    return {"role": "assistant", "content": [b.model_dump() for b in message.content]}


def said_by_user(llm_request: Any) -> list[str]:
    return [m["content"] for m in llm_request.body["messages"] if m["role"] == "user"]


def test_text_whole(gw: LiveGateway, fake_llm: FakeLLM) -> None:
    fake_llm.reply("Hello", " there.")
    message, headers = create(client_of(gw), [user("hi")])
    assert message.type == "message" and message.role == "assistant"
    assert message.id.startswith("msg_") and message.model == "agentao"
    assert [(b.type, b.text) for b in message.content] == [("text", "Hello there.")]
    assert message.stop_reason == "end_turn" and message.stop_sequence is None
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    assert headers["x-session-id"].startswith("conv_")


def test_text_streamed_through_the_stream_helper(gw: LiveGateway, fake_llm: FakeLLM) -> None:
    fake_llm.reply("Hello", " there.")
    client = client_of(gw)
    with client.messages.stream(model="agentao", max_tokens=64, messages=[user("hi")]) as s:
        texts = list(s.text_stream)
        final = s.get_final_message()
    assert "".join(texts) == "Hello there."
    assert [(b.type, b.text) for b in final.content] == [("text", "Hello there.")]
    assert final.stop_reason == "end_turn" and final.usage.output_tokens > 0
    _, kinds = streamed(client, [user("again")])
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert {"content_block_start", "content_block_stop", "message_delta"} <= set(kinds)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_weather_tool_round_trip(gw: LiveGateway, fake_llm: FakeLLM, stream: bool) -> None:
    """`tool_use` with the caller's own name, the input as the model sent it and an id;
    the `tool_result` resumes the same turn; the conversation goes on after it."""
    fake_llm.reply("Let me look.", tool_calls=[model_call("get_weather", city="Paris")])
    fake_llm.reply("It is sunny in Paris.")
    fake_llm.reply("You are welcome.")
    client = client_of(gw)

    def ask(messages: list[Any]) -> Any:
        if stream:
            return streamed(client, messages, tools=[WEATHER])[0]
        return create(client, messages, tools=[WEATHER])[0]

    messages: list[Any] = [user("weather in Paris?")]
    message = ask(messages)
    assert message.stop_reason == "tool_use"
    text, call = message.content
    assert (text.type, text.text) == ("text", "Let me look.")
    assert (call.type, call.name, call.input) == ("tool_use", "get_weather", {"city": "Paris"})
    assert call.id

    result = {"type": "tool_result", "tool_use_id": call.id, "content": "sunny, 21 C"}
    messages += [echo(message), {"role": "user", "content": [result]}]
    message = ask(messages)
    assert (text_of(message), message.stop_reason) == ("It is sunny in Paris.", "end_turn")
    tool_texts = [
        m["content"] for m in fake_llm.requests[1].body["messages"] if m["role"] == "tool"
    ]
    assert tool_texts == ["sunny, 21 C"]

    messages += [echo(message), user("thanks")]
    message = ask(messages)
    assert text_of(message) == "You are welcome."
    # Found by its transcript: the agent's own memory, then the new message alone.
    assert said_by_user(fake_llm.requests[2]) == ["weather in Paris?", "thanks"]


def test_tool_choice_none_offers_no_tools(gw: LiveGateway, fake_llm: FakeLLM) -> None:
    fake_llm.reply("No tools.")
    fake_llm.reply("Tools.")
    client = client_of(gw)
    create(client, [user("a")], tools=[WEATHER], tool_choice={"type": "none"})
    create(client, [user("b")], tools=[WEATHER], tool_choice={"type": "auto"})
    offered = [
        [t["function"]["name"] for t in r.body.get("tools") or ()] for r in fake_llm.requests
    ]
    assert "mcp__caller__get_weather" not in offered[0]
    assert "mcp__caller__get_weather" in offered[1]


def test_an_error_result_reaches_the_model_as_one(gw: LiveGateway, fake_llm: FakeLLM) -> None:
    fake_llm.reply(tool_calls=[model_call("get_weather", city="Atlantis")])
    fake_llm.reply("No such city.")
    client = client_of(gw)
    messages: list[Any] = [user("weather in Atlantis?")]
    message, _ = create(client, messages, tools=[WEATHER])
    (call,) = message.content
    failed = {
        "type": "tool_result",
        "tool_use_id": call.id,
        "is_error": True,
        "content": [{"type": "text", "text": "unknown city"}],
    }
    message, _ = create(client, [*messages, echo(message), _results(failed)], tools=[WEATHER])
    assert text_of(message) == "No such city."
    tool_texts = [
        m["content"] for m in fake_llm.requests[1].body["messages"] if m["role"] == "tool"
    ]
    assert tool_texts == ["Error: unknown city"]


def test_the_system_text_reaches_the_agent(gw: LiveGateway, fake_llm: FakeLLM) -> None:
    fake_llm.reply("Bonjour.")
    blocks = [{"type": "text", "text": "Answer in French."}]
    message, _ = create(client_of(gw), [user("hi")], system=blocks)
    assert text_of(message) == "Bonjour."
    sent = "\n".join(str(m["content"]) for m in fake_llm.requests[0].body["messages"])
    assert "Answer in French." in sent


def test_a_conversation_continues_by_its_session_header(gw: LiveGateway, fake_llm: FakeLLM) -> None:
    """`X-Session-Id` binds as on the chat face: only the new message goes to the agent."""
    fake_llm.reply("One.")
    fake_llm.reply("Two.")
    client = client_of(gw, default_headers={"X-Session-Id": "my-thread"})
    _, first = create(client, [user("first")])
    _, second = create(client, [user("second")])  # the client sends no history
    assert first["x-session-id"] == second["x-session-id"] == "my-thread"
    assert said_by_user(fake_llm.requests[1]) == ["first", "second"]


def test_thinking_blocks_only_when_asked(gw: LiveGateway, fake_llm: FakeLLM) -> None:
    """The agent's reasoning is a `thinking` block when `thinking` is enabled, else left out."""
    client = client_of(gw)
    thinking = {"type": "enabled", "budget_tokens": 1024}
    fake_llm.reply(reasoning=["Pondering."], text=["Done."])
    message, _ = create(client, [user("a")])
    assert [b.type for b in message.content] == ["text"]
    fake_llm.reply(reasoning=["Pondering."], text=["Done."])
    message, _ = create(client, [user("b")], thinking=thinking)
    assert [b.type for b in message.content] == ["thinking", "text"]
    assert "Pondering." in message.content[0].thinking
    fake_llm.reply(reasoning=["Pondering."], text=["Done."])
    final, kinds = streamed(client, [user("c")], thinking=thinking)
    assert [b.type for b in final.content] == ["thinking", "text"]
    assert "Pondering." in final.content[0].thinking and final.content[1].text == "Done."
    assert kinds.count("content_block_start") == 2


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize(
    ("prompt", "stop"), [("refuse it", "refusal"), ("cutoff", "max_tokens"), ("hi", "end_turn")]
)
def test_the_agents_stop_reason(
    shared_gateway: LiveGateway, prompt: str, stop: str, stream: bool
) -> None:
    """The scripted model's `content_filter` / `length` are the agent's `refusal` /
    `max_tokens`, and Anthropic's."""
    client = client_of(shared_gateway)
    key = {"X-Session-Id": "stop-" + uuid.uuid4().hex}
    if stream:
        message, _ = streamed(client, [user(prompt)], extra_headers=key)
    else:
        message, _ = create(client, [user(prompt)], extra_headers=key)
    assert message.stop_reason == stop


def test_a_client_that_leaves_cancels_the_turn(shared_gateway: LiveGateway) -> None:
    client = client_of(shared_gateway)
    key = {"X-Session-Id": "gone-" + uuid.uuid4().hex}
    args = {"model": "agentao", "max_tokens": 64, "messages": [user("slow please")]}
    raw = client.messages.with_raw_response.create(**args, stream=True, extra_headers=key)
    seen = ""
    stream = raw.parse()
    for event in stream:
        if event.type == "content_block_delta":
            seen += event.delta.text
        if seen.count("tick") >= 3:
            break
    stream.close()  # the HTTP client goes away mid-turn
    assert wait_for_end(shared_gateway, raw.headers["x-task-id"])["stopReason"] == "cancelled"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_failed_turn_is_an_api_error(gw: LiveGateway, fake_llm: FakeLLM, stream: bool) -> None:
    """The agent's model refuses the request: whole, a 502 `api_error`; streamed, an
    `error` event, which the SDK raises."""
    fake_llm.fail(400, "the model is confused")
    client = client_of(gw)
    with pytest.raises(anthropic.APIStatusError) as info:
        if stream:
            streamed(client, [user("hi")])
        else:
            create(client, [user("hi")])
    assert info.value.body["type"] == "error"
    assert info.value.body["error"]["type"] == "api_error"
    assert info.value.status_code == (200 if stream else 502)


def _keyed(gateway_factory: Any, fake_llm: FakeLLM, tmp_path: Path) -> LiveGateway:
    keys = (ApiKey("alice", _sha("sk-alice")), ApiKey("bob", _sha("sk-bob")))
    return gateway_factory(agents=(llm_spec(tmp_path, fake_llm.env()),), keys=keys)


def test_another_key_cannot_continue_the_conversation(
    gateway_factory: Any, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """Bob names Alice's conversation (its id, and its transcript) and answers her tool
    call: he gets a conversation of his own, and a 400 for the call."""
    gw = _keyed(gateway_factory, fake_llm, tmp_path)
    fake_llm.reply(tool_calls=[model_call("get_weather", city="Rome")])
    alice = client_of(gw, "sk-alice")
    messages: list[Any] = [user("weather in Rome?")]
    asked, headers = create(alice, messages, tools=[WEATHER])
    (call,) = asked.content
    result = {"type": "tool_result", "tool_use_id": call.id, "content": "stolen"}
    bob = client_of(gw, "sk-bob", default_headers={"X-Session-Id": headers["x-session-id"]})
    with pytest.raises(anthropic.BadRequestError) as info:
        create(bob, [*messages, echo(asked), _results(result)])
    assert info.value.body["error"]["type"] == "invalid_request_error"
    assert info.value.body["error"]["code"] == "unknown_tool_call_id"
    fake_llm.reply("Hello Bob.")
    message, _ = create(bob, [user("hello")])
    assert text_of(message) == "Hello Bob."
    assert said_by_user(fake_llm.requests[-1]) == ["hello"]  # nothing of Alice's
    # Alice's call still waits for her, and her result resumes her turn.
    fake_llm.reply("Rainy.")
    result["content"] = "rain"
    message, _ = create(alice, [*messages, echo(asked), _results(result)], tools=[WEATHER])
    assert text_of(message) == "Rainy."


def _results(*results: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(results)}


def test_a_bad_key_is_refused_in_anthropics_shape(
    gateway_factory: Any, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    gw = _keyed(gateway_factory, fake_llm, tmp_path)
    with pytest.raises(anthropic.AuthenticationError) as info:
        create(client_of(gw, "sk-mallory"), [user("hi")])
    assert info.value.status_code == 401
    assert info.value.body == {
        "type": "error",
        "error": {
            "type": "authentication_error",
            "message": "invalid API key",
            "code": "invalid_api_key",
        },
    }
    fake_llm.reply("Hi Alice.")
    bearer = anthropic.Anthropic(base_url=gw.url, auth_token="sk-alice", max_retries=0)
    message, _ = create(bearer, [user("hi")])  # Authorization: Bearer, as on every face
    assert text_of(message) == "Hi Alice."
    # `x-api-key`, as Anthropic's API takes it (and SDKs before 2.x, curl, most clients
    # send it; this SDK sends its `api_key` as a bearer).
    fake_llm.reply("Hi again.")
    body = {"model": "agentao", "max_tokens": 16, "messages": [user("hi")]}
    with httpx.Client(base_url=gw.url, timeout=30) as http:
        reply = http.post("/v1/messages", json=body, headers={"x-api-key": "sk-alice"})
        assert reply.status_code == 200, reply.text
        assert reply.json()["content"][0]["text"] == "Hi again."
        reply = http.post("/v1/messages", json=body, headers={"x-api-key": "sk-mallory"})
        assert reply.status_code == 401
        assert reply.json()["error"]["type"] == "authentication_error"


BAD_BODIES = [
    ({"tool_choice": {"type": "any"}, "tools": [WEATHER]}, "tool_choice"),
    ({"tool_choice": {"type": "tool", "name": "get_weather"}, "tools": [WEATHER]}, "tool_choice"),
    ({"tool_choice": {"type": "sometimes"}}, "tool_choice.type"),
    ({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "tools[0].type"),
    ({"tools": [{**WEATHER, "input_schema": {"type": "string"}}]}, "tools[0].input_schema"),
    ({"tools": [{**WEATHER, "name": "get weather"}]}, "tools[0].name"),
    ({"tools": [WEATHER, WEATHER]}, "tools[1].function.name"),
    ({"stop_sequences": ["END"]}, "stop_sequences"),
    ({"thinking": {"type": "maybe"}}, "thinking.type"),
    ({"system": [{"type": "image"}]}, "system[0]"),
    ({"messages": [{"role": "system", "content": "x"}]}, "messages[0].role"),
    (
        {"messages": [{"role": "user", "content": [{"type": "document"}]}]},
        "messages[0].content[0].type",
    ),
    (
        {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "image", "source": {"type": "url", "url": "http://x/a.png"}}
                    ],
                }
            ]
        },
        "messages[0].content[0].source",
    ),
    ({"messages": []}, "messages"),
    ({"messages": [user("hi"), {"role": "assistant", "content": "Sure"}]}, "messages[1]"),
    ({"max_tokens": 0}, "max_tokens"),
]


@pytest.mark.parametrize(("extra", "param"), BAD_BODIES, ids=[p for _, p in BAD_BODIES])
def test_bad_input_is_a_400_in_anthropics_shape(
    gw: LiveGateway, fake_llm: FakeLLM, extra: dict[str, Any], param: str
) -> None:
    """Each refused before the agent sees anything, naming the field."""
    body = {"model": "agentao", "max_tokens": 16, "messages": [user("hi")], **extra}
    with httpx.Client(base_url=gw.url, headers={"x-api-key": "unused"}) as http:
        reply = http.post("/v1/messages", json=body, headers={"anthropic-version": "2023-06-01"})
    assert reply.status_code == 400, reply.text
    error = reply.json()
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert error["error"]["param"] == param and param.split("[")[0] in error["error"]["message"]
    assert fake_llm.requests == []


def test_an_unknown_model_is_anthropics_not_found(gw: LiveGateway) -> None:
    with pytest.raises(anthropic.NotFoundError) as info:
        create(client_of(gw), [user("hi")], model="claude-nope")
    assert info.value.body["type"] == "error"
    assert info.value.body["error"]["type"] == "not_found_error"
    assert "'claude-nope' does not exist" in info.value.body["error"]["message"]


def test_a_new_message_instead_of_the_result_is_refused(gw: LiveGateway, fake_llm: FakeLLM) -> None:
    fake_llm.reply(tool_calls=[model_call("get_weather", city="Oslo")])
    client = client_of(gw)
    messages: list[Any] = [user("weather in Oslo?")]
    message, _ = create(client, messages, tools=[WEATHER])
    messages.append(echo(message))
    with pytest.raises(anthropic.ConflictError) as info:
        create(client, [*messages, user("never mind")], tools=[WEATHER])
    assert info.value.body["error"]["code"] == "tool_result_expected"
    (call,) = message.content
    text_too = [
        {"type": "tool_result", "tool_use_id": call.id, "content": "-3 C"},
        {"type": "text", "text": "and?"},
    ]
    with pytest.raises(anthropic.BadRequestError) as info:
        create(client, [*messages, {"role": "user", "content": text_too}], tools=[WEATHER])
    assert info.value.body["error"]["code"] == "tool_result_with_text"
    fake_llm.reply("Cold.")
    message, _ = create(client, [*messages, _results(text_too[0])], tools=[WEATHER])
    assert text_of(message) == "Cold."


def test_a_result_that_never_comes_cancels_the_turn(
    gateway_factory: Any, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    gw = gateway_factory(
        agents=(llm_spec(tmp_path, fake_llm.env()),), limits=Limits(tool_result_seconds=1)
    )
    fake_llm.reply(tool_calls=[model_call("get_weather", city="Rome")])
    messages: list[Any] = [user("weather in Rome?")]
    message, headers = create(client_of(gw), messages, tools=[WEATHER])
    end = wait_for_end(gw, headers["x-task-id"])
    assert end["type"] == "task-ended" and end["stopReason"] == "cancelled"
    (call,) = message.content
    late = {"type": "tool_result", "tool_use_id": call.id, "content": "too late"}
    with pytest.raises(anthropic.BadRequestError) as info:
        create(client_of(gw), [*messages, echo(message), _results(late)], tools=[WEATHER])
    assert info.value.body["error"]["code"] == "unknown_tool_call_id"


DOC = Path(__file__).parents[2] / "docs" / "gateway.md"


def documented_example() -> str:
    """The first Python block of docs/gateway.md's "Anthropic Messages" section."""
    section = DOC.read_text().split("## Anthropic Messages\n", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_documented_example_runs(
    gw: LiveGateway, fake_llm: FakeLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/gateway.md's Anthropic loop, run as written there (but for the address)."""
    fake_llm.reply(tool_calls=[model_call("get_weather", city="Paris")])
    fake_llm.reply("Sunny in Paris.")
    code = documented_example()
    assert 'base_url="http://127.0.0.1:8765"' in code
    exec(code.replace("http://127.0.0.1:8765", gw.url), {})  # our own doc, as written
    assert capsys.readouterr().out.strip() == "Sunny in Paris."
    tool_texts = [
        m["content"] for m in fake_llm.requests[1].body["messages"] if m["role"] == "tool"
    ]
    assert tool_texts == ["sunny in Paris"]


def test_an_x_api_key_is_passed_on_to_the_holder_as_a_bearer() -> None:
    """A replica passing a request on (peers.py) sends the caller's key along, whichever
    header it came in."""
    scope = {"type": "http", "headers": [(b"x-api-key", b"sk-alice")], "subprotocols": ()}
    assert credentials(Request(scope)) == {"authorization": "Bearer sk-alice"}
