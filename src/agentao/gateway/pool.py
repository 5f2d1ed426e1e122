"""Agent processes: N per agent and key ceiling, sessions spread across them, restarted
when they die.

Theory of operation. A key's ceiling must bind what its turns can do, so the
processes of one agent are grouped by the ceiling of the keys they serve: each group
starts with that ceiling in its environment (`AGENTAO_MODE_CEILING`, which our agent
holds every session below; no client can reach a process's environment), every
process runs in a bubblewrap sandbox of its own (confine.py), and a session opened for
a key lands on a process of its key's ceiling, in the mode the agent's config names for
it (ceilings.py). Groups start when the gateway does for the ceilings its keys have,
else at their first session. A `Worker` owns one `agentao.client.Client` (one agent
process). A monitor task waits for that process to exit; then the worker is
marked dead at once (its in-flight turns already fail inside the client with
AgentDisconnected) and restarted after a back-off that doubles on every failed
start and resets once a process has lived `STABLE_SECONDS`. Sessions are opened
on the live worker hosting the fewest, counting those it is opening (`Worker.load`:
a burst of new conversations is spread, not heaped on one process while the first
answers are awaited); a request that finds no live worker waits
up to `Limits.start_timeout_seconds` for one, then gets a 503.

The gateway never answers the agent's calls itself: files go through the
client's workspace-restricted handlers, the agent runs its own shell
(`terminal=False`), and permission requests go to the handler given to the
pool (the conversation registry, which asks the turn's policy).

Protocol versions. A process speaks the ACP version its agent's config names
(`[agents.NAME] protocol`), by default `auto`: v1 where the agent speaks it, else v2
(`versions()`; a refused handshake tries the next version at once, and the pool then
starts its processes in the version that worked). What differs for a v2 process
(reopening a session with `session/resume`, modes as a config option, the log kept in
v1's shape) is in agent_protocol.py. A v2 agent calls no client `fs/*`: the files
handler never bounds it, only its sandbox does (confine.py: a read-only ceiling's
processes get their workspace read-only).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from agentao.addresses import MCP_PUBLIC_ONLY_ENV, MCP_TRUSTED_URL_ENV
from agentao.client import (
    AgentCommand,
    Client,
    ClientError,
    ClientPolicy,
    Handlers,
    HandshakeError,
    Session,
)
from agentao.client.config import FileAccess
from agentao.client.files import FileHandler
from agentao.client.permissions import PermissionHandler
from agentao.client.serving import ASK_USER_UNAVAILABLE
from agentao.gateway.agent_protocol import (
    AUTO,
    can_reopen,
    current_mode,
    initialize_v1,
    model_choices,
    reopen,
    takes_images,
    takes_system_prompt,
    with_mode,
)
from agentao.gateway.ceilings import CeilingRules
from agentao.gateway.config import AgentSpec, Limits
from agentao.gateway.confine import OuterStatus, confine
from agentao.gateway.errors import AgentUnavailable
from agentao.modes import CEILING_ENV, MODE_RANK, READ_ONLY_MODE

log = logging.getLogger("agentao.gateway")

STABLE_SECONDS = 10.0  # a process that lived this long resets the restart back-off
# Key ceilings that can approve no write: their processes see the workspace read-only.
READ_ONLY_CEILINGS = frozenset({"reject", "reads"})


def process_ceiling(spec: AgentSpec, ceiling: str) -> str:
    """The highest mode our agent's process serving keys of `ceiling` may put a session in:
    what the agent's rules reach, and never a writing mode for a read-only ceiling (our
    agent's default mode writes inside the workspace without asking, so a `reject` or
    `reads` key's answers would never be consulted)."""
    highest = spec.rules(ceiling).our_highest_mode()
    if ceiling in READ_ONLY_CEILINGS and MODE_RANK[highest] > MODE_RANK[READ_ONLY_MODE]:
        return READ_ONLY_MODE
    return highest


@dataclass(frozen=True, slots=True)
class SessionParams:
    """Where a session is opened: the agent's configured cwd unless a remote client named
    one (checked by the remote endpoint, see remote/)."""

    cwd: str | None = None
    additional_dirs: tuple[str, ...] = ()
    mcp_servers: tuple[Any, ...] = ()
    system_prompt: dict[str, Any] | None = None  # ACP `systemPrompt` (instructions.py)

    @classmethod
    def of(cls, stored: dict[str, Any] | None) -> SessionParams:
        if not stored:
            return cls()
        return cls(
            stored.get("cwd"),
            tuple(stored.get("additionalDirectories") or ()),
            tuple(stored.get("mcpServers") or ()),
            stored.get("systemPrompt"),
        )

    def with_servers(self, servers: tuple[Any, ...]) -> SessionParams:
        """These params with the gateway's own MCP servers added (never stored)."""
        return replace(self, mcp_servers=self.mcp_servers + servers) if servers else self

    def stored(self) -> dict[str, Any]:
        return {
            "cwd": self.cwd,
            "additionalDirectories": list(self.additional_dirs),
            "mcpServers": list(self.mcp_servers),
            **({"systemPrompt": self.system_prompt} if self.system_prompt else {}),
        }


