"""`POST /v1/messages/count_tokens` (gateway/anthropic_count.py) as the real `anthropic`
SDK calls it (`client.messages.count_tokens`): an estimate, said to be one; checked as
`/v1/messages` checks a request; keys held to their agents; nothing reaches the agent."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import anthropic
import pytest

from agentao.gateway.anthropic_count import IMAGE_TOKENS
from agentao.gateway.config import ApiKey
from tests.gateway.conftest import LiveGateway

WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}
PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


def key(name: str, **kw: Any) -> ApiKey:
    return ApiKey(name, hashlib.sha256(f"sk-{name}".encode()).hexdigest(), **kw)


@pytest.fixture
def gw(gateway_factory: Callable[..., LiveGateway]) -> LiveGateway:
    keys = (key("alice", ceiling="all"), key("other", agents=frozenset({"nobody"})))
    return gateway_factory(keys=keys)


def client_of(gw: LiveGateway, secret: str = "sk-alice") -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gw.url, api_key=secret, max_retries=0, timeout=30)


def test_the_sdk_counts_a_request_and_is_told_it_is_an_estimate(gw: LiveGateway) -> None:
    client = client_of(gw)
    text = "x" * 400  # 100 tokens at four characters a token
    raw = client.messages.with_raw_response.count_tokens(
        model="agentao", messages=[{"role": "user", "content": text}]
    )
    count = raw.parse()
    assert count.input_tokens == 100
    assert count.x_estimated is True  # type: ignore[attr-defined]  # the SDK keeps it
    assert raw.headers["x-token-count"] == "estimate"
    more = client.messages.count_tokens(
        model="agentao",
        system="y" * 40,
        tools=[WEATHER],
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": text},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": PIXEL},
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "get_weather", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "z" * 40}],
            },
        ],
    )
    # The system, the call, its result and the tools' schemas count; the image at a flat rate.
    assert more.input_tokens > 100 + 10 + 10 + IMAGE_TOKENS
    assert gw.http("sk-alice").get("/v1/conversations").json()["data"] == []  # no turn ran


def test_a_count_is_checked_as_a_message_is(gw: LiveGateway) -> None:
    client = client_of(gw)
    with pytest.raises(anthropic.NotFoundError) as unknown:
        client.messages.count_tokens(model="gpt-9", messages=[{"role": "user", "content": "hi"}])
    assert unknown.value.body["error"]["code"] == "model_not_found"
    with pytest.raises(anthropic.BadRequestError) as bad:
        client.messages.count_tokens(
            model="agentao", messages=[{"role": "user", "content": [{"type": "video"}]}]
        )
    assert bad.value.body["error"]["param"] == "messages[0].content[0].type"
    with pytest.raises(anthropic.BadRequestError) as no_messages:
        client.messages.count_tokens(model="agentao", messages=[])
    assert no_messages.value.body["error"]["param"] == "messages"
    with pytest.raises(anthropic.AuthenticationError):
        client_of(gw, "sk-wrong").messages.count_tokens(
            model="agentao", messages=[{"role": "user", "content": "hi"}]
        )
    with pytest.raises(anthropic.PermissionDeniedError):  # a key held to other agents
        client_of(gw, "sk-other").messages.count_tokens(
            model="agentao", messages=[{"role": "user", "content": "hi"}]
        )
