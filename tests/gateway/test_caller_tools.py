"""The caller's own tools as real tool calls (issue 24, items 1-2; gateway/tool_bridge.py).

The real `openai` package against a real gateway running our agent (in its sandbox) on
the fake LLM: the model calls `mcp__caller__<name>`, a tool of the MCP server the gateway
serves that one conversation, and the caller sees `tool_calls` with its own tool's name;
its next request's `role: tool` answers the waiting call and the same turn goes on.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import openai
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState

from agentao.gateway.auth import LOCAL
from agentao.gateway.caller_tools import ToolResult
from agentao.gateway.config import AgentSpec, ApiKey, Limits
from agentao.gateway.errors import BadRequest as BadRequestApi
from agentao.gateway.errors import Unavailable
from agentao.gateway.tool_bridge import (
    BRIDGE_HEADER,
    BRIDGE_PATH,
    SSE_MESSAGES_PATH,
    SSE_PATH,
    ToolBridges,
)
from agentao.gateway.turns import ToolCalls, _CallOrder, _Inbox
from tests.fakes import sdk_agent, sse_mcp_agent
from tests.fakes.fake_llm import FakeLLM, FakeToolCall
from tests.gateway.conftest import LiveGateway, ServedGateway, llm_spec, served_config
from tests.gateway.test_openai_chat import wait_for_end


def function(name: str, **properties: str) -> dict[str, Any]:
    props = {k: {"type": v} for k, v in properties.items()}
    schema = {"type": "object", "properties": props, "required": list(props)}
    return {
        "type": "function",
        "function": {"name": name, "description": name, "parameters": schema},
    }


WEATHER = function("get_weather", city="string")
CLOCK = function("get_time", zone="string")


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def answer(call: Any, text: str) -> dict[str, str]:
    call_id = call["id"] if isinstance(call, dict) else call.id
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def model_call(name: str, **arguments: Any) -> FakeToolCall:
    return FakeToolCall(f"mcp__caller__{name}", arguments)


def offered(llm_request: Any) -> list[str]:
    """The tool names the agent offered its model."""
    return [t["function"]["name"] for t in llm_request.body.get("tools") or ()]


def tool_messages(llm_request: Any) -> list[str]:
    return [m["content"] for m in llm_request.body["messages"] if m["role"] == "tool"]


@pytest.fixture
def gw(gateway_factory: Any, fake_llm: FakeLLM, tmp_path: Path) -> LiveGateway:
    return gateway_factory(agents=(llm_spec(tmp_path, fake_llm.env()),))


def ask(client: openai.OpenAI, messages: list[Any], *, stream: bool, **kw: Any) -> Any:
    """One request, streamed or not, as a (message, finish_reason, headers) triple whose
    message is what the caller appends to its transcript (for a streamed one, the SDK's
    stream state assembles the chunks, `tool_calls` deltas too, as for OpenAI's own)."""
    if not stream:
        raw = client.chat.completions.with_raw_response.create(
            messages=messages, **{"model": "agentao", **kw}
        )
        choice = raw.parse().choices[0]
        return _stripped(choice.message), choice.finish_reason, raw.headers
    raw = client.chat.completions.with_raw_response.create(
        messages=messages, stream=True, **{"model": "agentao", **kw}
    )
    state = ChatCompletionStreamState()
    for chunk in raw.parse():
        state.handle_chunk(chunk)
    choice, headers = state.get_final_completion().choices[0], raw.headers
    return _stripped(choice.message), choice.finish_reason, headers


def _stripped(message: Any) -> Any:
    """Our agent begins the text after a tool round with a blank line: not our business."""
    if message.content:
        message.content = message.content.strip()
    return message


def echo(message: Any) -> dict[str, Any]:
    """The assistant message as a caller sends it back."""
    out: dict[str, Any] = {"role": "assistant", "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": c.function.model_dump()}
            for c in message.tool_calls
        ]
    return out


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_weather_tool_round_trip(gw: LiveGateway, fake_llm: FakeLLM, stream: bool) -> None:
    """The call comes back with the caller's own name, the arguments as the model sent them
    and an id; the result resumes the same turn; and the conversation goes on after it."""
    fake_llm.reply("Let me look.", tool_calls=[model_call("get_weather", city="Paris")])
    fake_llm.reply("It is sunny in Paris.")
    fake_llm.reply("You are welcome.")
    client = gw.openai()
    messages: list[Any] = [user("weather in Paris?")]
    message, finish, first = ask(client, messages, stream=stream, tools=[WEATHER])
    assert finish == "tool_calls"
    assert message.content == "Let me look."
    (call,) = message.tool_calls
    assert call.type == "function" and call.id.startswith("call_")
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    assert "mcp__caller__get_weather" in offered(fake_llm.requests[0])

    messages += [echo(message), answer(call, "sunny, 21 C")]
    message, finish, second = ask(client, messages, stream=stream, tools=[WEATHER])
    assert (message.content, finish) == ("It is sunny in Paris.", "stop")
    assert second["x-task-id"] == first["x-task-id"]  # the same turn, resumed
    assert tool_messages(fake_llm.requests[1]) == ["sunny, 21 C"]

    messages += [echo(message), user("thanks")]
    message, finish, third = ask(client, messages, stream=stream, tools=[WEATHER])
    assert message.content == "You are welcome."
    assert third["x-session-id"] == first["x-session-id"]  # found by its transcript
    said = [m["content"] for m in fake_llm.requests[2].body["messages"] if m["role"] == "user"]
    assert said == ["weather in Paris?", "thanks"]  # the agent's own memory, then the new one


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_two_tools_in_one_reply(gw: LiveGateway, fake_llm: FakeLLM, stream: bool) -> None:
    """Our agent runs a reply's calls in turn, so they come back one by one, each answered
    before the next is made; both results reach the model."""
    calls = [model_call("get_weather", city="Oslo"), model_call("get_time", zone="CET")]
    fake_llm.reply(tool_calls=calls)
    fake_llm.reply("Cold, and noon.")
    client = gw.openai()
    messages: list[Any] = [user("weather and time in Oslo?")]
    tools = [WEATHER, CLOCK]
    seen = []
    for result in ("-3 C", "12:00"):
        message, finish, _ = ask(client, messages, stream=stream, tools=tools)
        assert finish == "tool_calls"
        (call,) = message.tool_calls
        seen.append((call.function.name, json.loads(call.function.arguments)))
        messages += [echo(message), answer(call, result)]
    message, finish, _ = ask(client, messages, stream=stream, tools=tools)
    assert (message.content, finish) == ("Cold, and noon.", "stop")
    assert seen == [("get_weather", {"city": "Oslo"}), ("get_time", {"zone": "CET"})]
    assert tool_messages(fake_llm.requests[1]) == ["-3 C", "12:00"]


