"""Per-key daily budgets (`[[keys]] tokens_per_day`, `usd_per_day`, gateway/budgets.py)
through the real `openai` and `anthropic` SDKs and real gateways: a key past its budget
gets 429 with Retry-After before a new turn starts, another key goes on; the count is the
agent's reported usage, else the estimate the answer's usage shows, priced by `[prices]`;
it is kept in the store, so a restart keeps it and replicas on one PostgreSQL share it."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anthropic
import openai
import pytest
from websockets.sync.client import connect

from agentao.client import AgentError, AgentUrl, Client
from agentao.gateway.budgets import DAY_SECONDS, Budgets
from agentao.gateway.config import AgentSpec, ApiKey, ConfigError, check_aliases, config_from_dict
from agentao.gateway.prices import Price, Prices
from agentao.store.gateway import open_gateway_store
from agentao.store.spend import SpendStore, Spent
from tests.gateway.conftest import LiveGateway
from tests.gateway.cost_agent import COST_PER_TURN

COST_AGENT = Path(__file__).with_name("cost_agent.py")  # reports its own cost


def key(name: str, **kw: object) -> ApiKey:
    return ApiKey(name, hashlib.sha256(f"sk-{name}".encode()).hexdigest(), **kw)  # type: ignore[arg-type]


def hi(client: openai.OpenAI, text: str = "hi") -> openai.types.chat.ChatCompletion:
    return client.chat.completions.create(
        model="agentao", messages=[{"role": "user", "content": text}]
    )


def spent(gw: LiveGateway, owner: str) -> tuple[int, float]:
    today = gw.run(gw.gateway.budgets.spent(owner))
    return today.tokens, today.usd


def test_a_key_past_its_daily_budget_is_429_with_retry_after(
    gateway_factory: Callable[..., LiveGateway],
) -> None:
    keys = (key("alice", ceiling="all", policy="all", tokens_per_day=5), key("bob", ceiling="all"))
    gw = gateway_factory(keys=keys)
    alice, bob = gw.openai("sk-alice"), gw.openai("sk-bob")
    first = hi(alice)  # within the budget: answered, and its tokens counted
    assert first.usage.total_tokens >= 5 and first.usage.x_estimated is True
    assert spent(gw, "alice")[0] == first.usage.total_tokens
    with pytest.raises(openai.RateLimitError) as refused:
        hi(alice)
    assert refused.value.body["code"] == "token_budget_exceeded"
    assert 0 < int(refused.value.response.headers["retry-after"]) <= DAY_SECONDS
    with pytest.raises(openai.RateLimitError):
        alice.responses.create(model="agentao", input="hi")
    messages = anthropic.Anthropic(base_url=gw.url, api_key="sk-alice", max_retries=0)
    with pytest.raises(anthropic.RateLimitError):  # the Anthropic face is held to it too
        messages.messages.create(
            model="agentao", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        )
    assert hi(bob).choices[0].message.content  # another key, no budget: unaffected


def test_a_restart_keeps_the_days_count(
    gateway_factory: Callable[..., LiveGateway], tmp_path: Path
) -> None:
    keys = (key("alice", ceiling="all", policy="all", tokens_per_day=5),)
    store = tmp_path / "gw.sqlite3"
    first = gateway_factory(keys=keys, store=store)
    used = hi(first.openai("sk-alice")).usage.total_tokens
    first.stop()
    again = gateway_factory(keys=keys, store=store)  # the same store, a new process's count
    assert spent(again, "alice")[0] == used
    with pytest.raises(openai.RateLimitError) as refused:
        hi(again.openai("sk-alice"))
    assert refused.value.body["code"] == "token_budget_exceeded"


def test_a_cost_budget_prices_tokens_by_the_price_table(
    gateway_factory: Callable[..., LiveGateway],
) -> None:
    # $1000 a million tokens each way: a turn of about ten tokens costs about a cent.
    prices = Prices({"agentao": Price(1000.0, 1000.0)})
    keys = (key("alice", ceiling="all", policy="all", usd_per_day=0.001),)
    gw = gateway_factory(keys=keys, prices=prices)
    first = hi(gw.openai("sk-alice"))
    tokens, usd = spent(gw, "alice")
    assert tokens == first.usage.total_tokens
    assert usd == pytest.approx(first.usage.total_tokens * 1000 / 1_000_000)
    assert first.usage.x_cost_usd == pytest.approx(usd)  # the answer says what it cost
    with pytest.raises(openai.RateLimitError) as refused:
        hi(gw.openai("sk-alice"))
    assert refused.value.body["code"] == "usd_budget_exceeded"
    assert "$0.001" in refused.value.body["message"]
    assert int(refused.value.response.headers["retry-after"]) > 0


def test_every_face_s_usage_shows_the_turn_s_cost(
    gateway_factory: Callable[..., LiveGateway],
) -> None:
    gw = gateway_factory(prices=Prices({"agentao": Price(2.0, 8.0)}))  # keyless: no budget

    def cost(inputs: int, outputs: int) -> float:
        return pytest.approx((inputs * 2.0 + outputs * 8.0) / 1_000_000)

    chat = hi(gw.openai()).usage
    assert chat.x_cost_usd == cost(chat.prompt_tokens, chat.completion_tokens)
    streamed = gw.openai().chat.completions.create(
        model="agentao",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    last = [chunk for chunk in streamed][-1].usage
    assert last.x_cost_usd == cost(last.prompt_tokens, last.completion_tokens)
    answer = gw.openai().responses.create(model="agentao", input="hi").usage
    assert answer.x_cost_usd == cost(answer.input_tokens, answer.output_tokens)
    client = anthropic.Anthropic(base_url=gw.url, api_key="unused", max_retries=0)
    message = client.messages.create(
        model="agentao", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    ).usage
    assert message.x_cost_usd == cost(message.input_tokens, message.output_tokens)  # type: ignore[attr-defined]
    unpriced = gateway_factory()  # no [prices]: no cost said
    assert "x_cost_usd" not in hi(unpriced.openai()).usage.model_dump()


def test_an_agent_without_a_price_costs_nothing_counted(
    gateway_factory: Callable[..., LiveGateway],
) -> None:
    keys = (key("alice", ceiling="all", policy="all", usd_per_day=0.001),)
    gw = gateway_factory(keys=keys, prices=Prices({"another": Price(1000.0, 1000.0)}))
    for _ in range(2):
        assert hi(gw.openai("sk-alice")).choices[0].message.content
    assert spent(gw, "alice")[1] == 0.0


def test_the_count_starts_over_each_utc_day(tmp_path: Path) -> None:
    now = [DAY_SECONDS * 100 + 10.0]
    store = open_gateway_store(tmp_path / "gw.sqlite3")
    budgets = Budgets(
        [key("alice", tokens_per_day=10)], store.spend, Prices(), clock=lambda: now[0]
    )

    async def run() -> None:
        await store.spend.charge("alice", budgets.today(), 100, 0.0)
        with pytest.raises(Exception, match="tokens for today") as refused:
            await budgets.check("alice")
        assert refused.value.headers["Retry-After"] == str(DAY_SECONDS - 10)
        now[0] += DAY_SECONDS
        await budgets.check("alice")  # a new day
        await store.close()

    asyncio.run(run())


class FlakySpend:
    """The real SQLite spend, whose charges fail while `away` (the database away)."""

    def __init__(self, spend: SpendStore) -> None:
        self.spend, self.away = spend, True

    async def charge(self, owner: str, day: int, tokens: int, usd: float) -> None:
        if self.away:
            raise OSError("the database is away")
        await self.spend.charge(owner, day, tokens, usd)

    async def spent(self, owner: str, day: int) -> Spent:
        return await self.spend.spent(owner, day)


def test_a_charge_the_store_refuses_is_owed_counted_and_stored_later(tmp_path: Path) -> None:
    """A turn charged while the store is away still counts: this replica refuses the
    key's next turn, and stores the charge once the store is back (once, not twice)."""
    store = open_gateway_store(tmp_path / "gw.sqlite3")
    flaky = FlakySpend(store.spend)
    budgets = Budgets([key("alice", tokens_per_day=100)], flaky, Prices())

    async def run() -> None:
        await budgets.record("alice", 150, 0.25)  # logged, not raised: the answer stands
        with pytest.raises(Exception, match="tokens for today"):
            await budgets.check("alice")  # counted although not stored
        assert (await store.spend.spent("alice", budgets.today())).tokens == 0
        flaky.away = False
        assert (await budgets.spent("alice")).tokens == 150  # stored now, owed no more
        assert (await budgets.spent("alice")).tokens == 150
        stored = await store.spend.spent("alice", budgets.today())
        assert (stored.tokens, stored.usd) == (150, 0.25)
        await store.close()

    asyncio.run(run())


