"""MCP servers as tools, through the official `mcp` SDK (imported on first use).

Theory of operation
-------------------
A session hands `McpHub` the servers the user configured (stdio, SSE or streamable
HTTP); nothing else is ever started. `start()` connects to all of them concurrently.
The SDK's clients are anyio context managers that must be entered and exited in the
same task, so each server gets one *owner task* that enters the client, lists the
tools, and then waits for `aclose()`; tool calls from the turn's tasks go through the
live session meanwhile. A server that fails (or exceeds `startup_timeout`) becomes an
`McpFailure` in the list `start()` returns, and the others work. Closing sets one
event; every owner task leaves its `async with`, which for stdio closes the server's
stdin and, failing that, kills its process tree (the SDK's shutdown sequence).

Private addresses: with `AGENTAO_MCP_PUBLIC_ONLY=1` in its environment (the gateway
starts our agent so, see `agentao.addresses`), an http/sse server whose host resolves to
a loopback, private, link-local, … address is refused: `check_server_addresses` when the
session opens (its answer says why), and again when the connection is made. The one
exception is the URL exactly equal to `AGENTAO_MCP_TRUSTED_URL` (the gateway's own tool
bridge, which the gateway sets in our environment; no client can).

Tool names: `mcp__<server>__<tool>`, each part reduced to `[A-Za-z0-9_-]` and the
whole to 64 characters (a short hash keeps cut names unique), as OpenAI-style
function names require. Kind `read` when the server annotates the tool
`readOnlyHint`, else `other`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentao.addresses import (
    MCP_PUBLIC_ONLY_ENV,
    MCP_TRUSTED_URL_ENV,
    AddressRefused,
    check_public_url,
)
from agentao.agent.events import Notice, TextOutput
from agentao.agent.settings import McpLimits, cap_text
from agentao.agent.tools.base import Tool, ToolContext, ToolError, ToolResult

if TYPE_CHECKING:
    import mcp_types

_NAME_MAX = 64
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True, slots=True)
class StdioServer:
    """A server we spawn and talk to over its stdin/stdout."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()  # added to a minimal safe environment
    cwd: str | None = None


@dataclass(frozen=True, slots=True)
class SseServer:
    name: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class HttpServer:
    """Streamable HTTP transport."""

    name: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()


McpServerConfig = StdioServer | SseServer | HttpServer


@dataclass(frozen=True, slots=True)
class McpFailure:
    """A server that did not start (or died); the session goes on without it."""

    server: str
    error: str

    @property
    def message(self) -> str:
        return f"MCP server {self.server!r} is unavailable: {self.error}"

    def notice(self) -> Notice:
        return Notice(self.message)


class McpServerRefused(ValueError):
    """A server this process may not connect to; the message names it and says why."""

    def __init__(self, server: str, reason: str) -> None:
        super().__init__(
            f"MCP server {server!r} refused: {reason} ({MCP_PUBLIC_ONLY_ENV}=1: only public "
            "addresses are reached)"
        )
        self.server = server