@dataclass(frozen=True, slots=True)
class AskingChild:
    """A child session (a subagent) whose `ask_user` is asked through its root session."""

    session_id: str
    title: str


class ChildAskUser(Protocol):
    """The pool's `ask_user` handler: a session's question, a child's naming the child."""

    async def __call__(
        self, session_id: str, question: str, child: AskingChild | None = None
    ) -> str: ...


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
    titles: bool = False  # the agent serves `session/set_title` (`title`, unstable v1 and v2)
    system_prompt: bool = False  # takes a client's `systemPrompt` (instructions.py)


class Worker:
    """One agent process and the sessions it hosts."""

    def __init__(self, pool: AgentPool, index: int, ceiling: str, command: AgentCommand) -> None:
        self.pool = pool
        self.index = index
        self.ceiling = ceiling
        self.command = command
        self.client: Client | None = None
        self.sessions: set[str] = set()
        # Sessions asked of the agent and not yet answered: they count toward its load,
        # or a burst of new conversations would all pick the same process.
        self.opening = 0
        self._monitor: asyncio.Task[None] | None = None
        self._backoff = pool.limits.restart_backoff_seconds
        self._closing = False

    @property
    def alive(self) -> bool:
        return self.client is not None

    @property
    def name(self) -> str:
        return f"{self.pool.spec.name}[{self.ceiling}:{self.index}]"

    @property
    def load(self) -> int:
        """The sessions it hosts and those it is opening."""
        return len(self.sessions) + self.opening

    @contextlib.contextmanager
    def opening_one(self) -> Iterator[None]:
        """Count a session being opened here while the agent answers."""
        self.opening += 1
        try:
            yield
        finally:
            self.opening -= 1

    async def start(self) -> None:
        """Start the process (retrying with back-off until it works or the pool closes)."""
        while not self._closing:
            started = time.monotonic()
            try:
                client = await self._connect()
            except (ClientError, TimeoutError, OSError) as exc:
                log.error("agent %s did not start: %s", self.name, exc)
                await self._sleep_backoff()
                continue
            self.client = client
            self.pool.learn(client)
            self._monitor = asyncio.get_running_loop().create_task(self._watch(client, started))
            self.pool.changed()
            return

    async def _connect(self) -> Client:
        """A started client, speaking the first version of the pool's `versions()` the agent
        takes (a refused handshake tries the next, at once; agent_protocol.py)."""
        versions = self.pool.versions()
        for version in versions:
            client = self._client(version)
            try:
                await asyncio.wait_for(client.start(), self.pool.limits.start_timeout_seconds)
            except HandshakeError as exc:
                await client.close()
                if version == versions[-1]:
                    raise
                log.info("agent %s does not speak ACP v%s (%s)", self.name, version, exc)
                continue
            except BaseException:
                await client.close()
                raise
            self.pool.settle(version)
            return client
        raise AssertionError("versions() is never empty")

    def _client(self, version: int) -> Client:
        async def ask_user(session_id: str, question: str) -> str:
            return await self._ask_user(client, session_id, question)

        client = Client(
            self.command,
            protocol=version,
            # Children shown: their updates are frames of the parent's task, naming them
            # (turns.py), and their questions reach the person through the parent's turn.
            subagents=True,
            # A read-only ceiling's processes are offered no `fs/write_text_file`: the
            # gateway would write on the host, beside their sandbox's read-only mount.
            policy=ClientPolicy(approve="none", terminal=False, files=self._files()),
            handlers=Handlers(
                permission=self.pool.permission,
                files=self.pool.files,
                ask_user=ask_user,
            ),
        )
        return client

    async def _ask_user(self, client: Client, session_id: str, question: str) -> str:
        """The agent's `ask_user`; a child's (a subagent's) is asked through its root
        session, naming the child, as its permission questions are."""
        ask = self.pool.ask_user
        if ask is None:
            return ASK_USER_UNAVAILABLE
        root = client.root_of(session_id)
        if root == session_id:
            return await ask(session_id, question)
        title = client.child_title(session_id) or session_id
        return await ask(root, question, AskingChild(session_id, title))

    def _files(self) -> FileAccess:
        return "read" if self.ceiling in READ_ONLY_CEILINGS else "read-write"

    async def _watch(self, client: Client, started: float) -> None:
        assert client.process is not None
        code = await client.process.wait(None)
        if self._closing:
            return
        log.warning("agent %s exited (code %s); restarting", self.name, code)
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


