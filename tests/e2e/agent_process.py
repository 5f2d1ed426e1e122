"""Spawn `python -m agentao --acp` and speak JSON lines to it over real pipes.

A deliberately plain client: raw dicts in and out, so the tests check the wire
itself, not our own client library. The reader task sorts what arrives:

* responses resolve the future of `request()`;
* the agent's own requests (`session/request_permission`, `fs/*`, `terminal/*`,
  `_agentao.cn/ask_user`) go to `handlers[method]` (an async callable taking the
  message and returning a result dict, raising `ClientError` for an error reply,
  or returning `NO_REPLY` to leave the request unanswered); with no handler
  the request is only recorded;
* everything (in arrival order) is appended to `received`; what the test sent as a
  message is appended to `sent`.

`updates()` leaves out the updates that describe the session rather than a turn
(`SESSION_KINDS`: commands, usage, title), which arrive around every turn; pass
`every=True` for them too. `turn_update` tells a turn's first update ("it started").
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

NO_REPLY = object()
SESSION_KINDS = frozenset({"available_commands_update", "usage_update", "session_info_update"})
Handler = Callable[[dict[str, Any]], Awaitable[Any]]


class ClientError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def turn_update(message: dict[str, Any]) -> bool:
    """A `session/update` of a turn (not one of SESSION_KINDS)."""
    return (
        message.get("method") == "session/update"
        and message["params"]["update"].get("sessionUpdate") not in SESSION_KINDS
    )


def agent_env(home: Path, **extra: str) -> dict[str, str]:
    """A clean environment for the agent: state under `home`, no provider keys leaking in."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("LLM_PROVIDER", None)
    env.update(AGENTAO_HOME=str(home), PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def scripted_env(tmp_path: Path, responses: list[dict[str, Any]], **extra: str) -> dict[str, str]:
    """An environment for the scripted provider playing `responses` (state in tmp_path/home)."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": responses}))
    return agent_env(
        tmp_path / "home", LLM_PROVIDER="SCRIPTED", AGENTAO_SCRIPT=str(script), **extra
    )


@asynccontextmanager
async def running(
    env: dict[str, str], *args: str, capabilities: dict[str, Any] | None = None, init: bool = True
) -> AsyncIterator[AgentProcess]:
    """A started agent (initialized unless `init=False`), closed (EOF) afterwards."""
    agent = await AgentProcess.start(env, *args)
    try:
        if init:
            await agent.initialize(capabilities)
        yield agent
    finally:
        code = await agent.close()
        assert code in (0, -9), agent.stderr.decode()[-3000:]


class AgentProcess:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.received: list[dict[str, Any]] = []
        self.sent: list[dict[str, Any]] = []
        self.handlers: dict[str, Handler] = {}
        self.agent_requests: list[dict[str, Any]] = []
        self._futures: dict[int | str, asyncio.Future[dict[str, Any]]] = {}
        self._next_id = 1
        self._arrived = asyncio.Condition()
        self._reader = asyncio.create_task(self._read())
        self._tasks: set[asyncio.Task[Any]] = set()
        self.stderr = b""

    @classmethod
    async def start(cls, env: dict[str, str], *args: str, cwd: Path | None = None) -> AgentProcess:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "agentao",
            "--acp",
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=str(cwd) if cwd else None,
            limit=64 * 1024 * 1024,
        )
        agent = cls(proc)
        agent._stderr_task = asyncio.create_task(agent._drain_stderr())
        return agent

    # ---- sending ---------------------------------------------------------------------

    async def send(self, message: dict[str, Any] | bytes) -> None:
        if not isinstance(message, bytes):
            self.sent.append(message)
        data = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def request(self, method: str, params: Any = None, *, timeout: float = 20) -> dict:
        """Send a request; the whole response message (with `result` or `error`)."""
        request_id = self._next_id
        self._next_id += 1
        future = asyncio.get_running_loop().create_future()
        self._futures[request_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return await asyncio.wait_for(future, timeout)

    async def call(self, method: str, params: Any = None, *, timeout: float = 20) -> Any:
        """`request()` that returns the result and fails the test on an error reply."""
        reply = await self.request(method, params, timeout=timeout)
        assert "error" not in reply, reply
        return reply["result"]

    async def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    # ---- the usual steps -------------------------------------------------------------

    async def initialize(self, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"protocolVersion": 1, "clientCapabilities": capabilities or {}}
        return await self.call("initialize", params)

    async def new_session(self, cwd: Path | str, mcp_servers: list | None = None) -> str:
        result = await self.call("session/new", {"cwd": str(cwd), "mcpServers": mcp_servers or []})
        return result["sessionId"]

    async def prompt(self, session_id: str, text: str, *, timeout: float = 30) -> dict[str, Any]:
        """The whole `session/prompt` response message."""
        params = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        return await self.request("session/prompt", params, timeout=timeout)

    # ---- what arrived ----------------------------------------------------------------

    def updates(
        self, session_id: str | None = None, since: int = 0, every: bool = False
    ) -> list[dict[str, Any]]:
        """The `update` objects of `session/update`s received (from index `since`);
        without `every`, those of SESSION_KINDS left out."""
        return [
            m["params"]["update"]
            for m in self.received[since:]
            if m.get("method") == "session/update"
            and (session_id is None or m["params"].get("sessionId") == session_id)
            and (every or m["params"]["update"].get("sessionUpdate") not in SESSION_KINDS)
        ]

    async def wait_for(self, predicate: Callable[[dict], bool], timeout: float = 20) -> dict:
        """The first received message (old or new) matching `predicate`."""
        async with self._arrived:
            found = await asyncio.wait_for(
                self._arrived.wait_for(lambda: next(filter(predicate, self.received), None)),
                timeout,
            )
        return found

    async def wait_request(self, method: str, timeout: float = 20, nth: int = 1) -> dict:
        """The `nth` request the agent sent with `method`."""

        def seen() -> dict | None:
            hits = [m for m in self.agent_requests if m.get("method") == method]
            return hits[nth - 1] if len(hits) >= nth else None

        async with self._arrived:
            return await asyncio.wait_for(self._arrived.wait_for(seen), timeout)

    async def reply(self, request: dict[str, Any], result: Any) -> None:
        await self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    # ---- shutdown --------------------------------------------------------------------

    async def close(self, timeout: float = 10) -> int:
        """Close stdin (EOF) and wait for the exit code."""
        assert self.proc.stdin is not None
        if not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        try:
            code = await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            self.proc.kill()
            code = await self.proc.wait()
        await asyncio.gather(self._reader, self._stderr_task, return_exceptions=True)
        for task in self._tasks:
            task.cancel()
        return code

    def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()

    # ---- internals -------------------------------------------------------------------

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            message = json.loads(line)
            async with self._arrived:
                self.received.append(message)
                self._sort(message)
                self._arrived.notify_all()
        for future in self._futures.values():
            if not future.done():
                future.set_exception(EOFError("the agent closed stdout"))

    def _sort(self, message: dict[str, Any]) -> None:
        if "method" not in message:
            future = self._futures.pop(message.get("id"), None)
            if future is not None and not future.done():
                future.set_result(message)
            return
        if "id" in message:
            self.agent_requests.append(message)
            handler = self.handlers.get(message["method"])
            if handler is not None:
                task = asyncio.create_task(self._answer(handler, message))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _answer(self, handler: Handler, message: dict[str, Any]) -> None:
        try:
            result = await handler(message)
        except ClientError as exc:
            error = {"code": exc.code, "message": exc.message}
            if exc.data is not None:
                error["data"] = exc.data
            await self.send({"jsonrpc": "2.0", "id": message["id"], "error": error})
            return
        if result is not NO_REPLY:
            await self.reply(message, result)

    async def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(65536):
            self.stderr += chunk