def public_only(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this process may reach MCP servers on public addresses only."""
    return (os.environ if environ is None else environ).get(MCP_PUBLIC_ONLY_ENV) == "1"


async def check_server_address(config: McpServerConfig) -> None:
    """Raise `McpServerRefused` for an http/sse server on a non-public address, when
    `public_only()`; stdio servers are the user's own commands and are not judged here."""
    if isinstance(config, StdioServer) or not public_only() or _trusted(config.url):
        return
    try:
        await check_public_url(config.url)
    except AddressRefused as exc:
        raise McpServerRefused(config.name, str(exc)) from None


def _trusted(url: str, environ: Mapping[str, str] | None = None) -> bool:
    """Whether `url` is exactly the one URL the gateway trusts us with (its tool bridge)."""
    trusted = (os.environ if environ is None else environ).get(MCP_TRUSTED_URL_ENV)
    return bool(trusted) and url == trusted


async def check_server_addresses(servers: Sequence[McpServerConfig]) -> None:
    """`check_server_address` for each server, in order."""
    for config in servers:
        await check_server_address(config)


def tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, safe as a function name (≤ 64 chars of [A-Za-z0-9_-])."""
    name = f"mcp__{_UNSAFE_NAME.sub('_', server)}__{_UNSAFE_NAME.sub('_', tool)}"
    if len(name) <= _NAME_MAX:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[: _NAME_MAX - 9]}_{digest}"


CallFn = Callable[[str, dict[str, Any]], Awaitable["mcp_types.CallToolResult"]]


class McpTool(Tool):
    """One tool of one MCP server. Stoppable: the call's task is cancelled, as a
    cancelled turn cancels it (the session stays up for the next call)."""

    cancellable = True

    def __init__(self, server: str, spec: mcp_types.Tool, call: CallFn, limits: McpLimits):
        self.server = server
        self.remote_name = spec.name
        self.name = tool_name(server, spec.name)
        annotations = spec.annotations
        self.kind = "read" if annotations is not None and annotations.read_only_hint else "other"
        self.description = spec.description or f"{spec.name} (MCP server {server})"
        self.parameters = dict(spec.input_schema or {"type": "object", "properties": {}})
        self.label = spec.title or (annotations.title if annotations else None) or spec.name
        self._call = call
        self._limits = limits

    def title(self, args: dict[str, Any]) -> str:
        return f"{self.label} ({self.server})"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            result = await self._call(self.remote_name, args)
        except asyncio.CancelledError:
            raise
        except ToolError:
            raise
        except Exception as e:  # the boundary: whatever the server did, the model is told
            raise ToolError(f"MCP server {self.server!r}: {_describe(e)}") from e
        text = "\n".join(_block_text(block) for block in result.content)
        if not text and result.structured_content is not None:
            text = json.dumps(result.structured_content, ensure_ascii=False, indent=2)
        text, _ = cap_text(
            text or "(no content)", self._limits.max_result_chars, "max_result_chars"
        )
        return ToolResult(
            text,
            (TextOutput(text),),
            is_error=bool(result.is_error),
            raw_output=result.structured_content,
        )


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return block.text
    if kind in ("image", "audio"):
        return f"[{kind}: {block.mime_type}, {len(block.data) * 3 // 4} bytes]"
    if kind == "resource":
        res = block.resource
        return getattr(res, "text", None) or f"[resource {res.uri} ({res.mime_type or 'binary'})]"
    if kind == "resource_link":
        return f"[resource link: {block.uri}]"
    return f"[{kind or 'unknown'} content]"


def _describe(e: BaseException) -> str:
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    text = str(e) or type(e).__name__
    if isinstance(e, OSError) and e.filename:
        text = f"{e.strerror or e}: {e.filename}"
    return text if type(e).__name__ in text else f"{type(e).__name__}: {text}"


class _Connection:
    """One server's owner task and live client."""

    def __init__(self, config: McpServerConfig, limits: McpLimits, closing: asyncio.Event):
        self.config = config
        self.limits = limits
        self.closing = closing
        self.client: Any = None
        self.task: asyncio.Task[None] | None = None
        self.error: str | None = None

    async def start(self) -> list[mcp_types.Tool]:
        ready: asyncio.Future[list[mcp_types.Tool]] = asyncio.get_running_loop().create_future()
        self.task = asyncio.create_task(self._own(ready), name=f"mcp:{self.config.name}")
        try:
            return await asyncio.wait_for(asyncio.shield(ready), self.limits.startup_timeout)
        except TimeoutError:
            await self.stop()
            raise TimeoutError(
                f"no answer within startup_timeout={self.limits.startup_timeout:g} s"
            ) from None
        except BaseException:
            await self.stop()
            raise

    async def _own(self, ready: asyncio.Future[list[mcp_types.Tool]]) -> None:
        from mcp import Client

        try:
            await check_server_address(self.config)  # again: DNS may answer otherwise now
            async with Client(_transport(self.config)) as client:
                tools = await _list_tools(client)
                self.client = client
                if not ready.done():
                    ready.set_result(tools)
                await self.closing.wait()
        except BaseException as e:
            self.error = _describe(e)
            if not ready.done():
                ready.set_exception(e if isinstance(e, Exception) else RuntimeError(self.error))
            if not isinstance(e, Exception):
                raise
        finally:
            self.client = None

    async def call(self, name: str, args: dict[str, Any]) -> mcp_types.CallToolResult:
        client = self.client
        if client is None:
            raise ToolError(f"MCP server {self.config.name!r} is not connected ({self.error})")
        return await client.call_tool(name, args, read_timeout_seconds=self.limits.call_timeout)

    async def stop(self) -> None:
        task = self.task
        if task is None or task.done():
            return
        task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(task, self.limits.close_timeout)


async def _list_tools(client: Any) -> list[mcp_types.Tool]:
    tools, cursor = [], None
    for _ in range(100):  # a paginator that never ends cannot hang startup
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _transport(config: McpServerConfig) -> Any:
    if isinstance(config, StdioServer):
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=config.command, args=list(config.args), env=dict(config.env), cwd=config.cwd
        )
        return stdio_client(params, errlog=_errlog())
    if isinstance(config, SseServer):
        from mcp.client.sse import sse_client

        return sse_client(config.url, headers=dict(config.headers))
    return _streamable_http(config.url, dict(config.headers))