def test_charges_at_once_are_all_counted(tmp_path: Path) -> None:
    """Every charge is an add in the database: many at once lose none."""
    store = open_gateway_store(tmp_path / "gw.sqlite3")

    async def run() -> None:
        await asyncio.gather(*(store.spend.charge("alice", 7, 3, 0.5) for _ in range(50)))
        today = await store.spend.spent("alice", 7)
        assert (today.tokens, today.usd) == (150, 25.0)
        assert (await store.spend.spent("alice", 8)).tokens == 0  # another day
        await store.close()

    asyncio.run(run())


@pytest.mark.timeout(120)
def test_two_replicas_share_one_budget_and_no_charge_is_lost(
    gateway_factory: Callable[..., LiveGateway], pg_url: str
) -> None:
    """The attack: a key with a nearly spent budget sends turns at once to two replicas
    of one PostgreSQL store. Each turn admitted runs and is charged in full (none lost to
    the other's charge); after them both replicas refuse, and the day ends at most the
    budget plus the admitted turns' own cost."""
    budget = 40
    keys = (key("alice", ceiling="all", policy="all", tokens_per_day=budget),)
    a, b = gateway_factory(keys=keys, store=pg_url), gateway_factory(keys=keys, store=pg_url)
    spend = a.gateway.store.spend
    a.run(spend.charge("alice", a.gateway.budgets.today(), budget - 1, 0.0))
    clients = [a.openai("sk-alice"), b.openai("sk-alice")] * 3

    def one(client: openai.OpenAI) -> int:
        try:
            return hi(client, "hello there").usage.total_tokens
        except openai.RateLimitError:
            return 0

    with ThreadPoolExecutor(len(clients)) as pool:
        costs = list(pool.map(one, clients))
    admitted = [c for c in costs if c]
    assert admitted  # the budget was not spent: the first turns were let in
    for gw in (a, b):  # every admitted turn counted, on either replica
        assert spent(gw, "alice")[0] == budget - 1 + sum(admitted)
        with pytest.raises(openai.RateLimitError):
            hi(gw.openai("sk-alice"))
    assert spent(a, "alice")[0] <= budget - 1 + sum(admitted)


