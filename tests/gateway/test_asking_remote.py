"""The agent's `ask_user` with a remote ACP client attached too (issue 25; asking.py):
asked at the desk (the log's `question-request`) and of the remote client at once, the
first answer wins and the other side's question is withdrawn. Our client over WebSocket,
our agent scripted; the person answers over HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentao.client import AgentUrl, Client, Handlers
from tests.gateway.conftest import LiveGateway, scripted_spec
from tests.gateway.test_asking import ASKING

pytestmark = pytest.mark.timeout(60)


def acp(gw: LiveGateway) -> AgentUrl:
    return AgentUrl(f"ws://127.0.0.1:{gw.port}/acp")


async def open_question(http: httpx.AsyncClient) -> dict[str, Any]:
    """The one open question, as the desk lists it (it is in the log before the remote
    client is asked: the desk writes its frame first)."""
    [question] = (await http.get("/v1/questions")).json()["data"]
    return question


async def verdict(http: httpx.AsyncClient, task_id: str) -> dict[str, Any]:
    events = (await http.get(f"/v1/tasks/{task_id}/events")).json()["data"]
    [answer] = [e for e in events if e["type"] == "question-response"]
    return answer


async def test_a_persons_answer_wins_and_the_remote_question_is_withdrawn(
    gateway_factory: Callable[..., LiveGateway], tmp_path: Path
) -> None:
    gw = gateway_factory(agents=(scripted_spec(tmp_path, ASKING),))
    withdrawn = asyncio.Event()
    asked: dict[str, Any] = {}

    async def remote_person(session_id: str, question: str) -> str:
        # The withdrawal may come as soon as the desk has the answer, while this handler
        # is still closing its HTTP client: it is caught wherever it lands.
        try:
            async with httpx.AsyncClient(base_url=gw.url) as http:
                asked.update(await open_question(http))
                path = f"/v1/questions/{asked['requestId']}"
                reply = await http.post(path, json={"answer": "from the desk"})
                assert reply.status_code == 200, reply.text
            await asyncio.Event().wait()  # never answers: the desk's answer won
        except asyncio.CancelledError:
            withdrawn.set()
            raise
        return "never"

    handlers = Handlers(ask_user=remote_person)
    async with Client(acp(gw), protocol=1, handlers=handlers) as client:
        session = await client.new_session(gw.config.agents[0].cwd)
        [_ async for _ in session.prompt("paint it")]
        await asyncio.wait_for(withdrawn.wait(), 30)
    ask = session.tool_calls["ask-1"]
    assert ask.status == "completed" and "from the desk" in str(ask.raw)
    async with httpx.AsyncClient(base_url=gw.url) as http:
        answer = await verdict(http, asked["taskId"])
    assert (answer["answer"], answer["by"]) == ("from the desk", "human")


async def test_a_remote_clients_answer_wins_and_closes_the_desks_question(
    gateway_factory: Callable[..., LiveGateway], tmp_path: Path
) -> None:
    gw = gateway_factory(agents=(scripted_spec(tmp_path, ASKING),))
    asked: dict[str, Any] = {}

    async def remote_person(session_id: str, question: str) -> str:
        async with httpx.AsyncClient(base_url=gw.url) as http:
            asked.update(await open_question(http))
        return "from the remote client"

    handlers = Handlers(ask_user=remote_person)
    async with Client(acp(gw), protocol=1, handlers=handlers) as client:
        session = await client.new_session(gw.config.agents[0].cwd)
        [_ async for _ in session.prompt("paint it")]
    assert "from the remote client" in str(session.tool_calls["ask-1"].raw)
    async with httpx.AsyncClient(base_url=gw.url) as http:
        answer = await verdict(http, asked["taskId"])
        late = await http.post(f"/v1/questions/{asked['requestId']}", json={"answer": "late"})
        assert (await http.get("/v1/questions")).json()["data"] == []
    assert (answer["answer"], answer["by"]) == ("from the remote client", "acp")
    assert late.status_code == 404
