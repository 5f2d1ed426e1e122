"""The caller's own tools, served to the agent as an MCP server of the conversation's own.

Theory of operation. A Chat Completions request whose `tools` are offered
(caller_tools.py) gets its conversation a `ToolBridge`: a bridge id and a secret of
its own, and the tools as declared. The agent's session is opened (`session/new` or
`load`) with one more MCP server, `caller`, at the gateway's one bridge URL
(`/v1/tool-bridge/mcp`, streamable HTTP through the official `mcp` SDK, stateless),
the header `X-Tool-Bridge: <bridge id>.<secret>` naming the bridge. A request without
a known id and its secret is a 401 before the SDK sees it, so one conversation's tools
are invisible to every other conversation and key: neither the id nor the secret is
ever shown to a client, and the secret is in no URL (none is logged).

When the agent calls a tool, the call becomes a `PendingCall` (an id, the caller's
tool name as the MCP call names it, the arguments as sent) that the conversation's
running turn hands its consumer (`GatewayTurn.put_call`): the Chat Completions answer
ends there with `tool_calls`, while the turn (and the agent's MCP call) waits. Calls
the agent makes before the consumer took the first come back in the same answer. The
caller's next request answers them (`role: tool` + `tool_call_id`, `answer()`) and
reads the rest of the same turn. A call nobody answers within
`[limits] tool_result_seconds` fails (the agent is told so) and the turn is cancelled.

The tools are marked read-only for the agent (`readOnlyHint`): they run in the
caller's process, so the agent's workspace is untouched and our agent asks no
permission for them; every other tool keeps the key's policy, and the agent process
stays in its key's sandbox and ceiling (the bridge returns the caller's text, nothing
more). Which MCP transport: `http` where the agent advertises it, else `sse` (the SDK's
SSE transport at `SSE_PATH`, the same header on the stream and on every message); an
agent that takes neither is refused with a 400 naming `tools`.

Replicas. The waiting calls live in the memory of the replica holding the conversation,
and the caller's next request may land on another. A call's id names its conversation
(`call_<conversation hex>_<random>`), so the replica it lands on finds the holder from
the ids alone (`holder_of_calls`: the caller's own conversation, held elsewhere) and
passes the request there, the results or a new message instead of them alike (a
request naming the conversation otherwise, by a session key or `previous_response_id`,
was passed on before any route ran: holders.py). A holder gone quiet within its lease
is a 503 to retry, never "no such call": only it has the call.

Per call, cheaply. The SDK checks a call's `Mcp-Param-*` headers against the called
tool's schema before it runs it; without a lookup of ours it finds that schema by running
the whole `tools/list` handler once more for every call. `_input_schema` answers from the
bridge of the request being served (`_SERVED_BRIDGE`, set for the request's task). The
SDK's OpenTelemetry middleware (a span per MCP message) is dropped: nothing here exports
spans. Together they were about a tenth of the gateway's CPU per bridged call.

Made when needed. The MCP endpoint (the SDK's server, its SSE transport and session
manager) is made when a conversation is first offered tools (`ToolBridges.serving`):
importing the SDK's server side was most of a gateway's start, and a gateway whose
callers bring no tools never needs it.

Stopping. The agent's MCP call is an HTTP request to the gateway that waits for the
caller, and the server waits for every request under way before it stops: so when the
gateway stops, each waiting call fails at once (`ToolBridges.stop_waiting`), else a
Ctrl-C would wait up to `tool_result_seconds`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import re
import secrets
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.types import Receive, Scope, Send

from agentao.gateway.auth import Principal, owns
from agentao.gateway.caller_tools import CallerTool, ToolResult
from agentao.gateway.config import GatewayConfig
from agentao.gateway.errors import BadRequest, Conflict, Unauthorized, Unavailable, unsupported
from agentao.gateway.sessions import CONVERSATION_PREFIX

if TYPE_CHECKING:
    from agentao.gateway.sessions import LiveConversation

BRIDGE_PATH = "/v1/tool-bridge/mcp"  # where every conversation's bridge is served
# The SSE transport, for agents that take no streamable HTTP server: the event stream, and
# where its messages are posted (the SDK tells the agent so on the stream).
SSE_PATH = "/v1/tool-bridge/sse"
SSE_MESSAGES_PATH = "/v1/tool-bridge/messages/"
BRIDGE_HEADER = "x-tool-bridge"  # "<bridge id>.<secret>": which bridge, and the right to it
SERVER_NAME = "caller"  # the MCP server's name in the session (our agent: mcp__caller__NAME)
# A call's id: its conversation's (a conversation id less its prefix), then 64 random bits.
_CALL_ID = re.compile(r"call_([0-9a-f]{32})_[0-9a-f]{16}")
# The bridge whose request this task serves (the SDK asks for a tool's schema by name only).
_SERVED_BRIDGE: ContextVar[ToolBridge | None] = ContextVar("served_bridge", default=None)


@dataclass(slots=True)
class PendingCall:
    """One call of the agent's to a caller's tool, waiting for the caller's answer."""

    id: str
    name: str
    args: dict[str, Any]  # as the agent sent them
    answer: asyncio.Future[str] = field(repr=False)

    @property
    def arguments(self) -> str:
        """The arguments as JSON text (OpenAI's `function.arguments`)."""
        return json.dumps(self.args, ensure_ascii=False)


