"""Instructions as instructions (gateway/instructions.py), through the real `openai` SDK
and a real gateway: a request's system/developer messages and Responses `instructions`
reach our agent's model as its system message (ACP `systemPrompt`, append), streamed and
not; an agent without the capability gets them in the prompt's text; `X-Instructions`
says which. A later request of the same conversation: the same instructions are not
sent again, different ones go into that request's prompt text."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from agentao.gateway.config import AgentSpec
from agentao.server.client_prompt import APPEND_HEADING
from tests.fakes.fake_llm import FakeLLM
from tests.gateway.conftest import LiveGateway, llm_spec

RULE = "Answer like a pirate."


def system_of(body: dict) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "system")


def users_of(body: dict) -> list[str]:
    return [str(m["content"]) for m in body["messages"] if m["role"] == "user"]


@pytest.mark.parametrize("protocol", [1, 2])
def test_chat_instructions_reach_the_model_as_its_system_message(
    gateway_factory: Callable[..., LiveGateway], fake_llm: FakeLLM, tmp_path: Path, protocol: int
) -> None:
    """Over ACP v1 and v2 (our agent advertises `systemPrompt` on both)."""
    spec = replace(llm_spec(tmp_path, fake_llm.env()), protocol=protocol)
    gw = gateway_factory(agents=(spec,))
    client = gw.openai()
    raw = client.chat.completions.with_raw_response.create(
        model="agentao",
        messages=[{"role": "system", "content": RULE}, {"role": "user", "content": "hello"}],
    )
    assert raw.headers["x-instructions"] == "system-prompt"
    assert raw.parse().choices[0].message.content == fake_llm.default_text
    body = fake_llm.requests[0].body
    assert f"{APPEND_HEADING}\n{RULE}" in system_of(body)
    assert users_of(body) == ["hello"]  # not "[System] ..." user text
    streamed = client.chat.completions.with_raw_response.create(
        model="agentao",
        messages=[{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        stream=True,
    )
    assert streamed.headers["x-instructions"] == "system-prompt"
    assert "".join(c.choices[0].delta.content or "" for c in streamed.parse() if c.choices)
    body = fake_llm.requests[1].body
    assert f"{APPEND_HEADING}\nBe brief." in system_of(body) and users_of(body) == ["hi"]


def test_responses_instructions_reach_the_model_as_its_system_message(
    gateway_factory: Callable[..., LiveGateway], fake_llm: FakeLLM, tmp_path: Path
) -> None:
    gw = gateway_factory(agents=(llm_spec(tmp_path, fake_llm.env()),))
    client = gw.openai()
    raw = client.responses.with_raw_response.create(
        model="agentao", instructions=RULE, input="hello"
    )
    assert raw.headers["x-instructions"] == "system-prompt"
    first = raw.parse()
    assert f"{APPEND_HEADING}\n{RULE}" in system_of(fake_llm.requests[0].body)
    assert users_of(fake_llm.requests[0].body) == ["hello"]
    # The next request resends the same instructions: already the session's, not resent.
    streamed = client.responses.with_raw_response.create(
        model="agentao",
        instructions=RULE,
        input="again",
        previous_response_id=first.id,
        stream=True,
    )
    assert streamed.headers["x-instructions"] == "system-prompt"
    done = [e for e in streamed.parse() if e.type == "response.completed"]
    assert len(done) == 1
    body = fake_llm.requests[1].body
    assert system_of(body).count(RULE) == 1 and users_of(body) == ["hello", "again"]
    # Different instructions later on: applied from then on, in that request's prompt.
    later = client.responses.with_raw_response.create(
        model="agentao",
        instructions="Now be terse.",
        input="third",
        previous_response_id=done[0].response.id,
    )
    assert later.headers["x-instructions"] == "prompt"
    assert users_of(fake_llm.requests[2].body)[-1] == "[System]\nNow be terse.\n\nthird"


def test_a_keyed_chat_keeps_its_instructions_across_a_reload(
    gateway_factory: Callable[..., LiveGateway], fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """The conversation's session is closed (idle) and reopened with session/load: the
    model still gets the instructions, and the resent system message is not text."""
    gw = gateway_factory(agents=(llm_spec(tmp_path, fake_llm.env()),))
    client, key = gw.openai(), {"X-Session-Id": "k-" + uuid.uuid4().hex}
    said = [{"role": "system", "content": RULE}, {"role": "user", "content": "one"}]
    first = client.chat.completions.create(model="agentao", messages=said, extra_headers=key)
    assert gw.run(gw.gateway.conversations.sweep(0)) == 1
    said += [
        {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": "two"},
    ]
    raw = client.chat.completions.with_raw_response.create(
        model="agentao", messages=said, extra_headers=key
    )
    assert "x-instructions" not in raw.headers  # its new messages carry none
    body = fake_llm.requests[-1].body
    assert system_of(body).count(RULE) == 1 and users_of(body) == ["one", "two"]


def test_an_agent_without_the_capability_gets_the_fallback_and_the_header_says_so(
    gateway_factory: Callable[..., LiveGateway], tmp_path: Path
) -> None:
    argv = (sys.executable, str(Path(__file__).with_name("raw_agent.py")))
    gw = gateway_factory(agents=(AgentSpec("raw", argv, cwd=str(tmp_path)),))
    raw = gw.openai().chat.completions.with_raw_response.create(
        model="raw",
        messages=[{"role": "system", "content": RULE}, {"role": "user", "content": "hi"}],
    )
    assert raw.headers["x-instructions"] == "prompt"
    assert raw.parse().choices[0].message.content == "raw says hi (text)"
    plain = gw.openai().chat.completions.with_raw_response.create(
        model="raw", messages=[{"role": "user", "content": "hi"}]
    )
    assert "x-instructions" not in plain.headers