async def test_a_call_that_overtook_its_announcement_waits_for_it() -> None:
    """The agent's HTTP call can reach the gateway before the updates it sent first on
    its stdout (the text it said, the `tool_call`): the call ends the answer only after
    the update announcing it, so that text is in the answer the call ends."""
    inbox = _Inbox()
    order = _CallOrder(inbox, 2.0)
    call = SimpleNamespace(args={"city": "Paris"})
    order.call(call)
    waiting = asyncio.ensure_future(inbox.take())
    await asyncio.sleep(0)
    assert not waiting.done()
    order.announced([{"toolCallId": "t1", "rawInput": {"city": "Oslo"}}])  # another call
    await asyncio.sleep(0)
    assert not waiting.done()
    order.announced([{"toolCallId": "t2", "rawInput": {"city": "Paris"}}])
    (item,) = await waiting
    assert isinstance(item, ToolCalls) and item.calls == [call]
    announced_first = SimpleNamespace(args={"city": "Oslo"})  # t1's, announced before
    order.call(announced_first)
    (item,) = await inbox.take()
    assert item.calls == [announced_first]


async def test_calls_made_before_the_answer_went_out_come_back_together() -> None:
    """Calls the agent makes together (before the consumer took the first) are one
    ToolCalls; a call made after that is the next answer's."""
    inbox = _Inbox()
    inbox.put_call("a")
    inbox.put_call("b")
    (item,) = await inbox.take()
    assert isinstance(item, ToolCalls) and item.calls == ["a", "b"]
    inbox.put_call("c")
    (later,) = await inbox.take()
    assert isinstance(later, ToolCalls) and later.calls == ["c"]


