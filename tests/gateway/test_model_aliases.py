"""`[models]` aliases (config.py, service.py `resolve_model`): a program configured for
`gpt-4o` reaches an agent through the real `openai` SDK and a real gateway; `/v1/models`
lists the aliases; an unknown model is a 404 whose message lists what exists."""

from __future__ import annotations

from collections.abc import Callable

import openai
import pytest

from agentao.gateway.config import ConfigError, config_from_dict, with_overrides
from tests.gateway.conftest import LiveGateway

ALIASES = (("gpt-4o", "agentao"), ("gpt-4o-mini", "agentao/scripted"))


def test_an_alias_answers_as_its_agent_under_the_name_asked(
    gateway_factory: Callable[..., LiveGateway],
) -> None:
    client = gateway_factory(models=ALIASES).openai()
    listed = {m.id: m for m in client.models.list()}
    assert {"agentao", "gpt-4o", "gpt-4o-mini"} <= set(listed)
    assert listed["gpt-4o"].x_alias_of == "agentao"
    assert listed["gpt-4o-mini"].x_alias_of == "agentao/scripted"
    chat = client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
    )
    assert chat.model == "gpt-4o" and chat.choices[0].message.content == "Answer one."
    streamed = client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    assert {c.model for c in streamed} == {"gpt-4o"}
    response = client.responses.create(model="gpt-4o", input="hi")
    assert response.model == "gpt-4o" and response.output_text


def test_an_unknown_model_is_a_404_listing_what_exists(
    gateway_factory: Callable[..., LiveGateway],
) -> None:
    client = gateway_factory(models=ALIASES).openai()
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(model="gpt-5", messages=[{"role": "user", "content": "x"}])
    error = missing.value.body
    assert error["code"] == "model_not_found" and error["param"] == "model"
    assert "models: agentao, gpt-4o, gpt-4o-mini" in error["message"]


def test_aliases_in_the_config_file_are_checked() -> None:
    config = config_from_dict({"models": {"gpt-4o": "agentao", "small": "agentao/m-1"}})
    assert config.models == (("gpt-4o", "agentao"), ("small", "agentao/m-1"))
    with_overrides(config)  # the default agent is `agentao`: both name it
    for bad, says in [
        ({"gpt-4o": 4}, "must name an agent"),
        ({"gpt 4o": "agentao"}, "is not a model name"),
        ({"gpt-4o": "../x"}, "is not a model name"),
    ]:
        with pytest.raises(ConfigError, match=says):
            config_from_dict({"models": bad})
    with pytest.raises(ConfigError, match="not served"):
        with_overrides(config_from_dict({"models": {"gpt-4o": "qwen"}}))
    with pytest.raises(ConfigError, match="would hide the agent"):
        with_overrides(
            config_from_dict({"models": {"qwen": "agentao"}}), agents=["qwen=qwen --acp"]
        )