@dataclass(frozen=True, slots=True)
class Spawning:
    """How the gateway starts agent processes: confined where it can (confine.py), the
    state directory their homes live in, and whether to run unconfined where it cannot."""

    outer: OuterStatus
    state_dir: Path  # agents' homes: <state_dir>/agents/NAME/home
    allow_unconfined: bool = False
    mcp_public_only: bool = True  # our agent, too, refuses MCP URLs on private addresses
    trusted_mcp_url: str | None = None  # but for the gateway's own tool bridge (tool_bridge.py)


class AgentPool:
    """The processes of one configured agent, grouped by key ceiling."""

    def __init__(
        self,
        spec: AgentSpec,
        limits: Limits,
        permission: PermissionHandler,
        spawning: Spawning,
    ) -> None:
        self.spec = spec
        self.limits = limits
        self.permission = permission
        self.spawning = spawning
        self.info = AgentInfo(spec.name)
        # The agent's own `initialize` answer, for remote ACP clients (authMethods empty:
        # the gateway authenticated its processes; a remote client authenticates to us).
        self.initialize_result: dict[str, Any] | None = None
        # The agent's file and ask_user calls; None: the client library's defaults (files
        # confined to the session's directories, no one to ask). The remote ACP relays
        # route a watched session's calls to its remote clients.
        self.files: FileHandler | None = None
        self.ask_user: ChildAskUser | None = None
        self.groups: dict[str, list[Worker]] = {}  # key ceiling -> its processes
        # The ACP version its processes speak: the config's, or what `auto` learned.
        self.protocol: int | None = spec.protocol
        self._changed = asyncio.Event()
        self._starting: list[asyncio.Task[None]] = []

    @property
    def workers(self) -> list[Worker]:
        return [w for group in self.groups.values() for w in group]

    async def start(self, ceilings: tuple[str, ...]) -> None:
        """Start the processes of `ceilings` (the keys' that may use this agent); returns
        once each has started or failed its first attempt."""
        for ceiling in ceilings:
            with contextlib.suppress(AgentUnavailable):  # refused: said at each request
                self._group(ceiling)
        if self._starting:
            await asyncio.wait(self._starting, timeout=self.limits.start_timeout_seconds)

    def _group(self, ceiling: str) -> list[Worker]:
        """The processes of `ceiling`, started at first need."""
        group = self.groups.get(ceiling)
        if group is None:
            command = self.command(ceiling)
            group = self.groups[ceiling] = [
                Worker(self, i, ceiling, command) for i in range(self.spec.processes)
            ]
            self._starting += [asyncio.ensure_future(w.start()) for w in group]
        return group

    def command(self, ceiling: str) -> AgentCommand:
        """How a process serving keys of `ceiling` starts: confined, with its ceiling."""
        spec, spawning = self.spec, self.spawning
        env = {**dict(spec.env), CEILING_ENV: process_ceiling(spec, ceiling)}
        if spawning.mcp_public_only:
            env[MCP_PUBLIC_ONLY_ENV] = "1"
            if spawning.trusted_mcp_url:
                env[MCP_TRUSTED_URL_ENV] = spawning.trusted_mcp_url
        if not spawning.outer.available:
            if ceiling != "all" and not spawning.allow_unconfined:
                raise AgentUnavailable(
                    f"agent {spec.name!r} cannot be confined here ({spawning.outer.reason}), "
                    "so it is not run for keys below 'all' (the operator may set [server] "
                    "allow_unconfined_agents = true)",
                    code="agent_unconfined",
                )
            log.warning("agent %s runs unconfined: %s", spec.name, spawning.outer.reason)
            return AgentCommand(spec.command, env=env, cwd=spec.cwd)
        home = spawning.state_dir / "agents" / spec.name / "home"
        argv = confine(
            spec.command,
            cwd=spec.cwd,
            home=home,
            env=env,
            sandbox=spec.sandbox,
            read_only=ceiling in READ_ONLY_CEILINGS,
        )
        return AgentCommand(argv, env={}, cwd=spec.cwd, inherit_env=False)  # bwrap sets it

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

    async def initialized(self, ceiling: str) -> dict[str, Any]:
        """The agent's `initialize` answer, once a process has given it (503 if none starts
        within the start timeout)."""
        if self.initialize_result is None:
            await self._worker(ceiling)
        assert self.initialize_result is not None
        return self.initialize_result

    def versions(self) -> tuple[int, ...]:
        """The ACP versions a process offers, in order: the config's, else (`auto`) v1 where
        the agent speaks it and v2 where it speaks only v2 (agent_protocol.AUTO)."""
        return (self.protocol,) if self.protocol is not None else AUTO

    def settle(self, version: int) -> None:
        """A process spoke `version`: under `auto`, the next ones offer it first."""
        if self.spec.protocol is None:
            self.protocol = version

    @property
    def live(self) -> int:
        return sum(w.alive for w in self.workers)

    def learn(self, client: Client) -> None:
        self.initialize_result = initialize_v1(client)
        agent = client.agent_info
        self.info = replace(
            self.info,
            title=getattr(agent, "title", None) or getattr(agent, "name", None),
            version=getattr(agent, "version", None),
            load_session=can_reopen(client),
            images=takes_images(client),
            titles=client.supports("title"),
            system_prompt=takes_system_prompt(client),
        )

    def learn_models(self, response: Any) -> None:
        """Read the model choices from a session's `configOptions` (once)."""
        if self.info.models:
            return
        option_id, models = model_choices(response)
        if models:
            self.info = replace(self.info, models=models, model_option=option_id)

    async def _worker(self, ceiling: str) -> Worker:
        group = self._group(ceiling)
        deadline = time.monotonic() + self.limits.start_timeout_seconds
        while True:
            live = [w for w in group if w.alive]
            if live:
                return min(live, key=lambda w: w.load)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AgentUnavailable(
                    f"agent {self.spec.name!r} is not running (no process started in time)",
                    code="agent_unavailable",
                )
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    async def new_session(self, params: SessionParams | None, ceiling: str) -> Session:
        """A session for a key of `ceiling`, in the agent's cwd or where `params` (a remote
        client's) say, in the mode the agent's config names for that ceiling."""
        worker = await self._worker(ceiling)
        assert worker.client is not None
        p = params or SessionParams()
        with worker.opening_one():
            session = await worker.client.new_session(
                p.cwd or self.spec.cwd,
                additional_dirs=p.additional_dirs,
                mcp_servers=p.mcp_servers,
                system_prompt=self._system_prompt(p),
            )
            worker.sessions.add(session.id)
        self.learn_models(session.response)
        await self._hold_mode(session, self.spec.rules(ceiling), fresh=True)
        return session

    async def load_session(
        self, session_id: str, params: SessionParams | None, ceiling: str
    ) -> Session:
        """Reopen a stored session on a live process of `ceiling` (v1 `session/load`, v2
        `session/resume` with replay: agent_protocol.py); its replayed history is
        folded into the session's view (what a newly attached reader is shown) and
        dropped from its stream. A mode it may not be in is set back to its start mode."""
        worker = await self._worker(ceiling)
        assert worker.client is not None
        p = params or SessionParams()
        with worker.opening_one():
            session = await reopen(
                worker.client,
                session_id,
                p.cwd or self.spec.cwd,
                p.additional_dirs,
                p.mcp_servers,
                self._system_prompt(p),
            )
            session.drain()
            worker.sessions.add(session.id)
        await self._hold_mode(session, self.spec.rules(ceiling), fresh=False)
        return session

    def _system_prompt(self, params: SessionParams) -> dict[str, Any] | None:
        """The params' `systemPrompt`, to an agent that takes one (never to another)."""
        return params.system_prompt if self.info.system_prompt else None

    async def _hold_mode(self, session: Session, rules: CeilingRules, *, fresh: bool) -> None:
        """A new session starts in its ceiling's mode; a loaded one keeps its mode if the
        ceiling may have it, else goes back to that mode."""
        current = current_mode(session.response)
        if rules.mode is None or current == rules.mode:
            return
        if fresh or current is None or not rules.allows_mode(current):
            await session.set_mode(rules.mode)
            session.response = with_mode(session.response, rules.mode)  # what clients see

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


__all__ = [
    "READ_ONLY_CEILINGS",
    "AgentInfo",
    "AgentPool",
    "AskingChild",
    "ChildAskUser",
    "SessionParams",
    "Spawning",
    "Worker",
    "process_ceiling",
]