def test_tool_choice_none_offers_no_tools(gw: LiveGateway, fake_llm: FakeLLM) -> None:
    fake_llm.reply("No tools needed.")
    reply = gw.openai().chat.completions.create(
        model="agentao", messages=[user("hi")], tools=[WEATHER], tool_choice="none"
    )
    assert reply.choices[0].message.content == "No tools needed."
    assert not [n for n in offered(fake_llm.requests[0]) if n.startswith("mcp__caller__")]


@pytest.mark.parametrize(
    "choice", ["required", {"type": "function", "function": {"name": "get_weather"}}, "sometimes"]
)
def test_a_tool_choice_that_cannot_be_honoured_is_a_400(
    gw: LiveGateway, fake_llm: FakeLLM, choice: Any
) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        gw.openai().chat.completions.create(
            model="agentao", messages=[user("hi")], tools=[WEATHER], tool_choice=choice
        )
    assert info.value.body["param"] == "tool_choice"
    assert "tool_choice" in info.value.body["message"]
    assert fake_llm.requests == []


@pytest.mark.parametrize(
    ("tools", "param", "code"),
    [
        ([function("f") | {"function": {"name": "f", "parameters": []}}], "tools[0].function.parameters", "invalid_tool_schema"),
        ([{"type": "function", "function": {"name": "f", "parameters": {"type": "string"}}}], "tools[0].function.parameters", "invalid_tool_schema"),
        ([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": [1]}}}], "tools[0].function.parameters", "invalid_tool_schema"),
        ([WEATHER, CLOCK, WEATHER], "tools[2].function.name", "duplicate_tool_name"),
        ([{"type": "function", "function": {"name": "no spaces"}}], "tools[0].function.name", None),
    ],
    ids=["schema-not-object", "schema-of-a-string", "properties-not-object", "duplicate", "bad-name"],
)  # fmt: skip
def test_a_bad_tool_is_a_400_naming_it_before_the_agent_sees_anything(
    gw: LiveGateway, fake_llm: FakeLLM, tools: list[Any], param: str, code: str | None
) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        gw.openai().chat.completions.create(model="agentao", messages=[user("hi")], tools=tools)
    assert info.value.body["param"] == param
    if code is not None:
        assert info.value.body["code"] == code
    assert fake_llm.requests == []
    assert gw.gateway.conversations._live == {}  # no conversation was even made


def first_call(gw: LiveGateway, fake_llm: FakeLLM, key: str | None = None) -> tuple[Any, Any]:
    """A conversation whose turn waits for the result of one get_weather call."""
    fake_llm.reply(tool_calls=[model_call("get_weather", city="Rome")])
    messages: list[Any] = [user("weather in Rome?")]
    message, finish, headers = ask(gw.openai(key), messages, stream=False, tools=[WEATHER])
    assert finish == "tool_calls"
    return [*messages, echo(message)], headers


def answer_and_end(
    gw: LiveGateway, fake_llm: FakeLLM, messages: list[Any], key: str | None = None
) -> None:
    """Answer the waiting call, so the turn ends (and the gateway stops at once)."""
    fake_llm.reply("ok")
    result = answer(messages[-1]["tool_calls"][0] | {}, "done")
    reply = gw.openai(key).chat.completions.create(
        model="agentao", messages=[*messages, result], tools=[WEATHER]
    )
    assert reply.choices[0].finish_reason == "stop"


def test_an_unknown_tool_call_id_is_a_400(gw: LiveGateway, fake_llm: FakeLLM) -> None:
    messages, _ = first_call(gw, fake_llm)
    wrong = {"role": "tool", "tool_call_id": "call_nope", "content": "x"}
    with pytest.raises(openai.BadRequestError) as info:
        gw.openai().chat.completions.create(
            model="agentao", messages=[*messages, wrong], tools=[WEATHER]
        )
    assert info.value.body["code"] == "unknown_tool_call_id"
    assert "call_nope" in info.value.body["message"]
    assert len(fake_llm.requests) == 1  # the agent still waits: nothing was answered
    answer_and_end(gw, fake_llm, messages)


@pytest.mark.parametrize("keyed", [False, True], ids=["by-transcript", "by-session-key"])
def test_a_new_user_message_instead_of_the_result_is_a_409(
    gw: LiveGateway, fake_llm: FakeLLM, keyed: bool
) -> None:
    messages, headers = first_call(gw, fake_llm)
    extra = {"X-Session-Id": headers["x-session-id"]} if keyed else {}
    with pytest.raises(openai.ConflictError) as info:
        gw.openai().chat.completions.create(
            model="agentao",
            messages=[*messages, user("never mind")],
            tools=[WEATHER],
            extra_headers=extra,
        )
    assert info.value.body["code"] == "tool_result_expected"
    assert "tool result was expected" in info.value.body["message"]
    answer_and_end(gw, fake_llm, messages)


def test_a_result_that_never_comes_cancels_the_turn(
    gateway_factory: Any, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """Past `tool_result_seconds` the waiting call fails and the turn is cancelled; a
    result sent after that answers nothing."""
    gw = gateway_factory(
        agents=(llm_spec(tmp_path, fake_llm.env()),), limits=Limits(tool_result_seconds=1)
    )
    messages, headers = first_call(gw, fake_llm)
    end = wait_for_end(gw, headers["x-task-id"])
    assert end["type"] == "task-ended" and end["stopReason"] == "cancelled"
    call_id = messages[-1]["tool_calls"][0]["id"]
    late = {"role": "tool", "tool_call_id": call_id, "content": "too late"}
    with pytest.raises(openai.BadRequestError) as info:
        gw.openai().chat.completions.create(
            model="agentao", messages=[*messages, late], tools=[WEATHER]
        )
    assert info.value.body["code"] == "unknown_tool_call_id"
    assert len(fake_llm.requests) == 1


def _sha(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def test_another_key_cannot_answer_a_conversations_call(
    gateway_factory: Any, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    keys = (ApiKey("alice", _sha("sk-alice")), ApiKey("bob", _sha("sk-bob")))
    gw = gateway_factory(agents=(llm_spec(tmp_path, fake_llm.env()),), keys=keys)
    messages, _ = first_call(gw, fake_llm, "sk-alice")
    call_id = messages[-1]["tool_calls"][0]["id"]
    result = {"role": "tool", "tool_call_id": call_id, "content": "stolen"}
    with pytest.raises(openai.BadRequestError) as info:
        gw.openai("sk-bob").chat.completions.create(
            model="agentao", messages=[*messages, result], tools=[WEATHER]
        )
    assert info.value.body["code"] == "unknown_tool_call_id"
    fake_llm.reply("Rome is warm.")
    mine = {**result, "content": "warm"}
    reply = gw.openai("sk-alice").chat.completions.create(
        model="agentao", messages=[*messages, mine], tools=[WEATHER]
    )
    assert reply.choices[0].message.content == "Rome is warm."
    assert tool_messages(fake_llm.requests[1]) == ["warm"]


async def list_tools(url: str, header: str) -> list[str]:
    """The tool names an MCP client with `header` is shown (the official SDK's client)."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers={BRIDGE_HEADER: header}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        return [t.name for t in (await client.list_tools()).tools]


def test_each_conversations_tools_are_reached_with_its_own_secret_only(
    gw: LiveGateway, fake_llm: FakeLLM
) -> None:
    client = gw.openai()
    fake_llm.reply("one")
    fake_llm.reply("two")
    client.chat.completions.create(model="agentao", messages=[user("a")], tools=[WEATHER])
    client.chat.completions.create(model="agentao", messages=[user("b")], tools=[CLOCK])
    bridges = list(gw.gateway.tools._by_id.values())
    assert len(bridges) == 2
    url = gw.url + BRIDGE_PATH
    for bridge, names in zip(bridges, (["get_weather"], ["get_time"]), strict=True):
        assert asyncio.run(list_tools(url, f"{bridge.id}.{bridge.secret}")) == names
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    a, b = bridges
    for header in (None, f"{a.id}.{b.secret}", f"{a.id}.", a.secret, "x.y"):
        headers = {BRIDGE_HEADER: header} if header is not None else {}
        for path in (BRIDGE_PATH, SSE_PATH, SSE_MESSAGES_PATH):  # the SSE transport's too
            refused = httpx.post(gw.url + path, json=init, headers=headers)
            assert refused.status_code == 401, (header, path)
            assert refused.json()["error"]["code"] == "invalid_tool_bridge"
        assert httpx.get(gw.url + SSE_PATH, headers=headers).status_code == 401
    not_ascii = {BRIDGE_HEADER.encode(): f"{a.id}.é".encode("latin-1")}
    assert httpx.post(url, json=init, headers=not_ascii).status_code == 401


def test_the_callers_tool_asks_nothing_and_widens_nothing(
    gateway_factory: Any, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """Under a key whose policy is `reject`, the caller's tool runs (no permission is asked
    for it: one asked would be refused), and a tool of the agent's that asks (web_fetch)
    is refused in the same turn: the bridge widens nothing."""
    keys = (ApiKey("ci", _sha("sk-ci"), ceiling="reject", policy="reject"),)
    gw = gateway_factory(agents=(llm_spec(tmp_path, fake_llm.env()),), keys=keys)
    fetch = FakeToolCall("web_fetch", {"url": "https://example.com/"})
    fake_llm.reply(tool_calls=[model_call("get_weather", city="Rome"), fetch])
    fake_llm.reply("Done.")
    client = gw.openai("sk-ci")
    messages: list[Any] = [user("weather, then fetch")]
    message, finish, _ = ask(client, messages, stream=False, tools=[WEATHER])
    assert finish == "tool_calls"
    messages += [echo(message), answer(message.tool_calls[0], "warm")]
    message, finish, _ = ask(client, messages, stream=False, tools=[WEATHER])
    assert (message.content, finish) == ("Done.", "stop")
    warm, refused = tool_messages(fake_llm.requests[1])
    assert warm == "warm"
    # refused by the read-only mode a `reject` ceiling's process is held to (or its policy)
    assert "web_fetch is not allowed" in refused or "reject" in refused.lower(), refused


def test_tools_first_sent_on_a_later_request_reach_the_agent(
    gw: LiveGateway, fake_llm: FakeLLM
) -> None:
    """A conversation whose agent session was opened without tools: the session is reopened
    (`session/load`) with the caller's MCP server before the turn that first offers them."""
    client, key = gw.openai(), {"X-Session-Id": "with-tools-later"}
    fake_llm.reply("Hello.")
    client.chat.completions.create(model="agentao", messages=[user("hi")], extra_headers=key)
    fake_llm.reply(tool_calls=[model_call("get_weather", city="Lima")])
    message, finish, _ = ask(
        client, [user("weather in Lima?")], stream=False, tools=[WEATHER], extra_headers=key
    )
    assert finish == "tool_calls" and message.tool_calls[0].function.name == "get_weather"
    assert "mcp__caller__get_weather" in offered(fake_llm.requests[1])
    fake_llm.reply("Mild.")
    done = [user("weather in Lima?"), echo(message), answer(message.tool_calls[0], "mild")]
    message, finish, _ = ask(client, done, stream=False, tools=[WEATHER], extra_headers=key)
    assert (message.content, finish) == ("Mild.", "stop")
    said = [m["content"] for m in fake_llm.requests[2].body["messages"] if m["role"] == "user"]
    assert said == ["hi", "weather in Lima?"]  # the reopened session kept its history


def test_a_conversation_forgotten_from_memory_keeps_no_bridge(
    gw: LiveGateway, fake_llm: FakeLLM
) -> None:
    """Swept idle, a conversation's bridge goes too (its secret answers nothing); its next
    request with tools gets a new one, and the reopened session calls the tool there."""
    client = gw.openai()
    fake_llm.reply("first")
    first = client.chat.completions.create(model="agentao", messages=[user("a")], tools=[WEATHER])
    (old,) = gw.gateway.tools._by_id.values()
    convs = gw.gateway.conversations
    assert gw.run(convs.sweep(0)) == 1
    assert gw.gateway.tools.sweep(lambda conv_id: convs.live(conv_id) is not None) == 1
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    stale = {BRIDGE_HEADER: f"{old.id}.{old.secret}"}
    assert httpx.post(gw.url + BRIDGE_PATH, json=init, headers=stale).status_code == 401
    fake_llm.reply(tool_calls=[model_call("get_weather", city="Quito")])
    again = [user("a"), {"role": "assistant", "content": first.choices[0].message.content}]
    message, finish, _ = ask(client, [*again, user("b")], stream=False, tools=[WEATHER])
    assert finish == "tool_calls"
    (new,) = gw.gateway.tools._by_id.values()
    assert new.id != old.id and new.conv.id == old.conv.id
    finish_turn = [*again, user("b"), echo(message)]
    answer_and_end(gw, fake_llm, finish_turn)


def test_the_documented_example_runs(gw: LiveGateway, fake_llm: FakeLLM) -> None:
    """docs/gateway.md's loop, as written there (but for the client and the script)."""
    fake_llm.reply(tool_calls=[model_call("get_weather", city="Paris")])
    fake_llm.reply("Sunny in Paris.")
    client = gw.openai()
    weather = WEATHER
    messages: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"}]
    reply = client.chat.completions.create(model="agentao", messages=messages, tools=[weather])
    while reply.choices[0].finish_reason == "tool_calls":  # the agent's turn waits meanwhile
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:  # your tool, your process
            city = json.loads(call.function.arguments)["city"]
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": f"sunny in {city}"}
            )
        reply = client.chat.completions.create(model="agentao", messages=messages, tools=[weather])
    assert reply.choices[0].message.content.strip() == "Sunny in Paris."
    assert tool_messages(fake_llm.requests[1]) == ["sunny in Paris"]


def test_a_cancelled_turn_waits_for_no_result(gw: LiveGateway, fake_llm: FakeLLM) -> None:
    """The waiting turn is cancelled (its task cancelled, say): its call waits no more, so
    the conversation's next user message is answered, not refused as a missing result."""
    messages, headers = first_call(gw, fake_llm)
    with gw.http() as http:
        assert http.post(f"/v1/tasks/{headers['x-task-id']}/cancel").status_code == 200
    fake_llm.reply("Fine, no weather.")
    reply = gw.openai().chat.completions.create(
        model="agentao",
        messages=[*messages, user("never mind")],
        tools=[WEATHER],
        extra_headers={"X-Session-Id": headers["x-session-id"]},
    )
    assert reply.choices[0].message.content.strip() == "Fine, no weather."


def test_an_agent_that_takes_no_http_mcp_server_is_a_400_naming_tools(
    gateway_factory: Any, tmp_path: Path
) -> None:
    """A third-party agent (the official SDK's, advertising no `mcpCapabilities.http`)
    cannot be offered the caller's tools: a 400 naming `tools` and why, nothing sent."""
    work_dir = tmp_path / "work"
    work_dir.mkdir()
    spec = AgentSpec("sdk-agent", (sys.executable, sdk_agent.__file__), cwd=str(work_dir))
    gw = gateway_factory(agents=(spec,))
    client = gw.openai()
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="sdk-agent", messages=[user("hi")], tools=[WEATHER])
    assert info.value.body["param"] == "tools"
    assert "takes no HTTP or SSE MCP server" in info.value.body["message"]
    assert gw.gateway.conversations._running == {}  # no turn started
    reply = client.chat.completions.create(model="sdk-agent", messages=[user("hi")])
    assert reply.choices[0].message.content == "hi"  # the same agent, without tools


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_an_agent_that_takes_sse_only_is_offered_the_tools_over_sse(
    gateway_factory: Any, tmp_path: Path, stream: bool
) -> None:
    """A third-party agent (the official SDKs') advertising `mcpCapabilities.sse` and not
    `http` gets the bridge as an SSE server, and the round trip is the same."""
    work_dir = tmp_path / "work"
    work_dir.mkdir()
    spec = AgentSpec("sse-agent", (sys.executable, sse_mcp_agent.__file__), cwd=str(work_dir))
    gw = gateway_factory(agents=(spec,))
    client = gw.openai()
    messages: list[Any] = [user("weather Paris")]
    kw = {"model": "sse-agent", "tools": [WEATHER]}
    message, finish, _ = ask(client, messages, stream=stream, **kw)
    assert finish == "tool_calls"
    (call,) = message.tool_calls
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "get_weather",
        {"city": "Paris"},
    )
    (bridge,) = gw.gateway.tools._by_id.values()
    assert gw.gateway.conversations.live(bridge.conv.id).tool_servers[0]["type"] == "sse"
    messages += [echo(message), answer(call, "sunny")]
    message, finish, _ = ask(client, messages, stream=stream, **kw)
    assert (message.content, finish) == ("tools ['get_weather']; weather: sunny", "stop")


def test_a_fresh_agent_session_is_told_the_tool_rounds_of_the_transcript(
    gw: LiveGateway, fake_llm: FakeLLM
) -> None:
    """A transcript the gateway has never seen (another provider's, say) that holds tool
    rounds reaches a new session as labelled history: the calls and their results."""
    fake_llm.reply("Noted.")
    asked = {"name": "get_weather", "arguments": '{"city": "Oslo"}'}
    call = {"id": "call_1", "type": "function", "function": asked}
    transcript = [
        user("weather in Oslo?"),
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "-3 C"},
        {"role": "assistant", "content": "It is -3 C."},
        user("and tomorrow?"),
    ]
    gw.openai().chat.completions.create(model="agentao", messages=transcript, tools=[WEATHER])
    (said,) = [m["content"] for m in fake_llm.requests[0].body["messages"] if m["role"] == "user"]
    assert '[Assistant]\n[tool call get_weather] {"city": "Oslo"}' in said
    assert "[Tool result]\n-3 C" in said