@contextlib.asynccontextmanager
async def _streamable_http(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


def _errlog() -> Any:
    """Where a stdio server's stderr goes: our stderr (never stdout, the ACP wire)."""
    try:
        sys.stderr.fileno()
        return sys.stderr
    except (AttributeError, OSError, ValueError):
        return sys.__stderr__


class McpHub:
    """The MCP servers of one session: start them all, expose their tools, close them."""

    def __init__(self, servers: Sequence[McpServerConfig], limits: McpLimits | None = None):
        self.limits = limits or McpLimits()
        self._closing = asyncio.Event()
        self._connections = [_Connection(s, self.limits, self._closing) for s in servers]
        self._tools: list[McpTool] = []
        self.failures: list[McpFailure] = []

    @property
    def tools(self) -> list[Tool]:
        return list(self._tools)

    async def start(self) -> list[McpFailure]:
        """Connect to every server concurrently; the failures (the rest work)."""
        results = await asyncio.gather(
            *(c.start() for c in self._connections), return_exceptions=True
        )
        used: set[str] = set()
        for conn, result in zip(self._connections, results, strict=True):
            if isinstance(result, BaseException):
                if isinstance(result, asyncio.CancelledError):
                    raise result
                self.failures.append(McpFailure(conn.config.name, _describe(result)))
                continue
            for spec in result:
                tool = McpTool(conn.config.name, spec, conn.call, self.limits)
                base, n = tool.name[: _NAME_MAX - 4], 2
                while tool.name in used:  # two servers whose names reduce alike
                    tool.name, n = f"{base}_{n}", n + 1
                used.add(tool.name)
                self._tools.append(tool)
        return list(self.failures)

    async def aclose(self) -> None:
        """Stop every server (stdio processes end); bounded by `close_timeout`."""
        self._closing.set()
        tasks = [c.task for c in self._connections if c.task is not None and not c.task.done()]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=self.limits.close_timeout)
            for conn in self._connections:
                if conn.task in pending:
                    await conn.stop()
        self._tools.clear()

    async def __aenter__(self) -> McpHub:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


__all__ = [
    "HttpServer",
    "McpFailure",
    "McpHub",
    "McpServerConfig",
    "McpServerRefused",
    "McpTool",
    "SseServer",
    "StdioServer",
    "check_server_address",
    "check_server_addresses",
    "public_only",
    "tool_name",
]
