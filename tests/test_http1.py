"""agentao/http1.py against a scripted server on 127.0.0.1: what it writes (every request
head checked, nothing sent when a header is not HTTP) and how it reads each way a response
can be framed, kept alive or ended."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from agentao.http1 import Http1Client, HttpError, HttpTimeout, request_head

pytestmark = pytest.mark.timeout(30)

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


class ScriptedServer:
    """Answers each request it reads with the next script: a list of byte strings, each
    written once the previous is out, an asyncio.Event waited for before the next, or
    None to close the connection. Keeps every request and counts connections."""

    def __init__(self, *scripts: list[bytes | asyncio.Event | None]) -> None:
        self.scripts = list(scripts)
        self.requests: list[bytes] = []
        self.connections = 0
        self.hung_up = asyncio.Event()  # a client closed a connection while we waited to read
        self.port = 0

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while self.scripts:
                head = await reader.readuntil(b"\r\n\r\n")
                length = _content_length(head)
                self.requests.append(head + await reader.readexactly(length))
                if not await self._answer(self.scripts.pop(0), writer):
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            self.hung_up.set()
        finally:
            writer.close()

    @staticmethod
    async def _answer(
        script: list[bytes | asyncio.Event | None], writer: asyncio.StreamWriter
    ) -> bool:
        for step in script:
            if step is None:
                return False
            if isinstance(step, asyncio.Event):
                await step.wait()
                continue
            writer.write(step)
            await writer.drain()
        return True

    def url(self, path: str = "/x") -> str:
        return f"http://127.0.0.1:{self.port}{path}"


def _content_length(head: bytes) -> int:
    for line in head.lower().split(b"\r\n"):
        if line.startswith(b"content-length:"):
            return int(line.split(b":")[1])
    return 0


@asynccontextmanager
async def serving(*scripts: list[bytes | asyncio.Event | None]) -> AsyncIterator[ScriptedServer]:
    server = ScriptedServer(*scripts)
    listening = await asyncio.start_server(server._serve, "127.0.0.1", 0)
    server.port = listening.sockets[0].getsockname()[1]
    try:
        yield server
    finally:
        listening.close()


async def post(client: Http1Client, url: str, body: bytes = b"{}") -> tuple[int, bytes]:
    async with client.post(url, body, {}) as response:
        return response.status_code, await response.aread()


# ---- the request head: header injection is refused, nothing is sent --------------------

BAD_HEADERS = [  # (name, value): each must be refused with ValueError
    ("X-Key", "a\r\nX-Injected: 1"),
    ("X-Key", "a\nX-Injected: 1"),
    ("X-Key", "a\rb"),
    ("X-Key", "a\x00b"),
    ("X-Key", "a\x7fb"),
    ("X-Key", " leading"),
    ("X-Key", "\tleading"),
    ("X-Key", "trailing "),
    ("X-Key", "not latin-1: ✓"),
    ("X Key", "v"),
    ("X-Key:", "v"),
    ("X-Key\r\nX-Injected", "1"),
    ("", "v"),
    ("X-Ké", "v"),
]
GOOD_HEADERS = [  # (name, value, as written)
    ("X-Key", "a\tb c", b"X-Key: a\tb c"),
    ("X-Key", "", b"X-Key: "),
    ("X-Key", "caf\xe9", b"X-Key: caf\xe9"),
    ("Authorization", "Bearer sk-1", b"Authorization: Bearer sk-1"),
]


@pytest.mark.parametrize(("name", "value"), BAD_HEADERS)
async def test_a_header_that_is_not_http_is_refused_and_nothing_is_sent(
    name: str, value: str
) -> None:
    async with serving([OK]) as server:
        client = Http1Client(5, 5, {})
        with pytest.raises(ValueError):
            await post_with(client, server.url(), {name: value})
        with pytest.raises(ValueError):  # the client's own headers are checked alike
            await post(Http1Client(5, 5, {name: value}), server.url(), b"{}")
        with pytest.raises(ValueError):
            async with client.request("GET", server.url(), None, {name: value}, 5):
                pass
        await client.aclose()
    assert server.connections == 0 and server.requests == []


async def post_with(client: Http1Client, url: str, headers: dict[str, str]) -> None:
    async with client.post(url, b"{}", headers) as response:
        await response.aread()


@pytest.mark.parametrize(("name", "value", "line"), GOOD_HEADERS)
async def test_a_good_header_is_written_as_given(name: str, value: str, line: bytes) -> None:
    async with serving([OK]) as server:
        client = Http1Client(5, 5, {})
        await post_with(client, server.url(), {name: value})
        await client.aclose()
    assert b"\r\n" + line + b"\r\n" in server.requests[0]


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:1/a b", "http://127.0.0.1:1/a\x00b", "http://127.0.0.1:1/é"]
)
def test_a_url_that_is_not_a_request_target_is_refused(url: str) -> None:
    with pytest.raises(ValueError):
        request_head("GET", url.split(":1", 1)[1], "127.0.0.1:1", {})


def test_the_head_in_order() -> None:
    head = request_head("POST", "/acp?x=1", "h:8", {"A": "1", "Content-Length": "2"})
    assert head == b"POST /acp?x=1 HTTP/1.1\r\nHost: h:8\r\nA: 1\r\nContent-Length: 2\r\n\r\n"


async def test_a_url_without_a_path_asks_for_the_root() -> None:
    async with serving([OK]) as server:
        client = Http1Client(5, 5, {})
        assert await post(client, server.url("")) == (200, b"ok")
        await client.aclose()
    assert server.requests[0].startswith(b"POST / HTTP/1.1\r\n")


async def test_a_request_is_written_with_its_body() -> None:
    async with serving([OK], [OK]) as server:
        client = Http1Client(5, 5, {"User-Agent": "t"})
        await post_with(client, server.url("/acp"), {"Content-Type": "application/json"})
        async with client.request("GET", server.url("/acp?a=1"), None, {}, 5) as response:
            await response.aread()
        await client.aclose()
    port = server.port
    assert server.requests == [
        b"POST /acp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUser-Agent: t\r\n"
        b"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}" % port,
        b"GET /acp?a=1 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUser-Agent: t\r\n\r\n" % port,
    ]


# ---- the response: framing, streaming, keep-alive, close, errors -------------------------


async def test_content_length_and_chunked_bodies_on_one_kept_alive_connection() -> None:
    chunked = [
        b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\nX-A:  v \r\n",
        b"Set-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n5\r\nhel",
        b"lo\r\n6\r\n world\r\n0\r\n\r\n",
    ]
    async with serving([OK], chunked, [OK]) as server:
        client = Http1Client(5, 5, {})
        assert await post(client, server.url()) == (200, b"ok")
        async with client.post(server.url(), b"{}", {}) as response:
            assert response.status_code == 201 and await response.aread() == b"hello world"
            assert response.headers["x-a"] == "v" and response.set_cookies == ["a=1", "b=2"]
        assert await post(client, server.url()) == (200, b"ok")
        await client.aclose()
    assert server.connections == 1


async def test_an_event_stream_is_read_as_it_comes() -> None:
    more = asyncio.Event()
    stream = [
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"9\r\ndata: 1\n\n\r\n",
        more,  # the second event is sent only once the first was read
        b"9\r\ndata: 2\n\n\r\n0\r\n\r\n",
    ]
    async with serving(stream) as server:
        client = Http1Client(5, 5, {})
        read = []
        async with client.request("GET", server.url(), None, {}, None) as response:
            async for chunk in response.aiter_bytes():
                read.append(chunk)
                more.set()
        await client.aclose()
    assert read == [b"data: 1\n\n", b"data: 2\n\n"]


async def test_an_interim_answer_is_skipped() -> None:
    body_next = asyncio.Event()
    head = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
    async with serving([head, body_next, b"ok"]) as server:
        client = Http1Client(5, 5, {})
        async with client.post(server.url(), b"{}", {}) as response:
            body_next.set()  # the body comes after the head was read: not taken for the 100's
            assert response.status_code == 200 and await response.aread() == b"ok"
        await client.aclose()


async def test_a_body_without_framing_runs_to_the_close_and_the_connection_is_not_kept() -> None:
    unframed = [b"HTTP/1.1 200 OK\r\n\r\nall of ", b"it", None]
    async with serving(unframed, [OK]) as server:
        client = Http1Client(5, 5, {})
        assert await post(client, server.url()) == (200, b"all of it")
        assert await post(client, server.url()) == (200, b"ok")
        await client.aclose()
    assert server.connections == 2


async def test_connection_close_is_honoured() -> None:
    closing = [b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"]
    async with serving(closing, [OK]) as server:
        client = Http1Client(5, 5, {})
        assert await post(client, server.url()) == (200, b"ok")
        assert client._idle == {}  # not kept: the next request opens a new connection
        assert await post(client, server.url()) == (200, b"ok")
        await client.aclose()
    assert server.connections == 2


async def test_an_abandoned_response_closes_its_connection() -> None:
    never_ends = [b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\npart"]
    async with serving(never_ends, [OK]) as server:
        client = Http1Client(5, 5, {})
        async with client.post(server.url(), b"{}", {}) as response:
            assert response.status_code == 200
        await asyncio.wait_for(server.hung_up.wait(), 5)  # the server learns at once
        assert await post(client, server.url()) == (200, b"ok")
        await client.aclose()
    assert server.connections == 2


@pytest.mark.parametrize(
    "script",
    [
        [b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\npart", None],  # closed mid-body
        [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", None],
        [b"HTTP/1.1 200 OK\r\nContent-Le", None],  # closed mid-head
        [None],  # closed before answering
        [b"NOT HTTP AT ALL\r\n\r\n", None],
        [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"],  # bad chunk size
    ],
)
async def test_a_broken_response_is_an_http_error(script: list[bytes | None]) -> None:
    async with serving(script) as server:
        client = Http1Client(5, 5, {})
        with pytest.raises(HttpError):
            await post(client, server.url())
        await client.aclose()


async def test_no_answer_within_the_read_timeout_is_a_timeout() -> None:
    silent = asyncio.Event()  # never set
    async with serving([silent]) as server:
        client = Http1Client(0.2, 5, {})
        with pytest.raises(HttpTimeout):
            await post(client, server.url())
        await client.aclose()