def test_results_sent_twice_at_once_resume_the_turn_once(
    gw: LiveGateway, fake_llm: FakeLLM
) -> None:
    """Results answered are waited for no more, at once: the same results in a second
    request (before the agent has even taken the first) answer nothing (two readers of
    one turn would each get part of it)."""
    messages, _ = first_call(gw, fake_llm)
    results = [ToolResult(messages[-1]["tool_calls"][0]["id"], "warm")]
    tools = gw.gateway.tools

    async def twice() -> Any:
        tools.answering(LOCAL.name, results).answer(results)
        with pytest.raises(BadRequestApi) as info:  # no await between: the agent has not run
            tools.answering(LOCAL.name, results)
        return info.value

    assert gw.run(twice()).code == "unknown_tool_call_id"


def test_a_round_trip_through_agentao_serve(tmp_path: Path) -> None:
    """The real `agentao serve` (its bound port, no advertise_url, our agent sandboxed)."""
    call = {"name": "mcp__caller__get_weather", "arguments": {"city": "Paris"}}
    served = ServedGateway(
        tmp_path, served_config(tmp_path, [{"tool_calls": [call]}, {"text": "Sunny."}])
    )
    try:
        client, messages = served.openai(), [user("weather in Paris?")]
        message, finish, _ = ask(client, messages, stream=True, tools=[WEATHER])
        assert finish == "tool_calls" and message.tool_calls[0].function.name == "get_weather"
        messages += [echo(message), answer(message.tool_calls[0], "sunny")]
        assert ask(client, messages, stream=False, tools=[WEATHER])[0].content == "Sunny."
    finally:
        served.stop()


