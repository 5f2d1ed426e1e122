"""A fake LLM: a real OpenAI-compatible (and Anthropic-compatible) HTTP server on loopback.

It runs uvicorn in a background thread on 127.0.0.1 with an ephemeral port, so sync tests,
async tests and subprocesses (`agentao --acp` with `fake.env()`) can all reach it.

    with FakeLLM() as fake:                      # or the `fake_llm` pytest fixture
        fake.reply("Hello", " world")            # text chunks, one SSE chunk each
        fake.reply(reasoning=["hmm"], text=["ok"], usage=None)
        fake.reply(tool_calls=[FakeToolCall("read_file", {"file_path": "a.txt"})])
        FakeToolCall("get_weather", {...}, namespace="mcp__caller")  # Responses: codex's MCP tool
        fake.reply("slow", "stream", delay=0.2)  # seconds before each chunk
        fake.fail(500, "boom")                   # an HTTP error (429 + headers={"retry-after": "0"})
        fake.hang("partial")                     # send chunks, then hold the stream open
        gate = fake.hold("slow")                 # hold the reply until gate.set(); meanwhile
        await fake.wait_requests_async(1)        #   the request is recorded (`requests`)

        fake.base_url          "http://127.0.0.1:PORT/v1"   (OpenAI SDK base_url)
        fake.root_url          "http://127.0.0.1:PORT"      (Anthropic SDK base_url)
        fake.env()             {"LLM_PROVIDER": "OPENAI", "OPENAI_API_KEY": ..., BASE_URL, MODEL}
        fake.window = 12_000   # refuse requests above this many tokens (estimated below)
        fake.respond = fn      # fn(body) -> FakeReply | None, asked before the queue
        fake.advertise_window  # list the window in /v1/models (`context_length`)
        fake.tokens(body)      the fake's token count of a request
        fake.refused           how many requests were refused for their length

        fake.requests          [Recorded(path, body, headers, done, disconnected), ...]
        fake.requests[0].body["messages"] / ["tools"] / ["stream"]
        fake.requests[0].wait_disconnected(timeout=5)   True once the client hung up early
        await fake.requests[0].wait_disconnected_async(timeout=5)

Routes: POST /v1/chat/completions (streaming SSE ending `data: [DONE]`, or one JSON body
when `stream` is false), GET /v1/models, POST /v1/messages (Anthropic events, same replies:
reasoning → thinking, tool calls → tool_use), POST /v1/responses (streamed only: OpenAI
Responses events, tool calls → `function_call` items; tests/fakes/fake_responses.py), which
codex, and so codex-acp, needs. Each request pops the next queued reply; with
the queue empty the reply is the text `fake.default_text`. Tool calls stream as one delta
with id and name, then the argument JSON in three pieces. Usage (default 10 in / 5 out) is
sent when the client asks for it (`stream_options.include_usage`); `usage=None` omits it.
With a `window`, the usage is the fake's own count instead (`tokens(body)`: the request's
JSON, 4 bytes a token, an image 1,000), and a request above the window is refused as the
real APIs refuse it: OpenAI's 400 `context_length_exceeded` ("This model's maximum
context length is N tokens...") and Anthropic's 400 `invalid_request_error` ("prompt is
too long: M tokens > N maximum").
`Recorded.disconnected` is set when the client closed the connection before the response
was complete (cancellation), `Recorded.done` when the response was sent in full.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import uvicorn

from tests.fakes.fake_responses import responses_events

__all__ = ["FakeLLM", "FakeReply", "FakeToolCall", "Recorded"]

DEFAULT_USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


@dataclass
class FakeToolCall:
    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)  # a str is sent verbatim
    id: str | None = None
    namespace: str | None = None  # Responses API only: the tool's namespace (codex's MCP tools)


@dataclass
class FakeReply:
    text: Sequence[str] = ()
    reasoning: Sequence[str] = ()
    tool_calls: Sequence[FakeToolCall] = ()
    finish_reason: str | None = None  # default: "tool_calls" if there are calls, else "stop"
    usage: dict[str, int] | None = field(default_factory=lambda: dict(DEFAULT_USAGE))
    delay: float = 0.0  # seconds before each chunk
    status: int = 200  # anything else: an error response with `error` as message
    error: str = "fake error"
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False  # after the chunks, keep the stream open until the client leaves
    gate: threading.Event | None = None  # hold the whole reply until the test sets it
    error_body: dict[str, Any] | None = None  # the whole error body, when given


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    done: threading.Event = field(default_factory=threading.Event)
    disconnected: threading.Event = field(default_factory=threading.Event)

    def wait_disconnected(self, timeout: float = 5.0) -> bool:
        return self.disconnected.wait(timeout)

    async def wait_disconnected_async(self, timeout: float = 5.0) -> bool:
        return await asyncio.to_thread(self.disconnected.wait, timeout)


class FakeLLM:
    def __init__(self, model: str = "fake-model", api_key: str = "test-key") -> None:
        self.model = model
        self.api_key = api_key
        self.default_text = "(fake llm: no reply queued)"
        self.window: int | None = None
        self.advertise_window = False
        self.respond: Any = None  # body -> FakeReply | None
        self.refused = 0
        self.requests: list[Recorded] = []
        self._replies: deque[FakeReply] = deque()
        self._lock = threading.Lock()
        self._arrival = threading.Condition(self._lock)
        self._closing = threading.Event()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        config = uvicorn.Config(
            self._app, interface="asgi3", log_level="warning", lifespan="off", access_log=False,
            timeout_graceful_shutdown=1,
        )  # fmt: skip
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    # --- scripting ------------------------------------------------------------------

    def reply(self, *text: str, **kwargs: Any) -> FakeReply:
        """Queue a reply: positional strings are text chunks; kwargs are FakeReply fields."""
        if text:
            kwargs["text"] = list(text)
        return self.push(FakeReply(**kwargs))

    def fail(
        self, status: int, message: str = "fake error", headers: dict[str, str] | None = None
    ) -> FakeReply:
        return self.push(FakeReply(status=status, error=message, headers=headers or {}))

    def hang(self, *text: str, **kwargs: Any) -> FakeReply:
        """Queue a stream that sends `text` and then never ends (until the client leaves)."""
        return self.reply(*text, hang=True, **kwargs)

    def hold(self, *text: str, **kwargs: Any) -> threading.Event:
        """Queue a reply that is sent only once the returned event is set."""
        gate = threading.Event()
        self.reply(*text, gate=gate, **kwargs)
        return gate

    def wait_requests(self, count: int, timeout: float = 10.0) -> list[Recorded]:
        """`wait_requests_async` for sync tests."""
        arrived = self._arrived_wait(count, timeout)
        assert arrived, f"waited {timeout}s for {count} LLM requests, got {len(self.requests)}"
        return list(self.requests)

    async def wait_requests_async(self, count: int, timeout: float = 10.0) -> list[Recorded]:
        """The requests once at least `count` have arrived (fails after `timeout`)."""
        arrived = await asyncio.to_thread(self._arrived_wait, count, timeout)
        assert arrived, f"waited {timeout}s for {count} LLM requests, got {len(self.requests)}"
        return list(self.requests)

    def _arrived_wait(self, count: int, timeout: float) -> bool:
        with self._arrival:
            return self._arrival.wait_for(lambda: len(self.requests) >= count, timeout)

    def push(self, reply: FakeReply) -> FakeReply:
        with self._lock:
            self._replies.append(reply)
        return reply

    # --- addresses ------------------------------------------------------------------

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def env(self, prefix: str = "OPENAI") -> dict[str, str]:
        """Environment variables that point agentao's provider config at this server."""
        url = self.root_url if prefix == "ANTHROPIC" else self.base_url
        return {
            "LLM_PROVIDER": prefix,
            f"{prefix}_API_KEY": self.api_key,
            f"{prefix}_BASE_URL": url,
            f"{prefix}_MODEL": self.model,
        }

    @staticmethod
    def tokens(body: dict[str, Any]) -> int:
        """The fake's token count of a request: its messages, system and tools as JSON,
        4 bytes a token; an image counts 1,000."""
        parts = {k: body.get(k) for k in ("system", "messages", "tools") if body.get(k)}
        text = json.dumps(parts)
        images = text.count('"image_url"') + text.count('"type": "image"')
        return len(text) // 4 + 1000 * images

    # --- lifecycle ------------------------------------------------------------------

    def start(self) -> FakeLLM:
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("fake LLM server did not start")
            time.sleep(0.002)
        return self

    def close(self) -> None:
        self._closing.set()
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._sock.close()

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the ASGI app ---------------------------------------------------------------

    async def _app(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        method, path = scope["method"], scope["path"]
        if method == "GET" and path == "/v1/models":
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
            if headers.get("authorization") != f"Bearer {self.api_key}":
                return await _json(send, 401, {"error": {"message": "bad key"}})
            data = [{"id": self.model, "object": "model", "created": 0, "owned_by": "fake"}]
            if self.advertise_window and self.window:
                data[0]["context_length"] = self.window
            return await _json(send, 200, {"object": "list", "data": data})
        if method != "POST" or path not in _POST_ROUTES:
            return await _json(send, 404, {"error": {"message": f"no route {method} {path}"}})
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        record = Recorded(path, json.loads(raw or b"{}"), headers)
        anthropic = path == "/v1/messages"
        tokens = self.tokens(record.body)
        with self._lock:
            self.requests.append(record)
            self._arrival.notify_all()
            if self.window is not None and tokens > self.window:
                self.refused += 1
                reply = _too_long(tokens, self.window, anthropic)
            else:
                reply = self.respond(record.body) if self.respond is not None else None
                if reply is None and self._replies:
                    reply = self._replies.popleft()
                reply = reply or FakeReply([self.default_text])
                if self.window is not None and reply.usage is not None:
                    out = max(1, len("".join(reply.text)) // 4)
                    reply.usage = {"prompt_tokens": tokens, "completion_tokens": out,
                                   "total_tokens": tokens + out}  # fmt: skip
        if reply.status != 200:
            body = _error_body(reply, anthropic)
            await _json(send, reply.status, body, reply.headers)
        elif not record.body.get("stream"):
            body = (
                _anthropic_message(reply, self.model)
                if anthropic
                else _completion(reply, self.model)
            )
            await _json(send, 200, body, reply.headers)
        else:
            render = _STREAM_RENDERERS.get(path, _openai_chunks)
            events = render(reply, self.model, record.body)
            await self._stream(receive, send, reply, events, record)
            return
        record.done.set()

    def _wait_gate(self, gate: threading.Event) -> None:
        while not gate.wait(0.05) and not self._closing.is_set():
            pass

    async def _stream(
        self, receive: Any, send: Any, reply: FakeReply, events: list[bytes], record: Recorded
    ) -> None:
        """Send `events` as SSE while watching for the client going away."""

        async def pump() -> None:
            if reply.gate is not None:  # held until the test lets it go (or the server closes)
                await asyncio.to_thread(self._wait_gate, reply.gate)
            await send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})
            for event in events:
                if reply.delay:
                    await asyncio.sleep(reply.delay)
                await send({"type": "http.response.body", "body": event, "more_body": True})
            if reply.hang:  # until the client leaves (watch) or the server closes
                await asyncio.to_thread(self._closing.wait)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            record.done.set()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        sender, watcher = asyncio.create_task(pump()), asyncio.create_task(watch())
        await asyncio.wait({sender, watcher}, return_when=asyncio.FIRST_COMPLETED)
        if not record.done.is_set():
            record.disconnected.set()
        for task in (sender, watcher):
            task.cancel()
        await asyncio.gather(sender, watcher, return_exceptions=True)


