"""Sampling knobs through the real `openai` SDK and a real gateway (gateway/sampling.py):
`temperature` and the token limits reach an agent that offers matching config options
(tests/fakes/fake_agents/knobs.py), a value it does not offer and an agent without such options are
ignored, and a value out of range is a 400 naming its field."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import openai
import pytest

from agentao.gateway.config import AgentSpec
from tests.gateway.conftest import LiveGateway


def knob_gateway(factory: Callable[..., LiveGateway], tmp_path: Path) -> LiveGateway:
    argv = (sys.executable, str(Path(__file__).parents[1] / "fakes" / "fake_agents" / "knobs.py"))
    return factory(agents=(AgentSpec("knobs", argv, cwd=str(tmp_path)),))


def ask(client: openai.OpenAI, **knobs: object) -> str:
    reply = client.chat.completions.create(
        model="knobs", messages=[{"role": "user", "content": "hi"}], **knobs
    )
    return reply.choices[0].message.content or ""


def test_knobs_become_the_agents_config_options_where_it_offers_them(
    gateway_factory: Callable[..., LiveGateway], tmp_path: Path
) -> None:
    client = knob_gateway(gateway_factory, tmp_path).openai()
    assert ask(client) == "temperature=1 limit=1024"
    assert ask(client, temperature=0.5, max_tokens=256) == "temperature=0.5 limit=256"
    assert ask(client, temperature=0.7) == "temperature=0.5 limit=256"  # not offered: ignored
    response = client.responses.create(
        model="knobs", input="hi", temperature=0, max_output_tokens=1024
    )
    assert response.output_text == "temperature=0 limit=1024"


def test_an_agent_without_such_options_ignores_them_and_bad_values_are_400(
    gateway_factory: Callable[..., LiveGateway],
) -> None:
    client = gateway_factory().openai()  # our scripted agent: no temperature option
    reply = client.chat.completions.create(
        model="agentao", messages=[{"role": "user", "content": "hi"}], temperature=0.2, top_p=0.9
    )
    assert reply.choices[0].message.content == "Answer one."
    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(
            model="agentao", messages=[{"role": "user", "content": "hi"}], temperature=3
        )
    assert bad.value.body["param"] == "temperature"
    with pytest.raises(openai.BadRequestError) as bad:
        client.responses.create(model="agentao", input="hi", max_output_tokens=0)
    assert bad.value.body["param"] == "max_output_tokens"
