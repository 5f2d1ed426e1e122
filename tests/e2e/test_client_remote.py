"""`agentao.client` with an agent at a URL: HTTP with SSE, and WebSocket.

The server is the official SDK's own (`acp.http.create_asgi_app`) serving an agent
written with the SDK (tests/fakes/sdk_agent.py), under uvicorn on 127.0.0.1: a
third-party remote agent, so what is tested is interop, not agreement with ourselves.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentao.client import (
    AgentUrl,
    Client,
    ClientPolicy,
    HandshakeError,
    PermissionDecision,
    TurnEnd,
)
from agentao.client.remote import SseParser, is_agent_url
from tests.fakes.sdk_agent import SdkServer

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def server() -> Iterator[SdkServer]:
    with SdkServer() as running:
        yield running


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_a_streamed_turn_in_order(server: SdkServer, scheme: str, tmp_path) -> None:
    async with Client(AgentUrl(server.url(scheme))) as client:
        session = await client.new_session(str(tmp_path))
        events = [event async for event in session.prompt("chunks 300")]
    texts = [e.text for e in events if not isinstance(e, TurnEnd)]
    assert texts == [str(i) for i in range(300)]  # every update, in order, before the end
    assert isinstance(events[-1], TurnEnd) and events[-1].stop_reason == "end_turn"


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_the_agents_requests_reach_us_and_our_answers_reach_it(
    server: SdkServer, scheme: str, tmp_path
) -> None:
    policy = ClientPolicy(approve="all")
    async with Client(AgentUrl(server.url(scheme)), policy=policy) as client:
        session = await client.new_session(str(tmp_path))
        events = [event async for event in session.prompt("ask")]
    decision = next(e for e in events if isinstance(e, PermissionDecision))
    assert decision.approved and decision.option_id == "yes"
    assert session.view.text == "permission: yes"  # the agent got our answer


async def test_an_http_refusal_is_an_error_with_the_servers_reason(server: SdkServer) -> None:
    with pytest.raises(HandshakeError, match="HTTP 415"):
        # The SDK's server wants application/json; a request it refuses must fail with
        # its reason, not hang.
        async with Client(AgentUrl(server.url(), headers=(("Content-Type", "text/plain"),))):
            pass


async def test_nothing_listening_fails_fast(tmp_path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(HandshakeError, match="could not reach the agent"):
        async with Client(AgentUrl(f"http://127.0.0.1:{port}/acp")):
            pass


def test_agent_urls() -> None:
    assert all(map(is_agent_url, ["http://h/acp", "HTTPS://h", " wss://h/acp", "ws://h"]))
    assert not any(map(is_agent_url, ["qwen --acp", "/usr/bin/agent", "httpd"]))
    assert "sk-" not in repr(AgentUrl("https://h/acp", api_key="sk-secret"))


def test_sse_parser() -> None:
    parser = SseParser()
    events = parser.feed(b': keepalive\n\nid: 7\ndata: {"a":\r\ndata: 1}\n\ndata: {"b"')
    assert events == [("7", b'{"a":\n1}')]
    assert parser.feed(b":2}\n\n") == [(None, b'{"b":2}')]