_POST_ROUTES = ("/v1/chat/completions", "/v1/messages", "/v1/responses")
_SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]


async def _json(send: Any, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
    raw = json.dumps(body).encode()
    extra = [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    start_headers = [(b"content-type", b"application/json"), *extra]
    await send({"type": "http.response.start", "status": status, "headers": start_headers})
    await send({"type": "http.response.body", "body": raw})


def _finish(reply: FakeReply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def _arguments(call: FakeToolCall) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)


def _call_id(call: FakeToolCall, index: int) -> str:
    return call.id or f"call_fake_{index}"


def _thirds(text: str) -> list[str]:
    n = max(1, len(text) // 3)
    return [text[:n], text[n : 2 * n], text[2 * n :]]


# --- OpenAI Chat Completions ---------------------------------------------------------


def _openai_chunks(reply: FakeReply, model: str, body: dict[str, Any]) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
                "model": model, "choices": [choice]}  # fmt: skip

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"reasoning_content": r}) for r in reply.reasoning]
    chunks += [chunk({"content": t}) for t in reply.text]
    for i, call in enumerate(reply.tool_calls):
        head = {"index": i, "id": _call_id(call, i), "type": "function",
                "function": {"name": call.name, "arguments": ""}}  # fmt: skip
        chunks.append(chunk({"tool_calls": [head]}))
        for piece in _thirds(_arguments(call)):
            chunks.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    if not reply.hang:
        chunks.append(chunk({}, _finish(reply)))
        if reply.usage is not None and (body.get("stream_options") or {}).get("include_usage"):
            last = chunk({})
            last["choices"], last["usage"] = [], reply.usage
            chunks.append(last)
    out = [f"data: {json.dumps(c)}\n\n".encode() for c in chunks]
    return out if reply.hang else [*out, b"data: [DONE]\n\n"]