def test_budgets_are_numbers_above_zero() -> None:
    entry = {"name": "a", "key": "sk-a", "tokens_per_day": 100}
    assert config_from_dict({"keys": [entry]}).keys[0].tokens_per_day == 100
    for bad in (0, -1, 1.5, True, "100"):
        with pytest.raises(ConfigError, match="tokens_per_day must be"):
            config_from_dict({"keys": [{**entry, "tokens_per_day": bad}]})
    usd = {"name": "a", "key": "sk-a", "usd_per_day": 2}
    assert config_from_dict({"keys": [usd]}).keys[0].usd_per_day == 2.0
    for bad in (0, -1, True, "2", float("inf"), float("nan")):
        with pytest.raises(ConfigError, match="usd_per_day must be"):
            config_from_dict({"keys": [{**usd, "usd_per_day": bad}]})


def test_a_price_table_is_checked() -> None:
    good = {"input_usd_per_million": 2.5, "output_usd_per_million": 10}
    prices = config_from_dict({"prices": {"agentao": good, "agentao/mini": good}}).prices
    assert prices.of("agentao", "mini") is not None and prices.of("other", None) is None
    assert prices.of("agentao", "big") == Price(2.5, 10.0)
    for bad in (
        {"input_usd_per_million": 1},  # missing one
        {**good, "cached_usd_per_million": 1},  # unknown
        {**good, "input_usd_per_million": -1},
        {**good, "output_usd_per_million": "1"},
        "2.5",
    ):
        with pytest.raises(ConfigError, match=r"\[prices\] 'agentao'"):
            config_from_dict({"prices": {"agentao": bad}})
    agents = {"agents": {"agentao": {"command": "agentao --acp"}}}
    check_aliases(config_from_dict({**agents, "prices": {"agentao/mini": good}}))
    with pytest.raises(ConfigError, match=r"\[prices\] 'agentoa' names no served agent"):
        check_aliases(config_from_dict({**agents, "prices": {"agentoa": good}}))  # misspelt


