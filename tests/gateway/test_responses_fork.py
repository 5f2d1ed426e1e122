"""The Responses API's `previous_response_id` naming an OLDER response of a conversation
(gateway/openai_responses.py, forks.py `fork_after_task`): the request goes on from that
point, in a new conversation on the agent's fork of the session before the turn after it;
the original conversation is untouched. A real gateway, our agent over real pipes, and
the fake LLM, whose recorded requests show what the model was told."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import openai
import pytest

from agentao.gateway.config import AgentSpec
from tests.e2e.test_agent_fork import _user_texts
from tests.fakes import sdk_agent
from tests.fakes.fake_llm import FakeLLM
from tests.gateway.conftest import LiveGateway, llm_spec
from tests.gateway.test_forks import _key


def test_an_older_previous_response_id_forks_before_the_turn_after_it(
    gateway_factory: Callable[..., LiveGateway], fake_llm: FakeLLM, tmp_path: Path
) -> None:
    gw = gateway_factory(agents=(llm_spec(tmp_path, fake_llm.env()),), keys=(_key("alice"),))
    for n in range(1, 5):
        fake_llm.reply(f"answer {n}")
    fake_llm.reply("answer 3, again")
    fake_llm.reply("answer 5")
    client = gw.openai("sk-alice")
    responses = [client.responses.create(model="agentao", input="message 1")]
    for n in (2, 3, 4):
        previous = responses[-1].id
        responses.append(
            client.responses.create(
                model="agentao", input=f"message {n}", previous_response_id=previous
            )
        )
    again = client.responses.create(
        model="agentao", input="message 3, again", previous_response_id=responses[1].id
    )
    told_fork = fake_llm.requests[-1].body
    latest = client.responses.create(
        model="agentao", input="message 5", previous_response_id=responses[3].id
    )
    told_source = fake_llm.requests[-1].body
    assert again.output_text == "answer 3, again" and latest.output_text == "answer 5"
    assert _user_texts(told_fork) == ["message 1", "message 2", "message 3, again"]
    said = " ".join(str(m.get("content")) for m in told_fork["messages"])
    assert "answer 2" in said and "answer 3" not in said.replace("answer 3, again", "")
    assert _user_texts(told_source) == [f"message {n}" for n in range(1, 6)]  # untouched
    conversations = {r.model_extra["x_conversation_id"] for r in responses}
    assert len(conversations) == 1  # one conversation, the four responses in it
    assert again.model_extra["x_conversation_id"] not in conversations
    assert latest.model_extra["x_conversation_id"] in conversations


def test_an_older_response_of_an_agent_that_cannot_fork_is_a_501(
    gateway_factory: Callable[..., LiveGateway], tmp_path: Path
) -> None:
    spec = AgentSpec("sdk-agent", (sys.executable, sdk_agent.__file__), cwd=str(tmp_path))
    gw = gateway_factory(agents=(spec,), keys=(_key("alice"),))
    client = gw.openai("sk-alice")
    first = client.responses.create(model="sdk-agent", input="one")
    client.responses.create(model="sdk-agent", input="two", previous_response_id=first.id)
    with pytest.raises(openai.APIStatusError) as refused:
        client.responses.create(model="sdk-agent", input="x", previous_response_id=first.id)
    assert refused.value.status_code == 501
    assert refused.value.body["code"] == "fork_unsupported"