def _completion(reply: FakeReply, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": "".join(reply.text) or None}
    if reply.reasoning:
        message["reasoning_content"] = "".join(reply.reasoning)
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": _call_id(c, i), "type": "function",
             "function": {"name": c.name, "arguments": _arguments(c)}}
            for i, c in enumerate(reply.tool_calls)
        ]  # fmt: skip
    choice = {"index": 0, "message": message, "finish_reason": _finish(reply)}
    out = {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
           "choices": [choice]}  # fmt: skip
    if reply.usage is not None:
        out["usage"] = reply.usage
    return out


# --- Anthropic Messages --------------------------------------------------------------

_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use",
         "content_filter": "refusal"}  # fmt: skip


def _anthropic_events(reply: FakeReply, model: str, body: dict[str, Any]) -> list[bytes]:
    usage = reply.usage or {}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": usage.get("prompt_tokens", 0), "output_tokens": 1}}}]  # fmt: skip
    blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    if reply.reasoning:
        deltas = [{"type": "thinking_delta", "thinking": r} for r in reply.reasoning]
        blocks.append(({"type": "thinking", "thinking": "", "signature": ""}, deltas))
    if reply.text:
        blocks.append(
            ({"type": "text", "text": ""}, [{"type": "text_delta", "text": t} for t in reply.text])
        )
    for i, call in enumerate(reply.tool_calls):
        start = {"type": "tool_use", "id": _call_id(call, i), "name": call.name, "input": {}}
        deltas = [
            {"type": "input_json_delta", "partial_json": p} for p in _thirds(_arguments(call))
        ]
        blocks.append((start, deltas))
    for index, (start, deltas) in enumerate(blocks):
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    if not reply.hang:
        stop = {"stop_reason": _STOP.get(_finish(reply), "end_turn"), "stop_sequence": None}
        out_tokens = {"output_tokens": usage.get("completion_tokens", 0)}
        events += [{"type": "message_delta", "delta": stop, "usage": out_tokens},
                   {"type": "message_stop"}]  # fmt: skip
    return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]