def bridge_url(config: GatewayConfig) -> str:
    """Where this gateway's own agent processes (on this host) reach its bridge: the
    address other replicas reach it by, else the bound one, a wildcard as loopback."""
    if config.advertise_url:
        return config.advertise_url.rstrip("/") + BRIDGE_PATH
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "[::]": "::1"}.get(config.host, config.host)
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{config.port}{BRIDGE_PATH}"


class ToolBridge:
    """One conversation's tools, and its calls waiting for an answer."""

    def __init__(
        self,
        conv: LiveConversation,
        owner: str,
        deadline_seconds: float,
        calls: dict[str, ToolBridge],
    ) -> None:
        self.id = uuid.uuid4().hex
        self.secret = secrets.token_urlsafe(32)
        self.conv = conv
        self.owner = owner
        self.tools: dict[str, CallerTool] = {}
        self.pending: dict[str, PendingCall] = {}
        self.deadline_seconds = deadline_seconds
        self._calls = calls  # every bridge's waiting calls, by id (`ToolBridges.waiting`)
        self._deadline: asyncio.TimerHandle | None = None

    def server(self, url: str, transport: str = "http") -> dict[str, Any]:
        """The `mcpServers` entry the agent's session gets (`url`: the bridge's HTTP one)."""
        header = {"name": BRIDGE_HEADER, "value": f"{self.id}.{self.secret}"}
        if transport == "sse":
            url = url.removesuffix(BRIDGE_PATH) + SSE_PATH
        return {"type": transport, "name": SERVER_NAME, "url": url, "headers": [header]}

    async def call(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """The agent called `name`: (the caller's answer, whether it is an error)."""
        if name not in self.tools:
            return f"the caller offers no tool named {name!r} in this request", True
        turn = self.conv.turn
        loop = asyncio.get_running_loop()
        call = PendingCall(call_id(self.conv.id), name, arguments, loop.create_future())
        if turn is None or turn.done.is_set() or not turn.put_call(call):
            return "the caller's tools are answered only within its own request's turn", True
        self.pending[call.id] = call
        self._calls[call.id] = self
        if self._deadline is None:
            self._deadline = loop.call_later(self.deadline_seconds, self._walked_away)
        ended = loop.create_task(_fail_when_done(turn.done, call))
        try:
            return await call.answer, False
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the deadline passed, or the turn ended (cancelled)
            return str(exc), True
        finally:
            ended.cancel()
            self.pending.pop(call.id, None)
            self._calls.pop(call.id, None)
            if not self.pending and self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

    def check(self, results: list[ToolResult]) -> None:
        """400 unless `results` answer every waiting call."""
        given = {r.call_id for r in results}
        missing = [i for i in self.pending if i not in given]
        if missing:
            raise BadRequest(
                f"the tool calls {missing} are waiting for their results (role: tool)",
                param="messages",
                code="tool_result_expected",
            )

    def answer(self, results: list[ToolResult]) -> None:
        """The caller's answers (`check`ed): each waiting call returns its text to the agent."""
        for result in results:
            # Not waiting from now on: the same results sent again at once answer nothing
            # (two readers of one turn would each get part of it).
            call = self.pending.pop(result.call_id, None)
            self._calls.pop(result.call_id, None)
            if call is not None and not call.answer.done():
                call.answer.set_result(result.text)

    def fail_waiting(self, why: str) -> None:
        """Every waiting call fails with `why` (told to the agent)."""
        for call in list(self.pending.values()):
            if not call.answer.done():
                call.answer.set_exception(RuntimeError(why))

    def _walked_away(self) -> None:
        """No answer in time: the agent is told so, and the turn is cancelled."""
        self._deadline = None
        why = (
            f"the caller did not answer within tool_result_seconds={self.deadline_seconds:g}; "
            "the turn was cancelled"
        )
        for call in list(self.pending.values()):
            if not call.answer.done():
                call.answer.set_exception(TimeoutError(why))
        turn = self.conv.turn
        if turn is not None:
            turn.cancel()


async def offer_tools(
    gw: Any, owner: str, conv: LiveConversation, tools: tuple[CallerTool, ...]
) -> None:
    """Serve `tools` to `conv`'s agent (`gw`: the `service.Gateway`, which imports us); none (`tool_choice: "none"`): its bridge offers
    nothing. A 400 naming `tools` for an agent that takes no HTTP MCP server."""
    if not tools:
        if (bridge := gw.tools.of(conv)) is not None:
            bridge.tools = {}
        return
    init = await conv.pool.initialized(gw.config.ceiling_of(owner))
    mcp = (init.get("agentCapabilities") or {}).get("mcpCapabilities") or {}
    transport = "http" if mcp.get("http") else "sse" if mcp.get("sse") else None
    if transport is None:
        raise unsupported(
            "tools",
            f"the agent {conv.record.agent!r} takes no HTTP or SSE MCP server, the way the "
            "gateway offers it the caller's tools",
        )
    await gw.tools.serving()
    bridge = gw.tools.offer(conv, owner, tools)
    await gw.conversations.serve_tools(conv, (bridge.server(gw.tools.url, transport),))


def call_id(conversation_id: str) -> str:
    """A new call's id, naming its conversation (see Replicas above)."""
    return f"call_{conversation_id.removeprefix(CONVERSATION_PREFIX)}_{secrets.token_hex(8)}"


def called_conversation(call: str) -> str | None:
    """The conversation a call id of ours names (None: not one of ours)."""
    match = _CALL_ID.fullmatch(call)
    return CONVERSATION_PREFIX + match[1] if match else None


async def holder_of_calls(gw: Any, principal: Principal, call_ids: list[str]) -> str | None:
    """Where another replica holds the conversation of `principal`'s that `call_ids` name,
    when none of them waits here (`gw`: the `service.Gateway`). Only the caller's own
    conversation: another key's names nothing, and the request is answered here."""
    if not gw.replica.shared or not call_ids or gw.tools.waiting(principal.name, call_ids):
        return None
    for conversation_id in dict.fromkeys(filter(None, map(called_conversation, call_ids))):
        record = await gw.store.get_conversation(conversation_id)
        if record is not None and owns(principal, record.owner):
            return await gw.replica.only_holder(conversation_id)
    return None


def result_expected(param: str) -> Conflict:
    """A request that brings no results while the agent waits for some."""
    return Conflict(
        "a tool result was expected: the agent waits for the results of the tool calls of "
        "the last answer (role: tool messages, or function_call_output items)",
        param=param,
        code="tool_result_expected",
    )


async def _fail_when_done(done: asyncio.Event, call: PendingCall) -> None:
    """A turn that ends (cancelled, its agent gone) waits for no result any more."""
    await done.wait()
    if not call.answer.done():
        call.answer.set_exception(RuntimeError("the turn ended before the caller answered"))


class ToolBridges:
    """Every conversation's bridge, found by conversation, by bridge id and by call id; and
    the MCP endpoint serving them (an ASGI app mounted at `BRIDGE_PATH`)."""

    def __init__(self, deadline_seconds: float, url: str) -> None:
        self.deadline_seconds = deadline_seconds
        self.url = url  # where this gateway's agents reach it
        self._by_conversation: dict[str, ToolBridge] = {}
        self._by_id: dict[str, ToolBridge] = {}
        self._by_call: dict[str, ToolBridge] = {}  # the bridge of each waiting call
        self._server: Any = None  # the MCP SDK's side, made at the first tools (`serving`)
        self._sse: Any = None
        self._manager: Any = None  # set once its task group runs (`_run`)
        self._loading = asyncio.Lock()
        self._runner: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    def offer(
        self, conv: LiveConversation, owner: str, tools: tuple[CallerTool, ...]
    ) -> ToolBridge:
        """`conv`'s bridge, serving `tools` from now on (made at its first tools)."""
        bridge = self._by_conversation.get(conv.id)
        if bridge is None:
            bridge = ToolBridge(conv, owner, self.deadline_seconds, self._by_call)
            self._by_conversation[conv.id] = self._by_id[bridge.id] = bridge
        bridge.conv = conv  # the live one (an idle conversation is made anew in memory)
        bridge.tools = {t.name: t for t in tools}
        return bridge

    def of(self, conv: LiveConversation) -> ToolBridge | None:
        return self._by_conversation.get(conv.id)

    def waiting(self, owner: str, call_ids: list[str]) -> ToolBridge | None:
        """The bridge of `owner`'s with a call of `call_ids` waiting, if any."""
        for call_id in call_ids:
            bridge = self._by_call.get(call_id)
            if bridge is not None and bridge.owner == owner:
                return bridge
        return None

    def answering(self, owner: str, results: list[ToolResult]) -> ToolBridge:
        """The bridge whose waiting calls `results` answer (400 naming an unknown id; a
        call of another key's is unknown to this one), not answered yet."""
        bridge = self.waiting(owner, [r.call_id for r in results])
        if bridge is None:
            raise BadRequest(
                f"no tool call {results[0].call_id!r} is waiting for a result",
                param="messages.tool_call_id",
                code="unknown_tool_call_id",
            )
        unknown = [r.call_id for r in results if r.call_id not in bridge.pending]
        if unknown:
            raise BadRequest(
                f"no tool call {unknown[0]!r} is waiting for a result",
                param="messages.tool_call_id",
                code="unknown_tool_call_id",
            )
        bridge.check(results)
        return bridge

    def stop_waiting(self) -> None:
        """The gateway stops: no call waits for a caller any more (see Stopping above)."""
        for bridge in self._by_conversation.values():
            bridge.fail_waiting("the gateway is stopping; the caller's tool was not run")

    def sweep(self, live: Callable[[str], bool]) -> int:
        """Drop the bridges of conversations no longer `live` in memory; how many went."""
        gone = [b for c, b in self._by_conversation.items() if not live(c) and not b.pending]
        for bridge in gone:
            del self._by_conversation[bridge.conv.id], self._by_id[bridge.id]
        return len(gone)

    # ---- the MCP endpoint -----------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """For as long as the app runs: the MCP endpoint, once made (`serving`), stops
        with it."""
        try:
            yield
        finally:
            self._stopping.set()
            if self._runner is not None:
                await self._runner

    async def serving(self) -> None:
        """The MCP endpoint, made when a conversation is first offered tools: importing
        the SDK's server side costs a gateway's start about 0.6 s of CPU, which one whose
        callers bring no tools never needs. Imported in a thread: on the event loop it
        stalls a replica's heartbeats long enough, on a loaded machine, for the other
        replicas to take it for gone."""
        async with self._loading:
            if self._stopping.is_set():
                raise Unavailable("the gateway is stopping", code="gateway_stopping")
            if self._manager is not None:
                return
            server, sse, manager = await asyncio.to_thread(_mcp_server_side)
            self._server = server(
                "agentao-caller-tools",
                on_list_tools=self._list_tools,
                on_call_tool=self._call_tool,
                get_tool_input_schema=self._input_schema,
            )
            self._server.middleware.clear()  # the SDK's way to opt out of its OTel spans
            self._sse = sse(SSE_MESSAGES_PATH)
            running = asyncio.get_running_loop().create_future()
            self._runner = asyncio.get_running_loop().create_task(
                self._run(manager(self._server, stateless=True, json_response=True), running)
            )
            self._manager = await running

    async def _run(self, manager: Any, running: asyncio.Future[Any]) -> None:
        """The SDK's session manager's task group, entered and left in this one task."""
        try:
            async with manager.run():
                running.set_result(manager)
                await self._stopping.wait()
        finally:
            if not running.done():
                running.set_exception(Unavailable("the caller's tools could not be served"))

    def bridge_of(self, headers: Any) -> ToolBridge | None:
        """The bridge a request's header names, if it carries that bridge's secret."""
        value = headers.get(BRIDGE_HEADER) if headers is not None else None
        if not isinstance(value, str) or "." not in value:
            return None
        bridge_id, _, secret = value.partition(".")
        bridge = self._by_id.get(bridge_id)
        # Bytes: `compare_digest` raises on a str that is not ASCII (a header can be any).
        if bridge is None or not hmac.compare_digest(bridge.secret.encode(), secret.encode()):
            return None
        return bridge

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from starlette.datastructures import Headers

        bridge = self.bridge_of(Headers(scope=scope))
        if bridge is None or self._manager is None:
            error = Unauthorized("no such tool bridge", code="invalid_tool_bridge")
            await error.send(scope, receive, send)
            return
        served = _SERVED_BRIDGE.set(bridge)
        try:
            await self._serve(scope, receive, send)
        finally:
            _SERVED_BRIDGE.reset(served)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        if path == SSE_PATH:  # one agent's MCP session, for as long as it stays connected
            async with self._sse.connect_sse(scope, receive, send) as (read, write):
                options = self._server.create_initialization_options()
                await self._server.run(read, write, options)
        elif path == SSE_MESSAGES_PATH:
            await self._sse.handle_post_message(scope, receive, send)
        else:
            await self._manager.handle_request(scope, receive, send)

    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        import mcp_types as t

        bridge = self._bridge(ctx)
        read_only = t.ToolAnnotations(read_only_hint=True)
        tools = [
            t.Tool(
                name=tool.name,
                description=tool.description or tool.name,
                input_schema=tool.parameters,
                annotations=read_only,
            )
            for tool in bridge.tools.values()
        ]
        return t.ListToolsResult(tools=tools)

    def _input_schema(self, name: str) -> Mapping[str, Any] | None:
        """The schema of the served bridge's tool `name` (None: no such tool, nothing to
        check; the call itself is refused then)."""
        bridge = _SERVED_BRIDGE.get()
        tool = bridge.tools.get(name) if bridge is not None else None
        return tool.parameters if tool is not None else None

    async def _call_tool(self, ctx: Any, params: Any) -> Any:
        import mcp_types as t

        text, error = await self._bridge(ctx).call(params.name, dict(params.arguments or {}))
        return t.CallToolResult(content=[t.TextContent(type="text", text=text)], is_error=error)

    def _bridge(self, ctx: Any) -> ToolBridge:
        request = getattr(ctx, "request", None)
        bridge = self.bridge_of(getattr(request, "headers", None))
        if bridge is None:  # checked before the SDK ran; gone since (the conversation ended)
            raise ValueError("no such tool bridge")
        return bridge


def _mcp_server_side() -> tuple[Any, Any, Any]:
    """The MCP SDK's low-level server, SSE transport and streamable HTTP session manager."""
    from mcp.server.lowlevel import Server
    from mcp.server.sse import SseServerTransport
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    return Server, SseServerTransport, StreamableHTTPSessionManager


__all__ = [
    "BRIDGE_HEADER",
    "BRIDGE_PATH",
    "SERVER_NAME",
    "SSE_MESSAGES_PATH",
    "SSE_PATH",
    "PendingCall",
    "ToolBridge",
    "ToolBridges",
    "bridge_url",
    "call_id",
    "called_conversation",
    "holder_of_calls",
    "offer_tools",
    "result_expected",
]
