"""The caller's own tools with third parties (issue 24, Tests; gateway/tool_bridge.py).

codex-acp 2.6.0 (tests/peers), a third-party agent that takes HTTP MCP (it advertises
`mcpCapabilities.http` in v1 and `capabilities.session.mcp.http` in v2), driven by the
real `agentao serve` against the fake LLM's Responses API: codex connects to the
conversation's bridge with its header, lists the caller's tools (to its model they are
the tools of a `namespace` tool, `mcp__caller`), and the model's call of one comes back
to the caller as `tool_calls` / a `function_call` item with the caller's own name.

LangChain (`langchain-openai`'s `ChatOpenAI(...).bind_tools([...])`) runs its tool loop
through the gateway, on our agent: the model asks for the tool, LangChain sends the
`ToolMessage` back, and the answer uses the result.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_v2_peers import codex_replies
from tests.fakes.fake_llm import FakeLLM, FakeReply, FakeToolCall
from tests.gateway.conftest import LiveGateway, ServedGateway, served_config
from tests.gateway.test_caller_tools import (
    WEATHER,
    answer,
    ask,
    echo,
    gw,
    model_call,
    tool_messages,
    user,
)
from tests.gateway.test_caller_tools_responses import RESPONSES_WEATHER
from tests.npm_peers import PEERS_DIR, NpmPeers, codex_env

__all__ = ["gw"]  # the fixture, shared


def codex_config(tmp: Path, peers: NpmPeers, fake: FakeLLM, protocol: int) -> str:
    """`agentao serve`'s config: codex-acp in its sandbox, against `fake`, in `protocol`."""
    work, home = tmp / "codex-work", tmp / "codex-home"
    work.mkdir(parents=True, exist_ok=True)
    env = ", ".join(f"{k} = {json.dumps(v)}" for k, v in codex_env(home, fake).items())
    return f"""
[agents.codex]
command = [{json.dumps(str(peers.codex_acp))}]
cwd = {json.dumps(str(work))}
protocol = "{protocol}"
env = {{ {env} }}

[agents.codex.sandbox]
read = [{json.dumps(str(PEERS_DIR))}]
write = [{json.dumps(str(home))}]
"""


def codex_call(name: str, **arguments: Any) -> FakeToolCall:
    """The model's call of a caller's tool as codex offers it: a function of the
    `mcp__caller` namespace (codex refuses `mcp__caller__NAME` as an unsupported call)."""
    return FakeToolCall(name, arguments, namespace="mcp__caller")


def codex_turns(fake: FakeLLM) -> list[Any]:
    """The requests of codex's turns (not its side requests for a title)."""
    return [r for r in fake.requests if r.body.get("model") == fake.model]


def call_outputs(request: Any) -> list[str]:
    """The text codex sent its model as the tool's output (after its own wall-time line)."""
    found = []
    for item in request.body.get("input", ()):
        if item.get("type") == "function_call_output":
            output = item["output"]
            parts = output if isinstance(output, list) else [{"text": output}]
            found += [p["text"] for p in parts if "Wall time" not in p["text"]]
    return found


@pytest.mark.parametrize("protocol", [2, 1], ids=["v2", "v1"])
def test_codex_acp_takes_the_callers_weather_tool_through_agentao_serve(
    tmp_path: Path, v2_peers: NpmPeers, fake_llm: FakeLLM, protocol: int
) -> None:
    """Chat Completions streamed, then not, then the Responses API: each a weather round
    trip in a conversation of its own, the call resumed in the same codex turn."""
    codex_replies(fake_llm)
    served = ServedGateway(tmp_path, codex_config(tmp_path, v2_peers, fake_llm, protocol))
    try:
        client = served.openai()
        for n, (stream, city) in enumerate([(True, "Paris"), (False, "Oslo")]):
            fake_llm.reply("Let me look.", tool_calls=[codex_call("get_weather", city=city)])
            fake_llm.reply(f"Sunny in {city}.")
            messages: list[Any] = [user(f"weather in {city}?")]
            message, finish, first = ask(
                client, messages, stream=stream, model="codex", tools=[WEATHER]
            )
            assert finish == "tool_calls", message
            (call,) = message.tool_calls
            assert call.function.name == "get_weather" and call.id.startswith("call_")
            assert json.loads(call.function.arguments) == {"city": city}
            messages += [echo(message), answer(call, f"sunny, 21 C in {city}")]
            message, finish, second = ask(
                client, messages, stream=stream, model="codex", tools=[WEATHER]
            )
            assert (message.content, finish) == (f"Sunny in {city}.", "stop")
            assert second["x-task-id"] == first["x-task-id"]  # the same turn, resumed
            turn = codex_turns(fake_llm)
            offered = {t.get("name"): t for t in turn[2 * n].body["tools"]}
            assert [t["name"] for t in offered["mcp__caller"]["tools"]] == ["get_weather"]
            assert call_outputs(turn[2 * n + 1]) == [f"sunny, 21 C in {city}"]

        fake_llm.reply(tool_calls=[codex_call("get_weather", city="Rome")])
        fake_llm.reply("Warm in Rome.")
        first = client.responses.create(
            model="codex", input="weather in Rome?", tools=[RESPONSES_WEATHER]
        )
        (item,) = [i for i in first.output if i.type == "function_call"]
        assert (item.name, json.loads(item.arguments)) == ("get_weather", {"city": "Rome"})
        output = {"type": "function_call_output", "call_id": item.call_id, "output": "warm"}
        last = client.responses.create(
            model="codex", input=[output], previous_response_id=first.id, tools=[RESPONSES_WEATHER]
        )
        assert last.output_text.strip() == "Warm in Rome."
        assert call_outputs(codex_turns(fake_llm)[-1]) == ["warm"]
    finally:
        served.stop()


