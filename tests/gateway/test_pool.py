"""Agent processes: spread across, restarted after a crash, a dying turn fails clearly."""

from __future__ import annotations

import asyncio
import os
import signal
import uuid

import openai
import pytest

from tests.gateway.conftest import LiveGateway


def slow_chat_stream(gw: LiveGateway, key: str):
    return gw.openai().chat.completions.create(
        model="agentao",
        messages=[{"role": "user", "content": "slow please"}],
        stream=True,
        extra_headers={"X-Session-Id": key},
    )


def test_agent_killed_mid_stream_fails_the_turn_and_the_next_works(gateway_factory) -> None:
    gw = gateway_factory()
    key = "crash-" + uuid.uuid4().hex
    stream = slow_chat_stream(gw, key)
    chunks = iter(stream)
    next(chunks)
    next(chunks)
    os.kill(gw.agent_pid(), signal.SIGKILL)
    with pytest.raises(openai.APIError) as info:
        for _chunk in chunks:
            pass
    assert "agent exited" in info.value.message
    gw.wait_live()
    # The same conversation goes on: its session is reloaded from the agent's store.
    again = gw.openai().chat.completions.create(
        model="agentao",
        messages=[{"role": "user", "content": "hello again"}],
        extra_headers={"X-Session-Id": key},
    )
    assert again.choices[0].message.content == "Answer one."


def test_responses_stream_gets_response_failed_when_the_agent_dies(gateway_factory) -> None:
    gw = gateway_factory()
    stream = gw.openai().responses.create(model="agentao", input="slow please", stream=True)
    types = []
    for event in stream:
        types.append(event.type)
        if event.type == "response.output_text.delta" and types.count(event.type) == 2:
            os.kill(gw.agent_pid(), signal.SIGKILL)
    assert types[-1] == "response.failed"
    assert event.response.error.code == "agent_disconnected"
    gw.wait_live()
    assert gw.openai().responses.create(model="agentao", input="hi").output_text == "Answer one."


def test_sessions_are_spread_across_processes(gateway_factory) -> None:
    gw = gateway_factory(processes=2)
    client = gw.openai()
    for i in range(4):
        client.chat.completions.create(
            model="agentao", messages=[{"role": "user", "content": f"conversation {i}"}]
        )
    hosted = [len(w.sessions) for w in gw.gateway.pools["agentao"].workers]
    assert hosted == [2, 2]
    with gw.http() as http:
        health = http.get("/healthz").json()
    assert health["status"] == "ok" and health["agents"]["agentao"]["live"] == 2


def test_sessions_opened_at_once_are_spread_across_processes(gateway_factory) -> None:
    """Sessions opened together (a burst of new conversations) go to different
    processes: a session being opened counts for its process before the agent answers."""
    gw = gateway_factory(processes=2)
    pool = gw.gateway.pools["agentao"]

    async def open_four() -> None:
        await asyncio.gather(*(pool.new_session(None, "all") for _ in range(4)))

    gw.run(open_four())
    assert [len(w.sessions) for w in pool.workers] == [2, 2]


def test_an_agent_that_cannot_start_is_a_503(gateway_factory, tmp_path) -> None:
    from agentao.gateway.config import AgentSpec, Limits

    broken = AgentSpec("broken", ("/nonexistent/agent",), cwd=str(tmp_path))
    gw = gateway_factory(
        agents=(broken,), limits=Limits(start_timeout_seconds=0.3, restart_backoff_seconds=0.1)
    )
    with pytest.raises(openai.InternalServerError) as info:
        gw.openai().chat.completions.create(
            model="broken", messages=[{"role": "user", "content": "hi"}]
        )
    assert info.value.status_code == 503
    with gw.http() as http:
        assert http.get("/healthz").json()["status"] == "degraded"


def test_idle_sessions_are_closed_and_reloaded_on_demand(gateway_factory) -> None:
    from agentao.gateway.config import Limits

    gw = gateway_factory(limits=Limits(session_idle_seconds=0.2))
    client = gw.openai(timeout=5)
    key = {"X-Session-Id": "idle-" + uuid.uuid4().hex}
    first = client.chat.completions.create(
        model="agentao", messages=[{"role": "user", "content": "hi"}], extra_headers=key
    )
    assert first.choices[0].message.content == "Answer one."
    pool = gw.gateway.pools["agentao"]
    worker = pool.workers[0]
    for word in ("back", "again"):  # the same agent process closes and reloads it twice
        gw.run(pool.wait_until(lambda: not worker.sessions))  # the sweeper closed it
        again = client.chat.completions.create(
            model="agentao", messages=[{"role": "user", "content": word}], extra_headers=key
        )
        assert again.choices[0].message.content  # reloaded with session/load, and answered
        assert len(worker.sessions) == 1
    with gw.http() as http:
        conv = http.get("/v1/conversations").json()["data"][0]
    assert conv["turn_count"] == 3