def test_a_key_reads_its_budgets_and_today_s_spend(
    gateway_factory: Callable[..., LiveGateway],
) -> None:
    keys = (
        key("alice", ceiling="all", policy="all", tokens_per_day=1000, usd_per_day=1.5),
        key("bob", ceiling="all"),
    )
    gw = gateway_factory(keys=keys, prices=Prices({"agentao": Price(3.0, 15.0)}))
    alice = gw.http("sk-alice")
    before = alice.get("/v1/keys/me").json()
    assert before["name"] == "alice" and before["object"] == "key"
    assert before["budgets"] == {"tokens_per_day": 1000, "usd_per_day": 1.5}
    assert (before["today"]["tokens"], before["today"]["usd"]) == (0, 0.0)
    assert 0 < before["today"]["resets_in_seconds"] <= DAY_SECONDS
    hi(gw.openai("sk-alice"))
    hi(gw.openai("sk-bob"))
    after = alice.get("/v1/keys/me").json()["today"]
    assert (after["tokens"], after["usd"]) == spent(gw, "alice") and after["tokens"] > 0
    bob = gw.http("sk-bob").get("/v1/keys/me").json()  # its own only, and no budget
    assert bob["name"] == "bob" and bob["budgets"] == {"tokens_per_day": None, "usd_per_day": None}
    assert bob["today"] is None
    assert gw.http("sk-nobody").get("/v1/keys/me").status_code == 401


async def test_every_way_to_start_a_turn_is_held_to_the_budget(
    gateway_factory: Callable[..., LiveGateway],
) -> None:
    """The attack: a key past its budget on the OpenAI faces tries the task stream (the
    web UI's) and remote ACP instead. Both refuse it before the agent hears of a turn."""
    keys = (key("alice", ceiling="all", policy="all", tokens_per_day=10),)
    gw = gateway_factory(keys=keys)
    gw.run(gw.gateway.store.spend.charge("alice", gw.gateway.budgets.today(), 10, 0.0))
    task = gw.http("sk-alice").post("/v1/tasks", json={"agent": "agentao", "prompt": "hi"})
    assert task.status_code == 429 and task.json()["error"]["code"] == "token_budget_exceeded"
    assert int(task.headers["retry-after"]) > 0
    url = AgentUrl(f"http://127.0.0.1:{gw.port}/acp", api_key="sk-alice")
    async with Client(url) as client:
        session = await client.new_session(gw.config.agents[0].cwd)  # opening costs nothing
        with pytest.raises(AgentError) as refused:
            async for _event in session.prompt("hi"):
                pass
    assert refused.value.code == -32600
    assert refused.value.data["reason"] == "token_budget_exceeded"
    assert 0 < refused.value.data["retryAfter"] <= DAY_SECONDS
    assert gw.run(gw.gateway.store.list_conversations("alice", 10))[0].turn_count == 0


def test_a_task_stream_turn_is_charged_what_it_said(
    gateway_factory: Callable[..., LiveGateway],
) -> None:
    """A turn no OpenAI answer maps (the web UI's, remote ACP's) is estimated from what
    its session's view holds: the same count as the same turn answered on chat."""
    keys = (key("alice", ceiling="all", policy="all", tokens_per_day=10_000),)
    gw = gateway_factory(keys=keys)
    chat = hi(gw.openai("sk-alice"), "hello").usage.total_tokens  # "Answer one." on a new session
    http = gw.http("sk-alice")
    task = http.post("/v1/tasks", json={"agent": "agentao", "prompt": "hello"}).json()
    with connect(
        gw.ws_url(task["stream_url"]), additional_headers={"Authorization": "Bearer sk-alice"}
    ) as ws:
        assert [json.loads(m) for m in ws][-1]["type"] == "task-ended"
    assert spent(gw, "alice")[0] == 2 * chat


def test_an_agent_s_own_cost_report_is_charged_a_turn_at_a_time(
    gateway_factory: Callable[..., LiveGateway], tmp_path: Path
) -> None:
    """An agent that reports its session's total cost (`usage_update.cost`): each turn is
    charged what it added, not the total, and that wins over `[prices]`."""
    agent = AgentSpec("cost", (sys.executable, str(COST_AGENT)), cwd=str(tmp_path))
    keys = (key("alice", ceiling="all", policy="all", usd_per_day=0.05),)
    gw = gateway_factory(agents=(agent,), keys=keys, prices=Prices({"cost": Price(1e6, 1e6)}))
    client = gw.openai("sk-alice")
    session = {"X-Session-Id": "priced"}  # one session: its total grows 0.03 a turn

    def turn() -> openai.types.chat.ChatCompletion:
        return client.chat.completions.create(
            model="cost", messages=[{"role": "user", "content": "hi"}], extra_headers=session
        )

    assert turn().usage.x_cost_usd == pytest.approx(COST_PER_TURN)
    assert spent(gw, "alice")[1] == pytest.approx(COST_PER_TURN)
    assert turn().usage.x_cost_usd == pytest.approx(COST_PER_TURN)  # its total less the last
    assert spent(gw, "alice")[1] == pytest.approx(2 * COST_PER_TURN)
    with pytest.raises(openai.RateLimitError) as refused:
        turn()
    assert refused.value.body["code"] == "usd_budget_exceeded"
