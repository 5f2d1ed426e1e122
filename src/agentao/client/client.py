"""`Client`: start an ACP agent, shake hands, open sessions, shut it down.

    async with Client(AgentCommand.parse("qwen --acp"), policy=ClientPolicy(approve="reads")) as c:
        session = await c.new_session("/path/to/project")
        async for event in session.prompt("what does main.py do?"):
            ...

Everything the agent may call on us is served by `serving.ClientSide`
under the `ClientPolicy`; everything we ask of the agent goes through one
`channel.Channel`, which sessions and turns share; every wait has a named limit
in `Timeouts`.

Protocol versions. By default the client offers ACP v2 (`initialize` with `info` and
`capabilities`, `v2.py`) and falls back to v1: when the agent refuses the offer (-32602,
-32022, -32600), answers version 1, or answers 2 without `capabilities.session` (no
session surface: agentao's own agent before it serves v2 sessions), the client sends the
v1 `initialize` it always sent, on the same connection, and from then on behaves exactly as
a v1 client. An agent that answered the offer but refuses that second `initialize` is
started again (a process or a URL we opened) and gets only the v1 one. `Client(protocol=1)` speaks only v1 (one `initialize`); `protocol=2` only v2
(a v1 answer is a HandshakeError). Over v2 every request, update and permission call is
translated at the edge (`v2.py`, `tracking.py`, `turn.py`), so sessions, turns and the
view are the same objects whatever was negotiated.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from agentao.client import v2
from agentao.client.capabilities import advertised
from agentao.client.channel import Channel, result_type
from agentao.client.config import AgentCommand, ClientPolicy, Limits, Timeouts
from agentao.client.errors import (
    AgentDisconnected,
    AgentError,
    AgentStartError,
    ClientError,
    HandshakeError,
    ProtocolViolation,
)
from agentao.client.files import LocalFiles, Workspace
from agentao.client.permissions import PolicyPermissions
from agentao.client.process import AgentProcess
from agentao.client.record import Recorder, RecordingReader, RecordingWriter
from agentao.client.remote import AgentUrl, RemoteStreams, connect
from agentao.client.serving import ClientSide, Handlers
from agentao.client.session import Session
from agentao.client.terminals import LocalTerminals
from agentao.client.tracking import TrackingConnection
from agentao.client.view import SessionView
from agentao.protocol.endpoint import Endpoint, Reader, Writer
from agentao.protocol.endpoint import Limits as EndpointLimits

log = logging.getLogger("agentao.client")
PROTOCOL_VERSION = 1  # the version of the fallback handshake
SUPPORTED = (1, 2)  # every version `Client(protocol=...)` may be told to speak
# What a v1-only agent may answer a v2 `initialize` with, other than version 1: it then
# gets a v1 `initialize` (invalid params, unsupported version, invalid request).
V2_REFUSALS = frozenset({-32602, -32022, -32600})
AUTH_REQUIRED = -32000
T = TypeVar("T")


class Client:
    def __init__(
        self,
        command: AgentCommand | AgentUrl | None = None,
        *,
        policy: ClientPolicy | None = None,
        timeouts: Timeouts | None = None,
        limits: Limits | None = None,
        handlers: Handlers | None = None,
        record: str | Recorder | None = None,
        protocol: int | None = None,
        subagents: bool = False,
    ) -> None:
        self.command = command or AgentCommand.ours()
        self.protocol = protocol  # None: offer v2, fall back to v1; 1 or 2: only that one
        self.policy = policy or ClientPolicy()
        self.timeouts = timeouts or Timeouts()
        self.limits = limits or Limits()
        self._side = _client_side(self.policy, self.timeouts, self.limits, handlers or Handlers())
        # A reader that shows children: advertised over v1, and over either version a
        # child's updates reach its parent's turn (client/children.py). Off, a reader
        # that knows nothing of children never takes a child's words for its parent's.
        self._side.shows_children = subagents
        if subagents:
            self._side.capabilities = advertised(self.policy, subagents=True)
        self._recorder = Recorder.open(record) if isinstance(record, str) else record
        self.process: AgentProcess | None = None
        self.remote: RemoteStreams | None = None
        self.init: Any = None  # schema.InitializeResponse
        self._endpoint: Endpoint | None = None
        self._channel: Channel | None = None
        self._connection: TrackingConnection | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._sessions: dict[str, Session] = {}
        self._authenticated = False
        self._offer_refused = False  # the agent answered our v2 offer with an error

    # ---- lifecycle ------------------------------------------------------------------

    async def __aenter__(self) -> Client:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self, streams: tuple[Reader, Writer] | None = None) -> None:
        """Spawn the agent, connect to it (a URL), or use `streams`; then `initialize`
        (+ `authenticate`)."""
        spawned = streams is None
        self._attach(*await self._open_streams(streams))
        try:
            try:
                await self._handshake()
            except _SecondInitializeRefused as exc:
                if not spawned:  # streams we were given cannot be opened again
                    raise HandshakeError(str(exc)) from exc
                log.info("%s: starting the agent again, speaking v1 only", exc)
                await self._disconnect()
                self._attach(*await self._open_streams(None))
                await self._handshake(only=PROTOCOL_VERSION)
        except BaseException:
            await self.close()
            raise

    async def _open_streams(self, streams: tuple[Reader, Writer] | None) -> tuple[Reader, Writer]:
        if streams is None and isinstance(self.command, AgentUrl):
            self.remote = await connect(self.command)
            return (self.remote.reader, self.remote)
        if streams is None:
            self.process = await AgentProcess.start(self.command, self.limits.stderr_tail_bytes)
            return (self.process.reader, self.process.writer)
        return streams

    def _attach(self, reader: Reader, writer: Writer) -> None:
        if self._recorder is not None:
            reader, writer = (
                RecordingReader(reader, self._recorder),
                RecordingWriter(writer, self._recorder),
            )
        limits = EndpointLimits(max_line_bytes=self.limits.max_line_bytes, shutdown_grace=1.0)
        self._connection = TrackingConnection(self._on_prompt_answer)
        self._endpoint = Endpoint(
            v2.Versioned(self._side), role="client", limits=limits, connection=self._connection
        )
        self._endpoint.attach(writer)
        self._channel = Channel(self._endpoint, self.timeouts, self.process)
        self._reader_task = asyncio.ensure_future(self._endpoint.run(reader))

    async def close(self) -> int | None:
        """Release terminals, shut the agent down (EOF, SIGTERM, SIGKILL); its exit code."""
        with contextlib.suppress(Exception):
            await self._side.terminals.close()  # type: ignore[attr-defined]
        code = await self._disconnect()
        if self._recorder is not None:
            self._recorder.close()
            self._recorder = None
        return code

    async def _disconnect(self) -> int | None:
        """Shut the agent's process or connection and our endpoint down; its exit code."""
        code = await self.process.shutdown(self.timeouts) if self.process is not None else None
        if self.remote is not None:
            await self.remote.close()
        if self._reader_task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._reader_task), self.timeouts.eof_grace)
        if self._endpoint is not None:
            await self._endpoint.aclose()
        return code

    @property
    def exit_code(self) -> int | None:
        return self.process.returncode if self.process is not None else None

    def stderr_tail(self) -> str:
        return self.process.stderr_tail() if self.process is not None else ""

    # ---- handshake ------------------------------------------------------------------

    async def _handshake(self, only: int | None = None) -> None:
        """Offer v2 (unless told to speak 1) and fall back to v1 (see the module docstring);
        then `authenticate` when the policy names a method."""
        protocol = only or self.protocol
        if protocol not in (None, *SUPPORTED):
            raise HandshakeError(f"protocol {protocol} is not one of {SUPPORTED}")
        if protocol == 1:
            await self._initialize_v1()
        elif not await self._offer_v2():
            await self._initialize_v1(second=True)
        if self.policy.auth_method:
            await self.authenticate(self.policy.auth_method)

    async def _offer_v2(self) -> bool:
        """`initialize` as v2; True once v2 is settled, False when we should speak v1."""
        forced = self.protocol == 2
        try:
            raw = await self._initialize(v2.initialize_params())
        except AgentError as exc:
            if forced or exc.code not in V2_REFUSALS:
                raise HandshakeError(f"initialize failed: {exc.message} (code {exc.code})") from exc
            log.info("the agent refused a v2 initialize (%s): speaking v1", exc.code)
            self._offer_refused = True
            return False
        answered = raw.get("protocolVersion") if isinstance(raw, dict) else None
        if answered == v2.VERSION:
            init = self._decode_init(raw, v2.VERSION)
            if v2.serves_sessions(init) or forced:
                self.init = init
                self._settle(v2.VERSION)
                return True
            log.info("the agent speaks v2 without capabilities.session: speaking v1")
        elif forced:
            raise HandshakeError(f"the agent speaks ACP version {answered!r}, we were told 2")
        # It answered 1 to a v2 offer, so it read no v1 clientCapabilities: v1 initialize
        # again, on this connection, for exactly the v1 handshake of a v1-only client.
        return False

    async def _initialize_v1(self, second: bool = False) -> None:
        """Today's v1 `initialize`; `second`: after a v2 offer (see `_SecondInitializeRefused`)."""
        params = {
            "protocolVersion": PROTOCOL_VERSION,
            "clientCapabilities": self._side.capabilities,  # what ClientSide serves
            "clientInfo": v2.CLIENT_INFO,
        }
        try:
            raw = await self._initialize(params)
        except AgentError as exc:
            message = f"initialize failed: {exc.message} (code {exc.code})"
            if second and not self._offer_refused:
                raise _SecondInitializeRefused(f"after answering the v2 offer, {message}") from exc
            raise HandshakeError(message) from exc
        self.init = self._decode_init(raw, PROTOCOL_VERSION)
        if self.init.protocol_version != PROTOCOL_VERSION:
            raise HandshakeError(
                f"the agent speaks ACP version {self.init.protocol_version}, we speak {PROTOCOL_VERSION}"
            )
        self._settle(PROTOCOL_VERSION)

    async def _initialize(self, params: dict[str, Any]) -> Any:
        """One `initialize` request; its raw result (AgentError when the agent refuses)."""
        try:
            return await self.channel.call_raw(
                "initialize", params, self.timeouts.handshake, "handshake"
            )
        except AgentDisconnected as exc:
            raise AgentStartError(
                "the agent exited before answering initialize",
                exit_code=exc.exit_code,
                stderr_tail=exc.stderr_tail,
            ) from None

    def _decode_init(self, raw: Any, version: int) -> Any:
        try:
            return self.channel.decode(result_type("initialize", version), raw)
        except ProtocolViolation as exc:
            raise HandshakeError(f"unusable initialize answer: {exc}") from None

    def _settle(self, version: int) -> None:
        """Speak `version` from now on: the connection decodes by its table, the channel
        types results by it, the endpoint serves the agent's calls with its handler."""
        assert self._connection is not None
        self._connection.use_version(version)
        self.channel.version = version

    @property
    def protocol_version(self) -> int:
        """The ACP version this connection settled on (1 before the handshake)."""
        return self.channel.version

    async def authenticate(self, method_id: str) -> None:
        """`authenticate` (v1) or `auth/login` (v2) with `method_id`."""
        method = "auth/login" if self.channel.version == v2.VERSION else "authenticate"
        try:
            await self.channel.call_raw(
                method, {"methodId": method_id}, self.timeouts.handshake, "handshake"
            )
        except AgentError as exc:
            raise HandshakeError(
                f"authenticate({method_id}) failed: {exc.message} (code {exc.code})"
            ) from exc
        self._authenticated = True

    @property
    def agent_info(self) -> Any:
        """The agent's `Implementation` (v1 `agentInfo`, v2 `info`)."""
        return getattr(self.init, "agent_info", None) or getattr(self.init, "info", None)

    @property
    def auth_methods(self) -> list[Any]:
        return list(getattr(self.init, "auth_methods", None) or [])

    @property
    def supports_steering(self) -> bool:
        """The agent advertises `_session/steering`: `_meta.steering.supported` at the top
        of its `initialize` result (codex-acp, claude-agent-acp, ours over v1)."""
        meta = getattr(self.init, "meta", None)
        steering = meta.get("steering") if isinstance(meta, dict) else None
        return isinstance(steering, dict) and steering.get("supported") is True

    def supports(self, capability: str) -> bool:
        """`loadSession`, or a session capability such as "list", "resume", "close"."""
        if self.channel.version == v2.VERSION:
            return v2.supports(self.init, capability)
        caps = getattr(self.init, "agent_capabilities", None)
        if capability in ("load", "loadSession"):
            return bool(getattr(caps, "load_session", False))
        session_caps = getattr(caps, "session_capabilities", None)
        return getattr(session_caps, capability, None) is not None

    # ---- sessions -------------------------------------------------------------------

    async def new_session(
        self,
        cwd: str | None = None,
        *,
        additional_dirs: Sequence[str] = (),
        mcp_servers: Sequence[Any] = (),
        system_prompt: dict[str, Any] | None = None,
    ) -> Session:
        """`session/new`; `system_prompt`: ACP's unstable `systemPrompt` (send it only to an
        agent that advertises `sessionCapabilities.systemPrompt`)."""
        cwd, dirs = _abs(cwd), tuple(map(_abs, additional_dirs))
        params = {**_session_params(cwd, dirs, mcp_servers), **_system_prompt(system_prompt)}
        opening = Workspace.of("", cwd, dirs)
        self._side.opening.append(opening)
        try:
            response = await self._with_auth(lambda: self.channel.call("session/new", params))
        finally:
            self._side.opening.remove(opening)
        return self._open(response.session_id, response, cwd, dirs)

    async def load_session(
        self,
        session_id: str,
        cwd: str | None = None,
        *,
        additional_dirs: Sequence[str] = (),
        mcp_servers: Sequence[Any] = (),
        system_prompt: dict[str, Any] | None = None,
    ) -> Session:
        """`session/load`: the replayed history waits in `session.drain()`."""
        more = _system_prompt(system_prompt)
        return await self._reopen(
            "session/load", session_id, cwd, additional_dirs, mcp_servers, more
        )

    async def resume_session(
        self,
        session_id: str,
        cwd: str | None = None,
        *,
        additional_dirs: Sequence[str] = (),
        mcp_servers: Sequence[Any] = (),
        replay: bool = False,
        system_prompt: dict[str, Any] | None = None,
    ) -> Session:
        """`session/resume`: reattach; over v2 with `replay` the agent first replays the
        history from the start (`replayFrom`), which waits in `session.drain()`."""
        extra = {"replayFrom": {"type": "start"}} if replay else {}
        if extra and self.channel.version != v2.VERSION:
            raise ClientError("a replay on resume needs ACP v2 (v1: load_session)")
        extra.update(_system_prompt(system_prompt))
        return await self._reopen(
            "session/resume", session_id, cwd, additional_dirs, mcp_servers, extra
        )

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None) -> Any:
        params = {k: v for k, v in (("cwd", cwd and _abs(cwd)), ("cursor", cursor)) if v}
        return await self.channel.call("session/list", params)

    async def _reopen(
        self,
        method: str,
        session_id: str,
        cwd: str | None,
        dirs: Sequence[str],
        mcp: Sequence[Any],
        more: dict[str, Any] | None = None,
    ) -> Session:
        cwd, extra = _abs(cwd), tuple(map(_abs, dirs))
        st = self._side.state(session_id)  # replayed updates land here, in order
        st.workspace = Workspace.of(session_id, cwd, extra)
        self._side.children.opened(session_id)
        params = {"sessionId": session_id, **_session_params(cwd, extra, mcp), **(more or {})}
        try:
            response = await self._with_auth(lambda: self.channel.call(method, params))
        except BaseException:
            if session_id not in self._sessions:
                self._drop_state(session_id)
            raise
        return self._open(session_id, response, cwd, extra)

    def root_of(self, session_id: str) -> str:
        """The session at the top of `session_id`'s parents: itself, unless it is a child
        an agent announced (a subagent: client/children.py)."""
        return self._side.children.root(session_id)

    def child_title(self, session_id: str) -> str | None:
        """A child session's name as its parent's view holds it (its title, else its
        description); None when it is no announced child."""
        parent = self._side.children.parents.get(session_id)
        state = self._side.states.get(parent) if parent is not None else None
        entry = state.view.children.get(session_id) if state is not None else None
        return (entry.title or entry.description) if entry is not None else None

    def child_view(self, session_id: str) -> SessionView | None:
        """A child session's own view (a subagent's messages and tool calls, and its own
        children as `ChildEntry`s: a child's child nests under it); None when it is no
        announced child."""
        if self.root_of(session_id) == session_id:
            return None
        state = self._side.states.get(session_id)
        return state.view if state is not None else None

    def _open(self, session_id: str, response: Any, cwd: str, dirs: tuple[str, ...]) -> Session:
        st = self._side.state(session_id)
        st.workspace = Workspace.of(session_id, cwd, dirs)
        self._side.children.opened(session_id)
        session = Session(
            self.channel,
            st,
            response,
            cwd,
            closable=self.supports("close"),
            steerable=self.supports_steering,
            on_close=self._forget_session,
            root_of=self._side.children.root,
        )
        self._sessions[session_id] = session
        return session

    async def _forget_session(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
        self._drop_state(session_id)
        with contextlib.suppress(Exception):
            await self._side.terminals.release_session(session_id)

    def _drop_state(self, session_id: str) -> None:
        st = self._side.states.pop(session_id, None)
        if st is not None and self._connection is not None:
            # Its updates leave the connection's count with it, so the next state for this
            # id (a reload, a late update) numbers them as the count does (see tracking.py).
            self._connection.discount(session_id, st.stream.seq)

    def _on_prompt_answer(
        self, session_id: str, position: int, idle: dict[str, Any] | None
    ) -> None:
        st = self._side.states.get(session_id)
        if st is None:
            return
        st.answered_at = position
        if idle is not None and st.idle is not None and not st.idle.done():
            st.idle.set_result(idle)

    async def _with_auth(self, call: Callable[[], Awaitable[T]]) -> T:
        try:
            return await call()
        except AgentError as exc:
            if exc.code != AUTH_REQUIRED:
                raise
            if self.policy.auth_method and not self._authenticated:
                await self.authenticate(self.policy.auth_method)
                return await call()
            methods = (
                ", ".join(getattr(m, "id", "?") for m in self.auth_methods) or "none advertised"
            )
            raise HandshakeError(
                f"the agent requires authentication: {exc.message} (methods: {methods})"
            ) from exc

    # ---- requests -------------------------------------------------------------------

    @property
    def channel(self) -> Channel:
        """The typed channel to the agent (once started)."""
        if self._channel is None:
            raise ClientError("the client is not started")
        return self._channel

    async def request(self, method: str, params: Any = None) -> Any:
        """Any request (e.g. an `_agentao.cn/*` extension); the raw result."""
        return await self.channel.call_raw(method, params, self.timeouts.request)

    async def notify(self, method: str, params: Any = None) -> None:
        await self.channel.notify(method, params)


class _SecondInitializeRefused(HandshakeError):
    """A v1 agent answered our v2 offer, then refused the v1 `initialize` that followed
    (it takes one per connection): the client starts it again and speaks v1 only."""


def _client_side(
    policy: ClientPolicy, timeouts: Timeouts, limits: Limits, h: Handlers
) -> ClientSide:
    side = ClientSide(
        files=h.files or LocalFiles(policy.missing_file, limits.max_read_bytes),
        terminals=h.terminals or LocalTerminals(timeouts.term_grace, policy.terminal_env),
        permission=h.permission or PolicyPermissions(policy),
        ask_user=h.ask_user,
        max_backlog=limits.max_backlog,
        capabilities=advertised(policy),
    )
    side.extensions.update(h.extensions)
    return side


def _abs(path: str | None) -> str:
    return os.path.abspath(path or os.getcwd())


def _session_params(cwd: str, dirs: tuple[str, ...], mcp_servers: Sequence[Any]) -> dict[str, Any]:
    params: dict[str, Any] = {"cwd": cwd, "mcpServers": list(mcp_servers)}
    if dirs:
        params["additionalDirectories"] = list(dirs)
    return params


def _system_prompt(system_prompt: dict[str, Any] | None) -> dict[str, Any]:
    return {"systemPrompt": system_prompt} if system_prompt is not None else {}


__all__ = ["PROTOCOL_VERSION", "SUPPORTED", "V2_REFUSALS", "Client"]
