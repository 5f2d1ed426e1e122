"""`agentao.client` with an agent at a URL: HTTP with SSE, and WebSocket.

The server is the official SDK's own (`acp.http.create_asgi_app`) serving an agent
written with the SDK (tests/fakes/sdk_agent.py), under uvicorn on 127.0.0.1: a
third-party remote agent, so what is tested is interop, not agreement with ourselves.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from agentao.client import (
    AgentUrl,
    Client,
    ClientPolicy,
    HandshakeError,
    PermissionDecision,
    TurnEnd,
)
from agentao.client.remote import (
    HttpStreams,
    RemoteStreams,
    SseParser,
    connect,
    is_agent_url,
)
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


async def test_events_read_together_reach_the_endpoint_as_lines_even_a_bad_one() -> None:
    """A pretty-printed message becomes one line; one that is not JSON stays one line (the
    endpoint refuses it as any bad line) instead of failing the stream and the messages
    read with it."""
    streams = RemoteStreams(reconnects=0, backoff=0.0)
    streams.deliver_all([b'{"a":\n 1}', b"{not\njson", b'{"b":2}'])
    streams.end()
    assert await streams.reader.read() == b'{"a":1}\n{not json\n{"b":2}\n'


# ---- the POSTs' own keep-alive connection (agentao/http1.py) ---------------------------------


class CountingRelay:
    """A TCP relay on 127.0.0.1 in front of the server: it counts the connections the
    client opens and keeps what each sent, can hang up the POSTs' connection, and adds a
    `Set-Cookie` to the first answer on each connection (the gateway's affinity cookie)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.sent: list[bytearray] = []  # per connection: every byte the client sent
        self._writers: list[tuple[bytearray, asyncio.StreamWriter]] = []
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> CountingRelay:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *_exc: object) -> None:
        assert self._server is not None
        for _sent, writer in self._writers:
            writer.close()
        self._server.close()

    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/acp"

    def posts(self) -> list[bytearray]:
        return [sent for sent in self.sent if sent.startswith(b"POST ")]

    def hang_up_posts(self) -> None:
        """Close the POSTs' connections, both ways, as a server's keep-alive timeout does
        (the event streams go on: the SDK's server would not replay what they missed)."""
        for sent, writer in self._writers:
            if sent.startswith(b"POST "):
                writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        sent = bytearray()
        self.sent.append(sent)
        self._writers += [(sent, writer), (sent, up_writer)]
        await asyncio.gather(
            self._pipe(reader, up_writer, sent.extend, None),
            self._pipe(up_reader, writer, None, b"set-cookie: affinity=here; Path=/\r\n"),
        )

    @staticmethod
    async def _pipe(reader: Any, writer: Any, seen: Any, cookie: bytes | None) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                if seen is not None:
                    seen(data)
                if cookie is not None:  # after the status line of the first answer
                    data, cookie = data.replace(b"\r\n", b"\r\n" + cookie, 1), None
                writer.write(data)
        writer.close()


async def test_every_post_goes_over_one_kept_alive_connection(
    server: SdkServer, tmp_path: Path
) -> None:
    async with CountingRelay(server.port) as relay, Client(AgentUrl(relay.url())) as client:
        session = await client.new_session(str(tmp_path))
        for _ in range(3):
            [event async for event in session.prompt("chunks 3")]
        posts = relay.posts()
    assert len(posts) == 1, [bytes(p[:60]) for p in posts]
    assert bytes(posts[0]).count(b'"session/prompt"') == 3


def post_bodies(sent: bytes) -> list[bytes]:
    """The bodies of the POSTs in what a client sent on one connection."""
    bodies = []
    while (end := sent.find(b"\r\n\r\n")) >= 0:
        head, sent = sent[:end].lower(), sent[end + 4 :]
        length = (
            int(head.split(b"content-length:")[1].split(b"\r\n")[0])
            if head.startswith(b"post ")
            else 0
        )
        bodies.append(sent[:length])
        sent = sent[length:]
    return [body for body in bodies if body]