MCP_SERVER_SIDE = "mcp.server.lowlevel"
LAZY_SDK = f"""
import json, sys
from pathlib import Path
from agentao.gateway.config import GatewayConfig
from tests.gateway.conftest import LiveGateway, scripted_spec

tmp = Path(sys.argv[1])
gw = LiveGateway(GatewayConfig(agents=(scripted_spec(tmp),)), tmp / "gateway.db").start()
seen = []
try:
    client = gw.openai()
    for tools in ((), {[WEATHER]!r}):
        client.chat.completions.create(
            model="agentao", messages=[{{"role": "user", "content": "hi"}}], tools=list(tools)
        )
        seen.append({MCP_SERVER_SIDE!r} in sys.modules)
finally:
    gw.stop()
print(json.dumps(seen))
"""


def test_a_gateway_loads_the_mcp_sdk_only_once_a_caller_brings_tools(tmp_path: Path) -> None:
    """The SDK's server side is most of a gateway's start (tool_bridge.py `serving`): a
    gateway whose callers bring no tools never imports it; the first that does has its
    tools served all the same."""
    ran = subprocess.run(
        [sys.executable, "-c", LAZY_SDK, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parents[2],
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert json.loads(ran.stdout.strip().splitlines()[-1]) == [False, True]


async def test_the_mcp_endpoint_made_for_tools_stops_with_the_gateway_and_not_after() -> None:
    bridges = ToolBridges(5.0, "http://127.0.0.1:9/v1/tool-bridge/mcp")
    async with bridges.running():
        await bridges.serving()
        runner = bridges._runner
        assert runner is not None and not runner.done()
    assert runner.done() and runner.exception() is None
    with pytest.raises(Unavailable) as stopped:  # a request still on its way then
        await bridges.serving()
    assert stopped.value.status == 503 and stopped.value.code == "gateway_stopping"