def _anthropic_message(reply: FakeReply, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": "".join(reply.text)}]
    content += [
        {
            "type": "tool_use",
            "id": _call_id(c, i),
            "name": c.name,
            "input": json.loads(_arguments(c)),
        }
        for i, c in enumerate(reply.tool_calls)
    ]
    usage = reply.usage or {}
    return {"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": _STOP.get(_finish(reply), "end_turn"),
            "stop_sequence": None,
            "usage": {"input_tokens": usage.get("prompt_tokens", 0),
                      "output_tokens": usage.get("completion_tokens", 0)}}  # fmt: skip


def _error_body(reply: FakeReply, anthropic: bool) -> dict[str, Any]:
    if reply.error_body is not None:
        return reply.error_body
    if anthropic:
        return {"type": "error", "error": {"type": "api_error", "message": reply.error}}
    return {"error": {"message": reply.error, "type": "fake_error", "code": reply.status}}


def _too_long(tokens: int, window: int, anthropic: bool) -> FakeReply:
    """The refusal a real API sends for a request longer than the window."""
    if anthropic:
        message = f"prompt is too long: {tokens} tokens > {window} maximum"
        body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    else:
        message = (
            f"This model's maximum context length is {window} tokens. However, your messages "
            f"resulted in {tokens} tokens. Please reduce the length of the messages."
        )
        body = {"error": {"message": message, "type": "invalid_request_error",
                          "param": "messages", "code": "context_length_exceeded"}}  # fmt: skip
    return FakeReply(status=400, error=message, error_body=body)


# The streaming renderer of each POST route (Chat Completions is the default).
_STREAM_RENDERERS = {"/v1/messages": _anthropic_events, "/v1/responses": responses_events}
