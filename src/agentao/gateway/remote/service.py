"""Remote ACP: what a remote client may ask of the gateway, method by method.

Theory of operation. A remote client speaks ACP to the gateway as to an agent. The
gateway answers `initialize` with the agent's own answer (its processes are already
initialized), and turns every session into a gateway *conversation*, like those of the
OpenAI API: `session/new` opens one, `session/load` / `session/resume` attach to the
conversation that carries that session (live here, or reloaded on a live process), and
`session/prompt` runs a gateway turn on it (one at a time: a v1 prompt on a busy session
is refused, a v2 one held until the turn ends, held.py), whose permission requests go to
the session's remote watchers within the API key's ceiling. So the OpenAI API, the task
stream, the web UI and remote ACP are views of the same session.

Versions. A connection speaks what its `initialize` settled: v1, or v2 through the bridge
(bridge.py: the log's v1 frames translated for that client): a v2 `initialize` gets the
agent's answer in v2, `session/new` and `session/resume` v2's results (a resume's
`replayFrom: {type: "start"}` replays the log, then the current `state_update`), and a
v2 `session/prompt` is answered at once with its `messageId`, the turn going on. What v2
names otherwise (the mode as a config option, `tool_call/cancel`) is bridge_calls.py's.

What the client sends is read by the connection's protocol connection (`wire`), by the
rules our agent applies on stdio: the lifecycle table, the `protocolVersion` check, the
id rules and params checked against the schema, so a handler here sees only requests
the schema accepts. Notifications and replies are handled in arrival order (a
`session/cancel` or `$/cancel_request` never waits behind a prompt); each request runs
as its own task (which `$/cancel_request` cancels, answering -32800; a session's v2
prompts take their places in the order read, held.py), its reply going to the stream of
its scope: a session's for session-scoped methods, the connection's for the rest (the
results of `session/new` and `session/load` too: a client may have no session stream yet).

Limits of what a key may do here: a session's directories must lie inside the agent's
roots (its cwd and sandbox `write` paths: what its confined process sees); it may name
no stdio MCP server (a command run on this host) unless the key's ceiling is `all`; an
http/sse MCP server must be on a public address, and gets only the headers the policy
passes (`mcp_urls.py`), whatever the key; below `all`, only the mode and config changes
the agent's config names for the ceiling are passed on (limits.py, ceilings.py); a
session another key opened is not found.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import msgspec

from agentao.client import ClientError, TurnEnd, Update
from agentao.client.content import prompt_text
from agentao.client.files import LocalFiles
from agentao.gateway.agent_protocol import logged_update, speaks_v2
from agentao.gateway.auth import Principal, owns
from agentao.gateway.batches import describe
from agentao.gateway.config import McpUrlPolicy
from agentao.gateway.errors import ApiError, StoreFailed, TakenElsewhere
from agentao.gateway.peers import Peers
from agentao.gateway.pool import AgentPool
from agentao.gateway.remote.api_errors import api_error_wire
from agentao.gateway.remote.bridge import V2, V2Bridge, initialize_result, user_message_id
from agentao.gateway.remote.bridge_calls import (
    BRIDGED_METHODS,
    SET_TITLE,
    bridged_call,
    checked_title,
    send_state,
    session_config,
    tell_title,
)
from agentao.gateway.remote.clients import INIT_SCOPE, STORE_FAILED, RemoteClient, RemoteClients
from agentao.gateway.remote.far import CANCELS_READ, FarSession, FarSessions, NowFree
from agentao.gateway.remote.far_held import cancel_child_anywhere
from agentao.gateway.remote.far_open import far_opened
from agentao.gateway.remote.held import HeldPrompts
from agentao.gateway.remote.limits import check_change, remote_policy, session_params
from agentao.gateway.remote.listing import session_list
from agentao.gateway.remote.mcp_urls import checked_mcp_servers
from agentao.gateway.remote.messages import is_response, prompt_of, reply_scope, reply_scope_of
from agentao.gateway.remote.relay import SessionRelay, SessionRelays
from agentao.gateway.remote.steering import steering_only
from agentao.gateway.remote.v1_calls import (
    V1_ON_V2_METHODS,
    v1_call,
    v1_result,
)
from agentao.gateway.replicas import Replica
from agentao.gateway.sessions import Conversations, LiveConversation, TurnRequest
from agentao.gateway.turns import GatewayTurn, TurnFailed
from agentao.protocol.connection import Connection as Wire
from agentao.protocol.connection import (
    Event,
    Notification,
    Reject,
    Request,
    RequestId,
    params_of,
)
from agentao.protocol.errors import (
    AcpError,
    InternalError,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    RequestCancelled,
    SessionNotFound,
)
from agentao.protocol.v2.from_v1 import replay_from
from agentao.store.gateway import GatewayStore

log = logging.getLogger("agentao.gateway")
_decode = msgspec.json.Decoder().decode


class RemoteAcp:
    """Remote ACP for every agent of one gateway."""

    def __init__(
        self,
        conversations: Conversations,
        store: GatewayStore,
        replica: Replica,
        peers: Peers,
        mcp: McpUrlPolicy,
    ) -> None:
        self.conversations = conversations
        self.mcp = mcp
        self.store = store
        self.replica = replica
        self.limits = limits = conversations.limits
        self.connections = RemoteClients(store.remote, store, limits, replica.boot_id)
        self.relays = SessionRelays(conversations, LocalFiles(), limits.permission_deadline_seconds)
        self.far = FarSessions(store, replica, peers, limits)  # sessions live on other replicas
        self.held = HeldPrompts(limits)  # v2 prompts waiting for their session's turn
        for pool in conversations.pools.values():  # the agents' questions reach the clients
            pool.files, pool.ask_user = self.relays, self.relays.ask_user
        self._tasks: set[asyncio.Task[None]] = set()
        # The requests each client has running, by (connection id, request id), for
        # `$/cancel_request`; and those it cancelled, answered -32800 when they end.
        self._serving: dict[tuple[str, RequestId], asyncio.Task[None]] = {}
        self._cancelled: set[tuple[str, RequestId]] = set()
        self._cancels_read = 0  # `session/cancel`s read so far (far.CANCELS_READ)
        self.admit: Callable[[str], Awaitable[None]] | None = None  # a key's budgets.py check

    # ---- connecting ------------------------------------------------------------------------

    def first_message(self, wire: Wire, message: dict[str, Any] | bytes) -> Request | Reject | None:
        """What a message to a connection not yet open is, read by `wire` (a new protocol
        connection, so by the stdio agent's rules): the `initialize` request to open it with,
        a refusal to send back (-32602 for a bad `protocolVersion`, -32002 "Server not
        initialized" for any other request, ...), or None (a notification or a reply, which
        before `initialize` are ignored)."""
        event = self._read(wire, message)
        return event if isinstance(event, Request | Reject) else None

    async def open(
        self,
        principal: Principal,
        agent: str,
        transport: str,
        handshake: tuple[Wire, Request],
        connection_id: str | None = None,
    ) -> tuple[RemoteClient, bytes]:
        """A new connection from its `initialize` request (as `first_message` gave it); the
        reply to it, which is also the connection's first message."""
        wire, request = handshake
        pool = self.check_agent(principal, agent)
        capabilities = params_of(request.message).get("clientCapabilities") or {}
        result = await self._initialize_result(pool, principal.ceiling)
        if wire.version == V2:  # a v2 client on the (v1) agent: through the bridge
            result = initialize_result(result)
        for unread in self.connections.unread_beyond_limit(principal):
            await self.close(unread)  # room for a client that is here, before refusing it
        connection = await self.connections.open(
            principal, agent, transport, capabilities, wire, connection_id
        )
        if wire.version == V2:
            connection.bridge = V2Bridge()
        reply = wire.reply(request, result).rstrip(b"\n")  # and the wire is initialized
        connection.send_body(reply, INIT_SCOPE)  # stored like every message
        return connection, reply

    async def _initialize_result(self, pool: AgentPool, ceiling: str) -> dict[str, Any]:
        """The agent's own answer; `session/list` and `session/set_title` the gateway serves
        (its store, the conversation's title)."""
        result = await pool.initialized(ceiling)  # never starts another key's processes
        caps = dict(result.get("agentCapabilities") or {})
        served = {"list": {}, "title": {}}  # session/list, session/set_title: the gateway's
        caps["sessionCapabilities"] = {**(caps.get("sessionCapabilities") or {}), **served}
        return {**result, "agentCapabilities": caps}

    def check_agent(self, principal: Principal, agent: str) -> AgentPool:
        """The agent's pool, if it exists (404) and the key may use it (403)."""
        pool = self.conversations.pool(agent)
        principal.check_agent(agent)
        return pool

    async def close(self, connection: RemoteClient) -> None:
        """The client is gone: detach it (never touching another client's turn)."""
        self.relays.detach_all(connection)
        self.far.detach_all(connection)
        await self.connections.close(connection)

    async def sweep(self) -> int:
        """Close the idle connections (and forget stored ones nobody serves); how many."""
        idle = self.connections.idle()
        for connection in idle:
            await self.close(connection)
        return len(idle) + await self.connections.forget_stale()

    async def close_all(self) -> None:
        """The gateway stops: every stream ends (the stored connections stay, for now)."""
        await self.connections.close_all()

    async def stop(self) -> None:
        await self.close_all()
        self.connections.hub.close()

    # ---- receiving -------------------------------------------------------------------------

    def receive_text(self, connection: RemoteClient, text: str) -> None:
        """One WebSocket frame."""
        self.receive(connection, text.encode())

    def receive(self, connection: RemoteClient, message: dict[str, Any] | bytes) -> None:
        """One message from the client (a POST body, a WebSocket frame): a reply to one of
        our requests, else read by its protocol connection as on stdio."""
        if isinstance(message, bytes):
            with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError, RecursionError):
                message = _decode(message)  # else the wire salvages what it can, and answers
        if is_response(message):
            connection.answered(message)
            return
        event = self._read(connection.wire, message)
        if isinstance(event, Reject):
            connection.send_body(event.reply.rstrip(b"\n"), reply_scope_of(message))
        elif isinstance(event, Notification):
            self._on_notification(connection, event)
        elif isinstance(event, Request):
            self._on_request(connection, event)

    @staticmethod
    def _read(wire: Wire, message: Any) -> Event | None:
        return (
            wire.receive(message) if isinstance(message, bytes) else wire.receive_message(message)
        )

    def _on_notification(self, connection: RemoteClient, event: Notification) -> None:
        if event.method == "$/cancel_request":
            self._cancel_request(connection.id, event.params.request_id)
        elif event.method == "session/cancel":
            self._cancel(connection, event.params.session_id)
        else:
            log.debug("remote notification %s ignored", event.method)

    def _on_request(self, connection: RemoteClient, request: Request) -> None:
        if request.method == "session/cancel":  # sent as a request: it gets its answer too
            self._cancel(connection, request.params.session_id)
            connection.reply(
                request.id, {}, reply_scope(request.method, params_of(request.message))
            )
            return
        key = (connection.id, request.id)
        read = CANCELS_READ.set(self._cancels_read)  # what the request's task is told
        try:
            task = self._spawn(self._serve(connection, request))
        finally:
            CANCELS_READ.reset(read)
        self._serving[key] = task
        task.add_done_callback(lambda t: self._served(connection, request, t))

    def _served(self, connection: RemoteClient, request: Request, task: asyncio.Task[None]) -> None:
        """A request's task ended; one the client cancelled is answered -32800 here, so
        even a task cancelled before it first ran gets its reply."""
        key = (connection.id, request.id)
        if self._serving.get(key) is task:
            del self._serving[key]
        asked = key in self._cancelled
        self._cancelled.discard(key)
        if task.cancelled() and asked:
            scope = reply_scope(request.method, params_of(request.message))
            connection.reply_error(request.id, RequestCancelled().to_wire(), scope)

    def _cancel_request(self, connection_id: str, request_id: RequestId) -> None:
        """`$/cancel_request`: the client's running request ends, answered -32800 (an
        unknown or finished one is ignored, as on stdio)."""
        key = (connection_id, request_id)
        task = self._serving.get(key)
        if task is None or task.done():
            log.debug("$/cancel_request for unknown or finished request %r", request_id)
            return
        self._cancelled.add(key)
        task.cancel()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _serve(self, connection: RemoteClient, request: Request) -> None:
        method, params = request.method, params_of(request.message)
        scope = reply_scope(method, params)
        try:
            if method == "session/prompt" and connection.bridge is not None:
                await self.held.arrive(str(params.get("sessionId")))  # in the order read
            result = await self._call(connection, method, params)
        except AcpError as exc:
            connection.reply_error(request.id, exc.to_wire(), scope)
        except ApiError as exc:
            connection.reply_error(request.id, api_error_wire(exc), scope)
        except ClientError as exc:  # the agent failed the request
            error = {"code": getattr(exc, "code", InternalError.code), "message": str(exc)}
            connection.reply_error(request.id, error, scope)
        except Exception:  # a bug of ours: logged whole, and the request still answered
            log.exception("remote %s failed", method)
            connection.reply_error(request.id, InternalError().to_wire(), scope)
        else:
            connection.reply(request.id, result, scope)
        finally:  # whatever became of a prompt, the next one read goes on
            self.held.entered()

    async def _call(self, connection: RemoteClient, method: str, params: dict[str, Any]) -> Any:
        if method == "session/new":
            return await self._new(connection, params)
        if method in ("session/load", "session/resume"):
            # A v1 resume replays none; a v2 one as its cursor says.
            v2_replay = connection.bridge is not None and replay_from(params.get("replayFrom"))
            replay = method == "session/load" or v2_replay
            return await self._reopen(connection, params, replay=replay)
        if method == "session/list":
            return await self._list(connection)
        if method == "authenticate":
            return {}  # the key authenticated this connection; the agent's processes are ours
        if method == "initialize":
            raise InvalidRequest("Invalid Request: this connection is already initialized")
        if method == "session/prompt" and self.admit is not None:  # a new turn: within budget
            await self.admit(connection.principal.name)
        far = self.far.find(str(params.get("sessionId")), connection)
        if method == SET_TITLE:  # the conversation's, for v1 and v2 clients alike
            title = checked_title(params.get("title"), self.limits.max_title_chars)
            if far is not None:
                await far.rename(connection, title)
            else:
                conv = self._attached(connection, params).conv
                await self.conversations.rename(conv, title)
                await tell_title(self.conversations, conv, title)  # the agent, the readers
            return {"title": title}
        if far is not None:
            return await self._far_call(connection, far, method, params)
        relay = self._attached(connection, params)
        if method == "session/prompt":
            if await self._held_elsewhere(relay.conv):  # another replica took it over
                far = await self._move_away(relay)
                return await self._far_call(connection, far, method, params)
            try:
                return await self._prompt(connection, relay, params)
            except TakenElsewhere:  # taken between that look and the claim: followed there
                far = await self._move_away(relay)
                return await self._far_call(connection, far, method, params)
        if method == "session/close":
            self.relays.detach(relay, connection)
            return {}
        if connection.bridge is not None and method in BRIDGED_METHODS:  # v2 named otherwise
            spec = self.conversations.pool(connection.agent).spec
            session = await self.conversations.bind(relay.conv)
            return await bridged_call(connection.principal, spec, session, method, params)
        if method.startswith(("session/", "_")):  # set_mode, set_config_option, extensions
            spec = self.conversations.pool(connection.agent).spec
            check_change(connection.principal, spec, method, params)  # before anything is sent
            session = await self.conversations.bind(relay.conv)
            if speaks_v2(session) and method in V1_ON_V2_METHODS:  # a v1 client, a v2 agent
                return await v1_call(connection.principal, spec, session, method, params)
            params = steering_only(method, params)  # never a turn the gateway did not begin
            return await session.channel.call_raw(method, params, session.channel.timeouts.request)
        raise MethodNotFound(method)

    # ---- sessions --------------------------------------------------------------------------

    async def _new(self, connection: RemoteClient, params: dict[str, Any]) -> dict[str, Any]:
        pool = self.conversations.pool(connection.agent)
        params = await self._checked_servers(params)
        where = session_params(connection.principal, pool, params)
        conv = await self.conversations.create(
            connection.principal.name, connection.agent, "acp", session_params=where.stored()
        )
        session = await self.conversations.bind(conv)
        await self._stored(conv)  # a load on another replica finds it
        relay = self.relays.relay(conv)
        # What the agent sent while opening it (its commands, say), before anyone watched:
        # on the connection's stream, like the result (the session's is not open yet).
        for update in session.drain():
            if isinstance(update, Update) and (v1 := logged_update(session, update)) is not None:
                connection.send_update(session.id, v1.raw)  # v1's shape, as in the log
        await relay.attach(connection, replay=False)
        v2 = speaks_v2(session)  # its commands in its result, else in an update sent above
        if connection.bridge is not None:  # v2's result: the modes are a config option
            return {
                "sessionId": session.id,
                **session_config(connection.principal, pool.spec, session, commands=v2),
            }
        return {**v1_result(connection, session, commands=v2), "sessionId": session.id}

    async def _reopen(
        self, connection: RemoteClient, params: dict[str, Any], *, replay: bool
    ) -> dict[str, Any]:
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            raise InvalidParams(
                'Invalid params: "sessionId" must be a string', {"field": "sessionId"}
            )
        params = await self._checked_servers(params)
        conv = await self._conversation_of(connection, session_id, params)
        if await self._held_elsewhere(conv):  # served from the store, driven there
            return await self._attach_far(connection, conv, replay)
        try:
            session = await self.conversations.bind(conv)
        except TakenElsewhere:  # taken between that look and the claim
            return await self._attach_far(connection, conv, replay)
        await self._stored(conv)  # one just made here (the agent's own)
        session.drain()  # folded into the view already; the watchers have their own
        # The history, with `replay`, to this client only, before the reply (as from an
        # agent): from the log when it holds it all (relay.py).
        await self.relays.relay(conv).attach(connection, replay)
        if connection.bridge is not None:  # v2: the state after the replay, before the reply
            send_state(
                connection, session_id, conv.turn is not None and not conv.turn.done.is_set()
            )
            spec = self.conversations.pool(connection.agent).spec
            return session_config(connection.principal, spec, session, commands=True)
        result = v1_result(connection, session, commands=True)
        result.pop("sessionId", None)
        # The official SDK's client opens a session's stream when a message names the
        # session: the reply says which, so the rest reaches it there.
        return {**result, "sessionId": session_id}

    async def _stored(self, conv: LiveConversation) -> None:
        """Once the conversation's row, as last changed, is stored, on a store replicas
        share: a client told of its session may ask another replica next."""
        if not self.replica.shared:
            return
        try:
            await self.conversations.hub.saved(conv.id)
        except Exception as exc:  # the store's error, whatever the driver raised
            why = f"the gateway could not store the session ({describe(exc)})"
            raise StoreFailed(why, code=STORE_FAILED) from None

    async def _conversation_of(
        self, connection: RemoteClient, session_id: str, params: dict[str, Any]
    ) -> LiveConversation:
        convs, principal = self.conversations, connection.principal
        conv = await convs.by_session(connection.agent, session_id)
        if conv is not None and owns(principal, conv.record.owner):
            return conv
        if conv is None and principal.name == "local":  # the agent's own, opened elsewhere
            where = session_params(principal, convs.pool(connection.agent), params)
            return await convs.create(
                principal.name,
                connection.agent,
                "acp",
                session_id=session_id,
                session_params=where.stored(),
            )
        raise SessionNotFound(session_id)

    async def _list(self, connection: RemoteClient) -> dict[str, Any]:
        return await session_list(self.conversations, connection.principal, connection.agent)

    def _attached(self, connection: RemoteClient, params: dict[str, Any]) -> SessionRelay:
        session_id = params.get("sessionId")
        relay = self.relays.find(session_id) if isinstance(session_id, str) else None
        if relay is None or connection.id not in relay.clients:
            raise SessionNotFound(str(session_id))
        return relay

    async def _checked_servers(self, params: dict[str, Any]) -> dict[str, Any]:
        """`params` with its http/sse MCP servers checked (-32602) and their headers cut."""
        servers = params.get("mcpServers")
        if not isinstance(servers, list):
            return params  # absent, or refused as not a list by limits.session_params
        return {**params, "mcpServers": await checked_mcp_servers(servers, self.mcp)}

    # ---- turns -----------------------------------------------------------------------------

    async def _prompt(
        self, connection: RemoteClient, relay: SessionRelay, params: dict[str, Any]
    ) -> dict[str, Any]:
        prompt = prompt_of(params)
        request = TurnRequest(
            prompt=prompt,
            title=prompt_text(prompt) or "(no text)",
            owner=connection.principal.name,
            policy=remote_policy(connection.principal),
            source="acp",
        )
        if connection.bridge is not None:  # v2: held while a turn runs, not busy (held.py)
            await self.held.wait(relay.conv, connection.principal.name, self.admit)
        turn = await self.conversations.begin(relay.conv, request)
        relay.prompter = connection
        if connection.bridge is not None:  # v2: acknowledged at once, the turn goes on
            self._spawn(self._prompted(connection, relay, turn))
            return {"messageId": user_message_id(relay.conv.id, turn.id)}
        try:
            result = await turn.wait()
        except asyncio.CancelledError:  # $/cancel_request: the turn ends as on session/cancel
            turn.cancel()
            await turn.wait()  # its updates go out before the -32800
            raise
        finally:
            if relay.prompter is connection:
                relay.prompter = None
        if isinstance(result, TurnFailed):
            raise InternalError(f"the turn failed: {result.message}", {"reason": result.code})
        assert isinstance(result, TurnEnd)
        return result.raw or {"stopReason": result.stop_reason}

    @staticmethod
    async def _prompted(connection: RemoteClient, relay: SessionRelay, turn: GatewayTurn) -> None:
        """A v2 prompt's turn, to its end (which its client reads as `idle`, bridge.py)."""
        try:
            await turn.wait()
        finally:
            if relay.prompter is connection:
                relay.prompter = None

    async def _far_call(
        self, connection: RemoteClient, far: FarSession, method: str, params: dict[str, Any]
    ) -> Any:
        self.held.entered()  # a prompt's line is the holder's: the next one read goes on
        if method == "session/close":
            self.far.detach(far, connection)
            return {}
        held = BRIDGED_METHODS if connection.bridge is not None else V1_ON_V2_METHODS
        bridged = method in held  # passed to the holder
        if method != "session/prompt" and not bridged:
            raise InvalidRequest(
                f"Invalid Request: {method} is not available here while this session is live "
                "on another gateway replica"
            )
        try:
            if bridged:
                return await far.session_call(connection, method, params)
            policy = remote_policy(connection.principal)
            return await far.prompt(connection, prompt_of(params), policy)
        except asyncio.CancelledError:  # $/cancel_request: a v1 turn ends on its holder too
            if not bridged and connection.bridge is None:  # a v2 one held there leaves its line
                self._spawn(far.cancel())
            raise
        except NowFree:  # nobody holds it any more: it moves here, with its watchers
            pass
        await self.conversations.bind(far.conv)
        relay = self.relays.relay(far.conv)
        for watcher in list(far.clients.values()):
            self.far.detach(far, watcher)
            await relay.attach(watcher, replay=False)
        if bridged:
            return await self._call(connection, method, params)  # now a session of ours
        return await self._prompt(connection, relay, params)

    async def _held_elsewhere(self, conv: LiveConversation) -> bool:
        """Whether another live replica holds the conversation (asked before claiming it,
        so that claiming is refused only in a race: see `_reopen`, `_call`)."""
        return await self.replica.holder_url(conv.id) is not None

    async def _attach_far(
        self, connection: RemoteClient, conv: LiveConversation, replay: bool
    ) -> dict[str, Any]:
        """A session live on another replica: served from the store, driven there."""
        far = self.far.session(conv)
        await far.attach(connection, replay)
        if connection.bridge is not None:  # v2: the state after the replay, before the reply
            send_state(connection, str(conv.record.session_id), await far.running())
            return await far_opened(far, connection)  # what the holder's session says
        return {**await far_opened(far, connection), "sessionId": conv.record.session_id}

    async def _move_away(self, relay: SessionRelay) -> FarSession:
        """A session another replica holds now: its watchers here follow it there."""
        far = self.far.session(relay.conv)
        for watcher in list(relay.clients.values()):
            self.relays.detach(relay, watcher)
            await far.attach(watcher, replay=False)
        return far

    def _cancel(self, connection: RemoteClient, session_id: str) -> None:
        """`session/cancel`: the session's running turn ends, its prompt answered
        `cancelled` (a session this connection is not attached to is ignored; a child's
        id cancels that child alone, if it is one of a session it watches)."""
        self._cancels_read += 1
        far = self.far.find(session_id, connection)
        if far is not None:  # its held v2 prompts and its turn, on the holder (far_held.py)
            far.cancel_read(self._cancels_read)  # as read: the prompts read before it hear it
            self._spawn(far.cancel(connection))
            return
        relay = self.relays.find(session_id)
        if relay is None:  # a child of a session it watches, alone (children.py, far_held.py)
            watched = [r.conv for r in self.relays.watched_by(connection)]
            fars = self.far.watched_by(connection)
            self._spawn(cancel_child_anywhere(watched, fars, connection, session_id))
        elif connection.id in relay.clients:
            for key in self.held.requests_in(relay.conv.id, session_id, self._serving):
                self._cancel_request(*key)  # held v2 prompts: -32800, never inserted
            self.held.drop_far(relay.conv.id)  # and other replicas' clients' (far_held.py)
            turn = relay.conv.turn
            if turn is not None and not turn.done.is_set():
                turn.cancel()


__all__ = ["RemoteAcp"]