async def test_a_post_carries_the_line_the_endpoint_wrote(
    server: SdkServer, tmp_path: Path
) -> None:
    """The body is the endpoint's own encoding (compact, UTF-8), sent as written: not
    decoded and encoded again (json.dumps would add spaces and escape the text)."""
    async with CountingRelay(server.port) as relay, Client(AgentUrl(relay.url())) as client:
        session = await client.new_session(str(tmp_path))
        events = [event async for event in session.prompt("héllo ✓")]
        bodies = [body for sent in relay.posts() for body in post_bodies(bytes(sent))]
    assert session.view.text == "héllo ✓" and isinstance(events[-1], TurnEnd)
    prompt = next(body for body in bodies if b'"session/prompt"' in body)
    assert '"text":"héllo ✓"'.encode() in prompt, prompt
    for body in bodies:
        assert body == msgspec.json.encode(msgspec.json.decode(body)), body


async def test_a_post_after_the_server_hung_up_goes_on_a_new_connection_once(
    server: SdkServer, tmp_path: Path
) -> None:
    async with CountingRelay(server.port) as relay, Client(AgentUrl(relay.url())) as client:
        session = await client.new_session(str(tmp_path))
        [event async for event in session.prompt("chunks 3")]
        first_post = relay.posts()[0]
        relay.hang_up_posts()
        events = [event async for event in session.prompt("chunks 3")]
        prompts = [bytes(p).count(b'"session/prompt"') for p in relay.posts()]
    assert isinstance(events[-1], TurnEnd) and events[-1].stop_reason == "end_turn"
    assert len(prompts) == 2 and relay.posts()[0] is first_post  # a new connection
    assert sum(prompts) == 2, prompts  # and no prompt sent twice


async def test_a_cookie_the_server_set_comes_back_on_every_request(
    server: SdkServer, tmp_path: Path
) -> None:
    async with CountingRelay(server.port) as relay, Client(AgentUrl(relay.url())) as client:
        session = await client.new_session(str(tmp_path))
        [event async for event in session.prompt("chunks 3")]
    requests = [
        r for sent in relay.sent for r in bytes(sent).split(b"\r\n\r\n") if b" HTTP/1.1" in r
    ]
    after_initialize = [r for r in requests if b'"initialize"' not in r][1:]
    assert after_initialize, requests
    for request in after_initialize:  # the POSTs and the event streams' GETs alike
        assert b"\r\ncookie: affinity=here" in request.lower(), request[:200]


async def test_the_event_streams_go_over_connections_of_their_own_not_httpx(
    server: SdkServer, tmp_path: Path
) -> None:
    """Each SSE stream (the connection's, the session's) is a GET on a connection of its
    own from agentao/http1.py: httpx, which names itself in `User-Agent`, reads none."""
    async with CountingRelay(server.port) as relay, Client(AgentUrl(relay.url())) as client:
        session = await client.new_session(str(tmp_path))
        events = [event async for event in session.prompt("chunks 3")]
        gets = [bytes(sent) for sent in relay.sent if sent.startswith(b"GET ")]
    assert isinstance(events[-1], TurnEnd) and [e.text for e in events[:-1]] == ["0", "1", "2"]
    streams = {b"acp-session-id:" in get.lower() for get in gets}
    assert streams == {False, True}, gets  # the connection's stream, the session's
    for get in gets:
        assert b"text/event-stream" in get and b"python-httpx" not in get.lower(), get[:300]


async def test_with_a_proxy_configured_the_posts_go_through_httpx(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """agentao/http1.py knows no proxies; httpx honours them."""
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    streams = await connect(AgentUrl("https://agents.example/acp"))
    try:
        assert isinstance(streams, HttpStreams) and streams.posts is None
        assert streams.events is None  # the event streams too
    finally:
        await streams.close()
    monkeypatch.delenv("HTTPS_PROXY")
    streams = await connect(AgentUrl("https://agents.example/acp"))
    try:
        assert isinstance(streams, HttpStreams) and streams.posts is not None  # the control
        assert streams.events is not None
    finally:
        await streams.close()
