"""The lean OpenAI-compatible provider (server/llm_http.py) and its HTTP/1.1 client
(agentao/http1.py), against the fake LLM: a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import socket

import pytest

from agentao.agent.config import Limits as TurnLimits
from agentao.agent.config import LlmConfig
from agentao.agent.providers.base import (
    LlmFinished,
    LlmRequest,
    TextPiece,
    ThoughtPiece,
    ToolCallRequest,
)
from agentao.agent.providers.errors import LlmError
from agentao.agent.providers.messages import UserMessage
from agentao.agent.providers.openai_http import HttpOpenAIProvider
from agentao.http1 import Http1Client, HttpError
from tests.fakes.fake_llm import FakeToolCall

pytestmark = pytest.mark.timeout(30)


def provider(fake, timeout: float = 10.0) -> HttpOpenAIProvider:
    limits = TurnLimits(request_timeout=timeout)
    return HttpOpenAIProvider(
        LlmConfig("OPENAI", "fake-model", "test-key", fake.base_url, limits=limits)
    )


def request(text: str = "hi") -> LlmRequest:
    return LlmRequest("fake-model", (UserMessage(text),))


async def collect(p: HttpOpenAIProvider, req: LlmRequest | None = None) -> list:
    return [e async for e in p.stream(req or request())]


async def test_text_reasoning_usage_and_request_shape(fake_llm):
    fake_llm.reply(reasoning=["a", "b"], text=["Hel", "lo"])
    p = provider(fake_llm)
    events = await collect(p)
    await p.aclose()
    assert events[:4] == [ThoughtPiece("a"), ThoughtPiece("b"), TextPiece("Hel"), TextPiece("lo")]
    finished = events[-1]
    assert isinstance(finished, LlmFinished) and finished.finish_reason == "stop"
    assert finished.usage.input_tokens == 10 and finished.usage.output_tokens == 5
    recorded = fake_llm.requests[0]
    assert recorded.body["stream"] is True and recorded.body["stream_options"] == {
        "include_usage": True
    }
    assert recorded.headers["authorization"] == "Bearer test-key"


async def test_tool_calls_assembled_from_pieces(fake_llm):
    fake_llm.reply(
        tool_calls=[
            FakeToolCall("read_file", {"file_path": "a.txt"}, id="c1"),
            FakeToolCall("glob", "not json", id="c2"),
        ]
    )
    p = provider(fake_llm)
    events = await collect(p)
    await p.aclose()
    calls = [e for e in events if isinstance(e, ToolCallRequest)]
    assert calls[0] == ToolCallRequest("c1", "read_file", {"file_path": "a.txt"})
    assert calls[1].id == "c2" and calls[1].raw_arguments == "not json"
    assert events[-1].finish_reason == "tool_calls"


@pytest.mark.parametrize(
    "status, reason, transient",
    [
        (400, "bad_request", False),
        (401, "auth", False),
        (429, "rate_limited", True),
        (503, "server_error", True),
    ],
)
async def test_http_errors_map_like_the_sdk_provider(fake_llm, status, reason, transient):
    fake_llm.fail(status, "the message", headers={"retry-after": "3"})
    p = provider(fake_llm)
    with pytest.raises(LlmError) as caught:
        await collect(p)
    await p.aclose()
    assert caught.value.reason == reason and caught.value.transient is transient
    assert "the message" in str(caught.value)
    if transient:
        assert caught.value.retry_after == 3.0


async def test_keep_alive_connection_is_reused(fake_llm):
    p = provider(fake_llm)
    for text in ("one", "two", "three"):
        fake_llm.reply(text)
        assert TextPiece(text) in await collect(p)
    await p.aclose()
    assert len(fake_llm.requests) == 3


async def test_abandoned_stream_closes_the_connection(fake_llm):
    fake_llm.hang("partial")
    p = provider(fake_llm)
    stream = p.stream(request())
    assert await stream.__anext__() == TextPiece("partial")
    await stream.aclose()
    assert await fake_llm.requests[0].wait_disconnected_async(timeout=5)
    fake_llm.reply("after")
    assert TextPiece("after") in await collect(p)  # a fresh connection
    await p.aclose()


async def test_cancelled_task_closes_the_connection(fake_llm):
    fake_llm.hang("partial")
    p = provider(fake_llm)
    got = asyncio.Event()

    async def run():
        async for _ in p.stream(request()):
            got.set()

    task = asyncio.create_task(run())
    await got.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await fake_llm.requests[0].wait_disconnected_async(timeout=5)
    await p.aclose()


async def test_read_timeout_is_transient(fake_llm):
    fake_llm.hang("partial")
    p = provider(fake_llm, timeout=0.3)
    with pytest.raises(LlmError) as caught:
        await collect(p)
    await p.aclose()
    assert caught.value.reason == "timeout" and caught.value.transient


async def test_connection_refused_is_transient():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = LlmConfig("OPENAI", "m", "k", f"http://127.0.0.1:{port}/v1")
    p = HttpOpenAIProvider(config)
    with pytest.raises(LlmError) as caught:
        await collect(p)
    assert caught.value.reason == "connection" and caught.value.transient


async def test_stale_kept_alive_connection_is_retried_once(fake_llm):
    client = Http1Client(5, 5, {})
    url = fake_llm.base_url + "/chat/completions"
    fake_llm.reply("one")
    async with client.post(url, b'{"stream": true, "messages": []}', {}) as response:
        await response.aread()
    [conn] = client._idle.values()
    conn.writer.close()  # as if the server had dropped the idle connection
    await asyncio.sleep(0.05)
    fake_llm.reply("two")
    async with client.post(url, b'{"stream": true, "messages": []}', {}) as response:
        assert response.status_code == 200 and b"two" in await response.aread()
    await client.aclose()


async def test_proxy_setting_uses_httpx(fake_llm, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    fake_llm.reply("via httpx")
    p = provider(fake_llm)
    events = await collect(p)
    assert type(p._client).__name__ == "_HttpxClient"
    await p.aclose()
    assert TextPiece("via ") in events or TextPiece("via httpx") in events


async def test_http_error_not_http(fake_llm):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]

        async def garbage():
            loop = asyncio.get_running_loop()
            conn, _ = await loop.sock_accept(server)
            await loop.sock_sendall(conn, b"NOT HTTP AT ALL\r\n\r\n")
            conn.close()

        server.setblocking(False)
        task = asyncio.create_task(garbage())
        client = Http1Client(5, 5, {})
        with pytest.raises(HttpError):
            async with client.post(f"http://127.0.0.1:{port}/x", b"{}", {}):
                pass
        await task
