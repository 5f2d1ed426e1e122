"""`[agents.NAME] busy = "queue"`: a chat request for a conversation whose turn runs waits
its turn instead of a 409 (gateway/turn_line.py), against a real gateway and our agent.

Two overlapping requests both succeed, in order; a waiting client that disconnects leaves
the line (its prompt never reaches the agent); one that waits past `queue_wait_seconds`
gets the 409 after all; agents left at the default still answer 409 (test_openai_chat.py).
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from agentao.gateway.config import ConfigError, load_config
from agentao.gateway.limits import Limits
from tests.gateway.conftest import scripted_spec
from tests.waiting import until

pytestmark = pytest.mark.timeout(60)

SCRIPT = [
    {"match": "slow", "text": {"repeat": "tick ", "count": 100}, "delay": 0.01},
    {"match": "long", "text": {"repeat": "tock ", "count": 3000}, "delay": 0.01},  # closed early
    {"text": "Answer one."},
    {"text": "Answer two."},
]


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def queueing(gateway_factory: Any, tmp_path: Path, **limits: Any) -> Any:
    spec = scripted_spec(tmp_path, SCRIPT, busy="queue")
    return gateway_factory(agents=(spec,), limits=Limits(**limits))


async def test_two_overlapping_requests_both_succeed_in_order(
    gateway_factory: Any, tmp_path: Path
) -> None:
    gw = queueing(gateway_factory, tmp_path)
    client = gw.openai()
    key = {"X-Session-Id": "line-" + uuid.uuid4().hex}
    stream = client.chat.completions.create(
        model="agentao", messages=[user("slow please")], stream=True, extra_headers=key
    )
    chunks = iter(stream)
    opening = next(chunks).choices[0].delta.content or ""  # the first turn runs
    second = asyncio.ensure_future(
        asyncio.to_thread(
            client.chat.completions.create,
            model="agentao", messages=[user("and then?")], extra_headers=key,
        )
    )  # fmt: skip
    await until(lambda: gw.gateway.line.waiting == 1, "the second request in line")
    first = opening + "".join(c.choices[0].delta.content or "" for c in chunks)
    reply = await second
    assert first.count("tick") == 100  # the first turn ran to its end
    assert reply.choices[0].message.content == "Answer one."
    assert gw.gateway.line.waiting == 0


async def test_a_client_that_leaves_the_line_never_reaches_the_agent(
    gateway_factory: Any, tmp_path: Path
) -> None:
    gw = queueing(gateway_factory, tmp_path)
    key = {"X-Session-Id": "gone-" + uuid.uuid4().hex}
    stream = gw.openai().chat.completions.create(
        model="agentao", messages=[user("long please")], stream=True, extra_headers=key
    )
    next(iter(stream))
    async with httpx.AsyncClient(base_url=gw.url, timeout=30) as http:
        body = {"model": "agentao", "messages": [user("never mind")]}
        leaving = asyncio.ensure_future(http.post("/v1/chat/completions", json=body, headers=key))
        await until(lambda: gw.gateway.line.waiting == 1, "the request in line")
        leaving.cancel()  # the client goes away: its connection closes
        await until(lambda: gw.gateway.line.waiting == 0, "the request out of the line")
    stream.close()  # the long turn is cancelled: the next request waits for that
    after = gw.openai().chat.completions.create(
        model="agentao", messages=[user("still there?")], extra_headers=key
    )
    assert after.choices[0].message.content == "Answer one."  # the left one took no turn


def test_a_request_that_waits_too_long_gets_the_409(gateway_factory: Any, tmp_path: Path) -> None:
    gw = queueing(gateway_factory, tmp_path, queue_wait_seconds=0)
    client = gw.openai()
    key = {"X-Session-Id": "long-" + uuid.uuid4().hex}
    stream = client.chat.completions.create(
        model="agentao", messages=[user("long please")], stream=True, extra_headers=key
    )
    next(iter(stream))
    with pytest.raises(openai.ConflictError) as info:
        client.chat.completions.create(model="agentao", messages=[user("hi")], extra_headers=key)
    assert info.value.body["code"] == "session_busy"
    stream.close()


def test_busy_is_reject_or_queue(tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text('[agents.a]\ncommand = ["agentao", "--acp"]\nbusy = "wait"\n')
    with pytest.raises(ConfigError, match="busy must be one of reject, queue"):
        load_config(str(config))
    config.write_text('[agents.a]\ncommand = ["agentao", "--acp"]\nbusy = "queue"\n')
    assert load_config(str(config)).agents[0].busy == "queue"