def test_a_gateway_stops_at_once_while_the_agent_waits_for_the_callers_tool(
    tmp_path: Path,
) -> None:
    """The agent's MCP call waits for the caller, and the server waits for every request
    under way before it stops: Ctrl-C (SIGINT) must fail the call, not wait for it
    (`tool_result_seconds`, 240 s here; `stop()` gives up after 20 s)."""
    call = {"name": "mcp__caller__get_weather", "arguments": {"city": "Paris"}}
    served = ServedGateway(tmp_path, served_config(tmp_path, [{"tool_calls": [call]}]))
    try:
        _, finish, _ = ask(
            served.openai(), [user("weather in Paris?")], stream=False, tools=[WEATHER]
        )
        assert finish == "tool_calls"
    finally:
        served.stop()
    assert served.proc.returncode == 0


# ---- LangChain ---------------------------------------------------------------------------------


def chat_openai(gw: LiveGateway) -> Any:
    """`langchain_openai.ChatOpenAI` on the gateway (in the test extra: missing, the test is
    skipped, except under CI, where that is a failure)."""
    try:
        from langchain_openai import ChatOpenAI
    except ImportError as exc:  # pragma: no cover - the extra installs it
        if os.environ.get("CI"):
            pytest.fail(f"CI must have langchain-openai (the test extra): {exc}")
        pytest.skip(f"langchain-openai is not installed: {exc}")
    return ChatOpenAI(
        model="agentao", base_url=gw.url + "/v1", api_key=gw.local_token or "unused", max_retries=0
    )


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
def test_langchain_bind_tools_completes_a_tool_loop_through_the_gateway(
    gw: LiveGateway, fake_llm: FakeLLM, stream: bool
) -> None:
    """LangChain's own loop: the AIMessage's `tool_calls` run locally, a `ToolMessage` per
    call goes back with the whole history, and the final answer is built on its result."""
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_core.tools import tool

    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny, 21 C in {city}"

    fake_llm.reply("Let me look.", tool_calls=[model_call("get_weather", city="Paris")])
    model = chat_openai(gw).bind_tools([get_weather])
    messages: list[Any] = [HumanMessage("What is the weather in Paris?")]

    def call_model() -> Any:
        if not stream:
            return model.invoke(messages)
        chunks = iter(model.stream(messages))
        whole = next(chunks)
        for chunk in chunks:
            whole += chunk
        return whole

    reply = call_model()
    assert reply.tool_calls and reply.tool_calls[0]["name"] == "get_weather"
    assert reply.tool_calls[0]["args"] == {"city": "Paris"}
    messages.append(reply)
    for call in reply.tool_calls:
        messages.append(ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"]))
    answer_with_the_result(fake_llm)
    final = call_model()
    assert not final.tool_calls
    assert final.content.strip() == "It is sunny, 21 C in Paris."
    assert tool_messages(fake_llm.requests[1]) == ["sunny, 21 C in Paris"]


def answer_with_the_result(fake: FakeLLM) -> None:
    """The model's next reply says what the tool returned, read from its own request: an
    answer that did not carry the result to the model could not match."""

    def respond(body: dict[str, Any]) -> FakeReply | None:
        results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        return FakeReply([f"It is {results[-1]}."]) if results else None

    fake.respond = respond
