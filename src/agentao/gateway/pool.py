"""Agent processes: N per agent, sessions spread across them, restarted when they die.

Theory of operation. A `Worker` owns one `agentao.client.Client` (one agent
process). A monitor task waits for that process to exit; then the worker is
marked dead at once (its in-flight turns already fail inside the client with
AgentDisconnected) and restarted after a back-off that doubles on every failed
start and resets once a process has lived `STABLE_SECONDS`. Sessions are opened
on the live worker hosting the fewest; a request that finds no live worker waits
up to `Limits.start_timeout_seconds` for one, then gets a 503.

The gateway never answers the agent's calls itself: files go through the
client's workspace-restricted handlers, the agent runs its own shell
(`terminal=False`), and permission requests go to the handler given to the
pool (the conversation registry, which asks the turn's policy).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from agentao.addresses import MCP_PUBLIC_ONLY_ENV
from agentao.client import (
    AgentCommand,
    Client,
    ClientError,
    ClientPolicy,
    Handlers,
    Session,
)
from agentao.client.files import FileHandler
from agentao.client.permissions import PermissionHandler
from agentao.client.serving import AskUser
from agentao.gateway.config import AgentSpec, Limits
from agentao.gateway.errors import AgentUnavailable
from agentao.protocol.decode import to_builtins

log = logging.getLogger("agentao.gateway")

STABLE_SECONDS = 10.0  # a process that lived this long resets the restart back-off


@dataclass(frozen=True, slots=True)
class SessionParams:
    """Where a session is opened: the agent's configured cwd unless a remote client named
    one (checked by the remote endpoint, see remote/)."""

    cwd: str | None = None
    additional_dirs: tuple[str, ...] = ()
    mcp_servers: tuple[Any, ...] = ()

    @classmethod
    def of(cls, stored: dict[str, Any] | None) -> SessionParams:
        if not stored:
            return cls()
        return cls(
            stored.get("cwd"),
            tuple(stored.get("additionalDirectories") or ()),
            tuple(stored.get("mcpServers") or ()),
        )

    def stored(self) -> dict[str, Any]:
        return {
            "cwd": self.cwd,
            "additionalDirectories": list(self.additional_dirs),
            "mcpServers": list(self.mcp_servers),
        }


@dataclass(frozen=True, slots=True)
class AgentInfo:
    """What the gateway learned about an agent from `initialize` and its first session."""

    name: str
    title: str | None = None
    version: str | None = None
    load_session: bool = False
    images: bool = False
    models: tuple[str, ...] = ()
    model_option: str | None = None  # the config option id that selects the model


class Worker:
    """One agent process and the sessions it hosts."""

    def __init__(self, pool: AgentPool, index: int) -> None:
        self.pool = pool
        self.index = index
        self.client: Client | None = None
        self.sessions: set[str] = set()
        self._monitor: asyncio.Task[None] | None = None
        self._backoff = pool.limits.restart_backoff_seconds
        self._closing = False

    @property
    def alive(self) -> bool:
        return self.client is not None

    async def start(self) -> None:
        """Start the process (retrying with back-off until it works or the pool closes)."""
        while not self._closing:
            started = time.monotonic()
            client = Client(
                self.pool.command,
                policy=ClientPolicy(approve="none", terminal=False),
                handlers=Handlers(
                    permission=self.pool.permission,
                    files=self.pool.files,
                    ask_user=self.pool.ask_user,
                ),
            )
            try:
                await asyncio.wait_for(client.start(), self.pool.limits.start_timeout_seconds)
            except (ClientError, TimeoutError, OSError) as exc:
                log.error("agent %s[%d] did not start: %s", self.pool.spec.name, self.index, exc)
                await client.close()
                await self._sleep_backoff()
                continue
            self.client = client
            self.pool.learn(client)
            self._monitor = asyncio.get_running_loop().create_task(self._watch(client, started))
            self.pool.changed()
            return

    async def _watch(self, client: Client, started: float) -> None:
        assert client.process is not None
        code = await client.process.wait(None)
        if self._closing:
            return
        log.warning(
            "agent %s[%d] exited (code %s); restarting", self.pool.spec.name, self.index, code
        )
        self.client = None
        self.sessions.clear()
        self.pool.changed()
        with contextlib.suppress(Exception):
            await client.close()
        if time.monotonic() - started >= STABLE_SECONDS:
            self._backoff = self.pool.limits.restart_backoff_seconds
        await self._sleep_backoff()
        await self.start()

    async def _sleep_backoff(self) -> None:
        await asyncio.sleep(self._backoff)
        self._backoff = min(self._backoff * 2, self.pool.limits.max_restart_backoff_seconds)

    async def close(self) -> None:
        self._closing = True
        if self._monitor is not None:
            self._monitor.cancel()
        client, self.client = self.client, None
        if client is not None:
            await client.close()


class AgentPool:
    """The processes of one configured agent."""

    def __init__(
        self,
        spec: AgentSpec,
        limits: Limits,
        permission: PermissionHandler,
        *,
        mcp_public_only: bool = True,
    ) -> None:
        self.spec = spec
        self.limits = limits
        self.permission = permission
        env = dict(spec.env)
        if mcp_public_only:  # our agent, too, refuses MCP URLs on private addresses
            env[MCP_PUBLIC_ONLY_ENV] = "1"
        self.command = AgentCommand(spec.command, env=env, cwd=spec.cwd)
        self.info = AgentInfo(spec.name)
        # The agent's own `initialize` answer, for remote ACP clients (authMethods empty:
        # the gateway authenticated its processes; a remote client authenticates to us).
        self.initialize_result: dict[str, Any] | None = None
        # The agent's file and ask_user calls; None: the client library's defaults (files
        # confined to the session's directories, no one to ask). The remote ACP relays
        # route a watched session's calls to its remote clients.
        self.files: FileHandler | None = None
        self.ask_user: AskUser | None = None
        self.workers = [Worker(self, i) for i in range(spec.processes)]
        self._changed = asyncio.Event()
        self._starting: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Start every process; returns once each has started or failed its first attempt."""
        self._starting = [asyncio.ensure_future(w.start()) for w in self.workers]
        await asyncio.wait(self._starting, timeout=self.limits.start_timeout_seconds)

    async def close(self) -> None:
        for task in self._starting:
            task.cancel()
        await asyncio.gather(*(w.close() for w in self.workers), return_exceptions=True)

    def changed(self) -> None:
        """A process started or exited, or a session was released: wake the waiters."""
        self._changed.set()

    async def wait_until(self, ready: Callable[[], bool]) -> None:
        """Return once `ready()` holds, checked again at every `changed()` (no deadline)."""
        while not ready():
            self._changed.clear()
            await self._changed.wait()

    async def initialized(self) -> dict[str, Any]:
        """The agent's `initialize` answer, once a process has given it (503 if none starts
        within the start timeout)."""
        await self._worker()
        assert self.initialize_result is not None
        return self.initialize_result

    @property
    def live(self) -> int:
        return sum(w.alive for w in self.workers)

    def learn(self, client: Client) -> None:
        self.initialize_result = {**to_builtins(client.init), "authMethods": []}
        caps = getattr(client.init, "agent_capabilities", None)
        prompt_caps = getattr(caps, "prompt_capabilities", None)
        agent = client.agent_info
        self.info = replace(
            self.info,
            title=getattr(agent, "title", None) or getattr(agent, "name", None),
            version=getattr(agent, "version", None),
            load_session=client.supports("load"),
            images=bool(getattr(prompt_caps, "image", False)),
        )

    def learn_models(self, response: Any) -> None:
        """Read the model choices from a session's `configOptions` (once)."""
        if self.info.models:
            return
        option_id, models = model_choices(response)
        if models:
            self.info = replace(self.info, models=models, model_option=option_id)

    async def _worker(self) -> Worker:
        deadline = time.monotonic() + self.limits.start_timeout_seconds
        while True:
            live = [w for w in self.workers if w.alive]
            if live:
                return min(live, key=lambda w: len(w.sessions))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AgentUnavailable(
                    f"agent {self.spec.name!r} is not running (no process started in time)",
                    code="agent_unavailable",
                )
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    async def new_session(self, params: SessionParams | None = None) -> Session:
        """A session in the agent's cwd, or where `params` (a remote client's) say."""
        worker = await self._worker()
        assert worker.client is not None
        p = params or SessionParams()
        session = await worker.client.new_session(
            p.cwd or self.spec.cwd, additional_dirs=p.additional_dirs, mcp_servers=p.mcp_servers
        )
        worker.sessions.add(session.id)
        self.learn_models(session.response)
        return session

    async def load_session(self, session_id: str, params: SessionParams | None = None) -> Session:
        """Reopen a stored session on a live process; its replayed history is folded into
        the session's view (what a newly attached reader is shown) and dropped from its
        stream."""
        worker = await self._worker()
        assert worker.client is not None
        p = params or SessionParams()
        session = await worker.client.load_session(
            session_id,
            p.cwd or self.spec.cwd,
            additional_dirs=p.additional_dirs,
            mcp_servers=p.mcp_servers,
        )
        session.drain()
        worker.sessions.add(session.id)
        return session

    def hosts(self, session: Session) -> bool:
        """Is `session` on a process that is still alive?"""
        return any(
            w.client is not None and w.client.channel is session.channel
            for w in self.workers
            if w.alive
        )

    def release(self, session: Session) -> None:
        for worker in self.workers:
            worker.sessions.discard(session.id)
        self.changed()


def model_choices(response: Any) -> tuple[str | None, tuple[str, ...]]:
    """(option id, values) of the `model` select option in a session's `configOptions`."""
    for option in getattr(response, "config_options", None) or ():
        if getattr(option, "category", None) != "model" and getattr(option, "id", None) != "model":
            continue
        values: list[str] = []
        for item in getattr(option, "options", None) or ():
            group = getattr(item, "options", None)
            for choice in group if isinstance(group, list) else (item,):
                value = getattr(choice, "value", None)
                if isinstance(value, str):
                    values.append(value)
        return option.id, tuple(values)
    return None, ()


__all__ = ["AgentInfo", "AgentPool", "SessionParams", "Worker", "model_choices"]
