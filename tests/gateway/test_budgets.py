"""Per-key token budgets (`[[keys]] tokens_per_day`, gateway/budgets.py) through the real
`openai` SDK and a real gateway: a key past its budget gets 429 with Retry-After before
a new turn starts, another key goes on; the count is the agent's reported usage, else
the estimate the answer's usage shows."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import openai
import pytest

from agentao.gateway.budgets import DAY_SECONDS, TokenBudgets
from agentao.gateway.config import ApiKey, ConfigError, config_from_dict
from tests.gateway.conftest import LiveGateway


def key(name: str, **kw: object) -> ApiKey:
    return ApiKey(name, hashlib.sha256(f"sk-{name}".encode()).hexdigest(), **kw)  # type: ignore[arg-type]


def hi(client: openai.OpenAI) -> openai.types.chat.ChatCompletion:
    return client.chat.completions.create(
        model="agentao", messages=[{"role": "user", "content": "hi"}]
    )


def test_a_key_past_its_daily_budget_is_429_with_retry_after(
    gateway_factory: Callable[..., LiveGateway],
) -> None:
    keys = (key("alice", ceiling="all", policy="all", tokens_per_day=5), key("bob", ceiling="all"))
    gw = gateway_factory(keys=keys)
    alice, bob = gw.openai("sk-alice"), gw.openai("sk-bob")
    first = hi(alice)  # within the budget: answered, and its tokens counted
    assert first.usage.total_tokens >= 5 and first.usage.x_estimated is True
    assert gw.gateway.budgets.used("alice") == first.usage.total_tokens
    with pytest.raises(openai.RateLimitError) as refused:
        hi(alice)
    assert refused.value.body["code"] == "token_budget_exceeded"
    assert 0 < int(refused.value.response.headers["retry-after"]) <= DAY_SECONDS
    with pytest.raises(openai.RateLimitError):
        alice.responses.create(model="agentao", input="hi")
    assert hi(bob).choices[0].message.content  # another key, no budget: unaffected


def test_the_count_starts_over_each_utc_day() -> None:
    now = [DAY_SECONDS * 100 + 10.0]
    budgets = TokenBudgets({"alice": 10}, clock=lambda: now[0])

    class Turn:
        result = None
        prompt = [{"type": "text", "text": "x" * 400}]  # about 100 tokens, estimated

        class mapper:  # stands for a TurnMapper
            full_text = ""
            full_reasoning = ""

    budgets.charge("alice", Turn())
    with pytest.raises(Exception, match="tokens for today") as refused:
        budgets.check("alice")
    assert refused.value.headers["Retry-After"] == str(DAY_SECONDS - 10)
    now[0] += DAY_SECONDS
    budgets.check("alice")  # a new day


def test_a_budget_is_a_whole_number_above_zero() -> None:
    entry = {"name": "a", "key": "sk-a", "tokens_per_day": 100}
    assert config_from_dict({"keys": [entry]}).keys[0].tokens_per_day == 100
    for bad in (0, -1, 1.5, True, "100"):
        with pytest.raises(ConfigError, match="tokens_per_day must be"):
            config_from_dict({"keys": [{**entry, "tokens_per_day": bad}]})
