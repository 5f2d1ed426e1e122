"""One remote ACP client's connection: numbered messages out, requests to it, and the registry.

Theory of operation. Whatever the gateway sends a remote client -- replies, the
updates of the sessions it watches, the agent's questions -- goes through
`RemoteClient.send()`, which numbers it (`seq`, per connection, from 1) and hands it
to the `RemoteHub`. The hub stores a batch of messages in one transaction and only
then delivers each to the connection's readers (an SSE stream of its scope, or a
WebSocket that reads every scope). So what a reader got is always stored, and a
reader that reconnects with `Last-Event-ID` / `after_seq` reads the rest from the
store: nothing missed, nothing twice (a message found in both is skipped by seq).

An agent update of a turn is an event of its conversation's log (`tasklog.py`), which
stores it once: `send_logged()` numbers it on the connection like any message, but the
hub stores only a reference to the log's frame (`store/remote.py`), and a reader that
reads it back from the store gets it rebuilt from that frame (`RemoteHub.stored_after`).
A load's replay of a session's history is such references too (a `task-started`
frame replays as its prompt, `frames.frame_update`), on the connection's own stream: there
the scope names no session, so the session is the conversation's (`LogReader`).
The connection's numbering, and so resumption, is the same for both kinds: the cursor
of a stream (`Last-Event-ID`, `after_seq`, a WebSocket's frame number) is the
connection's seq; the log's seq travels in the reference.

A reference is not waited for. Its frame is stored already (the log's writer stored
it before any reader saw it), so the message goes to the readers at once, *ahead* of
its reference row, when every earlier message of the connection has been delivered
(else it waits its turn in the batch, so one connection's messages stay in order).
Its row is *held* (`RemoteHub._held`) until the hub next writes a message that is not
a reference -- the reply that ends a prompt, a question -- or until
`remote_references_held` are held, or a flush (a connection closing): a turn's
updates then cost one transaction for all their rows, with that reply's, instead of
one each beside the log's own (the store has one writer). Until its row is stored the
connection keeps it (`RemoteClient.ahead`), and a stream opened meanwhile reads it
from there beside the store: a resume still replays exactly what was missed (the
rows are read by this process only: a connection does not outlive it). This keeps
the second write off a turn's critical path (bench/remote.py). A v2 client's
translation of a stored frame (bridge.py) goes the same way: made of what is stored
already, it is delivered ahead and its row held; the row holds the message whole, since
the translation depends on what the client was sent before and is not rebuilt.

A message's *scope* is its stream: "" for the connection's own (replies to
connection-wide requests, `session/new` and `session/load` results and the history a
load replays), a session id for a session's (its updates, the agent's questions about
it, replies to prompts), and `INIT_SCOPE` for the reply to `initialize` (the body of
the HTTP answer; on a WebSocket the first frame, so that frame N is message N).

A stream opened without a position starts after what that stream already handed out
(messages sent before anyone opened it wait, as they would in a buffer); with
`Last-Event-ID` / `after_seq` it starts after that number.

A batch the store refuses is never delivered (but for the references in it delivered
ahead: what they carry is stored, in the log). Each connection with a message in it
*fails* (`RemoteClient.fail`): its readers get one JSON-RPC error with `id: null` and
`data.code` `store_failed` (not numbered: no store holds it), then their streams end;
a WebSocket closes with 1011. The connection is gone (its requests are withdrawn): a
client sends `initialize` again, and `session/load` finds what was stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from agentao.gateway.auth import Principal, owns
from agentao.gateway.batches import BatchWriter, WriterBackoff, describe
from agentao.gateway.config import Limits
from agentao.gateway.errors import NotFound, TooManyConnections
from agentao.gateway.remote.bridge import BRIDGED, V2Bridge
from agentao.gateway.remote.children import child_of, hidden_from
from agentao.gateway.remote.frames import rebuilt, session_update_body
from agentao.protocol.connection import Connection as Wire
from agentao.store.gateway_records import Conversation, TaskEvent
from agentao.store.remote import RemoteConnection, RemoteMessage, RemoteStore

_encode = msgspec.json.Encoder().encode
log = logging.getLogger("agentao.gateway")
CONNECTION_PREFIX = "acpc_"
INIT_SCOPE = "$initialize"
STORE_FAILED = "store_failed"  # data.code of the error a connection's readers get
INTERNAL_ERROR = -32603  # JSON-RPC: the gateway could not do its part
UNSTORED = 0  # the seq of a message no store holds: a store failure's error
LOGGED = frozenset({"task-running", "session-update"})  # frames every client is sent


class LogReader(Protocol):
    """The conversations' logs, and whose session each is (the gateway's store)."""

    async def events_after(self, conversation_id: str, after_seq: int) -> list[TaskEvent]: ...
    async def get_conversation(self, conversation_id: str) -> Conversation | None: ...


class RemoteRequestError(Exception):
    """The remote client answered one of our requests with a JSON-RPC error."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(str(error.get("message", "error")))
        self.error = error


class RemoteClient:
    """A remote client's connection, live in this gateway process. `wire` is its protocol
    connection (agentao.protocol): what it sends is read by the same rules as on stdio."""

    def __init__(
        self, record: RemoteConnection, principal: Principal, hub: RemoteHub, wire: Wire
    ) -> None:
        self.record = record
        self.principal = principal
        self.wire = wire
        # Its key as it came (memory only): what speaks for it to other replicas.
        self.credentials: dict[str, str] = {}
        self.hub = hub
        self.seq = 0
        self.sessions: set[str] = set()  # agent session ids whose stream it may open
        self.readers: set[tuple[str | None, asyncio.Queue[RemoteMessage | None]]] = set()
        self.handed_out: dict[str | None, int] = {}  # stream -> the last seq it yielded
        self.delivered = 0  # the last seq given to the readers (every earlier one was too)
        # References delivered ahead of their row, by seq, until the row is stored.
        self.ahead: dict[int, RemoteMessage] = {}
        self.closed = asyncio.Event()
        self.failure: RemoteMessage | None = None  # the error its readers got, if the store failed
        self.last_active = time.monotonic()
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        # A client that settled ACP v2 is sent the log through the bridge (bridge.py).
        self.bridge: V2Bridge | None = None

    @property
    def frames(self) -> frozenset[str]:
        """The types of log frame this client is sent as they come (reader.py)."""
        return LOGGED | BRIDGED if self.bridge is not None else LOGGED

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def agent(self) -> str:
        return self.record.agent

    def supports(self, path: str) -> bool:
        """Whether the client advertised a capability (`fs.readTextFile`): present, not
        false, not null."""
        node: Any = self.record.capabilities
        for step in path.split("."):
            node = node.get(step) if isinstance(node, dict) else None
        return node not in (None, False)

    # ---- out ---------------------------------------------------------------------------

    def send(self, message: dict[str, Any], scope: str = "") -> None:
        self.send_body(_encode(message), scope)

    def send_body(self, body: bytes, scope: str = "", *, of_the_log: bool = False) -> None:
        """A message already encoded (one line of JSON, no newline); `of_the_log`: made of
        a stored frame of the log (`RemoteHub.queue`)."""
        if self.closed.is_set():
            return
        self.seq += 1
        self.hub.queue(self, RemoteMessage(self.id, self.seq, scope, body), of_the_log=of_the_log)

    def send_logged(
        self, conversation_id: str, event: TaskEvent, session_id: str, scope: str | None = None
    ) -> None:
        """A frame of a conversation's log (a `task-running` or `session-update` frame; a
        `task-started` one, replayed as its prompt), as a `session/update` of session
        `session_id`, on the stream `scope` (default: the session's): stored as a
        reference to the frame (see the module docstring). A child's frame goes under the
        child's id, on the same stream, to a client that takes children (children.py)."""
        if self.closed.is_set() or hidden_from(self, event):
            return
        scope = session_id if scope is None else scope
        if self.bridge is not None:  # v2: each frame translated, stored as sent
            live = scope == session_id
            session_id = child_of(event) or session_id
            for update in self.bridge.frame(conversation_id, event, session_id, live=live):
                params = {"sessionId": session_id, "update": update}
                message = {"jsonrpc": "2.0", "method": "session/update", "params": params}
                self.send_body(_encode(message), scope, of_the_log=True)
            return
        self.seq += 1
        body = session_update_body(session_id, event)
        message = RemoteMessage(self.id, self.seq, scope, body, conversation_id, event.seq)
        self.hub.queue(self, message)

    def send_update(self, session_id: str, update: dict[str, Any], scope: str = "") -> None:
        """An agent's v1 update that is in no log, in the version the client speaks."""
        wire = update if self.bridge is None else self.bridge.update(session_id, update)
        if wire is not None:
            self.notify("session/update", {"sessionId": session_id, "update": wire}, scope)

    def reply(self, request_id: Any, result: Any, scope: str = "") -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result}, scope)

    def reply_error(self, request_id: Any, error: dict[str, Any], scope: str = "") -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "error": error}, scope)

    def notify(self, method: str, params: Any, scope: str = "") -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params}, scope)

    async def request(self, method: str, params: Any, scope: str = "") -> Any:
        """Ask the client; its result (RemoteRequestError for an error reply). Cancelling
        the caller withdraws the question (`$/cancel_request`)."""
        request_id = f"gw-{next(self._ids)}"
        if self.bridge is not None:
            method, params = self.bridge.request(method, params)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}, scope)
        try:
            return await future
        except asyncio.CancelledError:
            if not self.closed.is_set():
                self.notify("$/cancel_request", {"requestId": request_id}, scope)
            raise
        finally:
            self._pending.pop(request_id, None)

    def answered(self, message: dict[str, Any]) -> None:
        """A reply from the client to one of our requests (unknown ids are ignored)."""
        future = self._pending.get(str(message.get("id")))
        if future is None or future.done():
            return
        if isinstance(message.get("error"), dict):
            future.set_exception(RemoteRequestError(message["error"]))
        else:
            future.set_result(message.get("result"))

    # ---- readers -----------------------------------------------------------------------

    async def stream(
        self, scope: str | None, after: int | None, keepalive: float
    ) -> AsyncIterator[RemoteMessage | None]:
        """The messages of `scope` (None: every scope) after `after` (None: after what this
        stream already handed out), stored ones first, then live; None after `keepalive`
        seconds of silence. Ends when the connection closes."""
        async with contextlib.aclosing(self.bursts(scope, after, keepalive)) as bursts:
            async for burst in bursts:
                if burst is None:
                    yield None
                    continue
                for message in burst:
                    yield message

    async def bursts(
        self, scope: str | None, after: int | None, keepalive: float
    ) -> AsyncIterator[list[RemoteMessage] | None]:
        """`stream`'s messages, those ready together in one list: what the hub delivered
        in one go (a burst of a turn's updates) leaves in one write of the stream."""
        queue: asyncio.Queue[RemoteMessage | None] = asyncio.Queue()
        reader = (scope, queue)
        self.readers.add(reader)  # before reading the store: nothing falls in between
        ahead = list(self.ahead.values())  # delivered before, their rows maybe not stored
        try:
            if self.failure is not None:
                yield [self.failure]
                return
            last = after if after is not None else self.handed_out.get(scope, 0)
            missed = await self._missed(last, scope, ahead)
            if missed:
                last = self._hand_out(scope, missed[-1])
                yield missed
            while not self.closed.is_set():
                try:
                    message = await _next_of(queue, keepalive)
                except TimeoutError:
                    yield None
                    continue
                burst: list[RemoteMessage] = []
                while message is not None and message.seq != UNSTORED:
                    if message.seq > last:
                        last = self._hand_out(scope, message)
                        burst.append(message)
                    if queue.empty():
                        break
                    message = queue.get_nowait()
                else:  # closed (None), or the store failed: its error ends the stream
                    if burst:
                        yield burst
                    if message is not None:
                        yield [message]
                    return
                if burst:
                    yield burst
        finally:
            self.readers.discard(reader)
            self.last_active = time.monotonic()

    async def _missed(
        self, last: int, scope: str | None, ahead: list[RemoteMessage]
    ) -> list[RemoteMessage]:
        """What a stream opened after `last` has to catch up on: the stored messages, and
        the references delivered ahead of their rows (`ahead`, taken as the stream was
        opened: one whose row was stored since is in the store too), in order, once each."""
        missed = {m.seq: m for m in await self.hub.stored_after(self.id, last, scope)}
        for message in ahead:
            if message.seq > last and scope in (None, message.scope):
                missed.setdefault(message.seq, message)
        return [missed[seq] for seq in sorted(missed)]

    def _hand_out(self, scope: str | None, message: RemoteMessage) -> int:
        self.handed_out[scope] = max(self.handed_out.get(scope, 0), message.seq)
        return message.seq

    def deliver(self, message: RemoteMessage) -> None:
        """Give `message` to the readers of its scope, unless it was given already (ahead)."""
        if message.seq <= self.delivered:
            return
        self.delivered = message.seq
        for scope, queue in self.readers:
            if scope is None or scope == message.scope:
                queue.put_nowait(message)

    def fail(self, why: str) -> None:
        """The store refused this connection's messages: every reader gets a JSON-RPC
        error saying `why` (not numbered), then its stream ends (see the module docstring)."""
        if self.closed.is_set():
            return
        error = {"code": INTERNAL_ERROR, "message": why, "data": {"code": STORE_FAILED}}
        body = _encode({"jsonrpc": "2.0", "id": None, "error": error})
        self.failure = RemoteMessage(self.id, UNSTORED, "", body)
        for _scope, queue in self.readers:
            queue.put_nowait(self.failure)
        self.close()

    def close(self) -> None:
        self.closed.set()
        for _scope, queue in self.readers:
            queue.put_nowait(None)
        for future in self._pending.values():
            if not future.done():
                future.cancel()


async def _next_of(
    queue: asyncio.Queue[RemoteMessage | None], keepalive: float
) -> RemoteMessage | None:
    """The reader's next message (TimeoutError after `keepalive` seconds of none). Not
    `asyncio.wait_for`: on Python 3.11 it runs the wait in a task of its own, which costs
    each message two more turns of the event loop on a turn's critical path."""
    if not queue.empty():
        return queue.get_nowait()
    async with asyncio.timeout(keepalive):
        return await queue.get()


@dataclass(slots=True)
class _Batch:
    messages: list[tuple[RemoteClient, RemoteMessage]] = field(default_factory=list)


class RemoteHub:
    """The store writer for every connection's messages (see the module docstring)."""

    def __init__(
        self,
        store: RemoteStore,
        log: LogReader,
        backoff: WriterBackoff | None = None,
        references_held: int = 1,
    ) -> None:
        self.store = store
        self._log = log
        self._writer = BatchWriter(_Batch, self._write, self._fail, backoff)
        # References delivered ahead whose rows wait for the next batch (module docstring);
        # at most `references_held` (1: each row is written as it comes).
        self._held: list[tuple[RemoteClient, RemoteMessage]] = []
        self._references_held = references_held

    async def stored_after(
        self, connection_id: str, after: int, scope: str | None
    ) -> list[RemoteMessage]:
        """A connection's stored messages after `after`, each reference to a log's frame
        rebuilt from it (one read of each conversation's log). A frame the log no longer
        holds (pruned past its retention) is left out."""
        messages = await self.store.messages_after(connection_id, after, scope)
        firsts: dict[str, int] = {}
        for m in messages:
            if m.log_conversation is not None:
                first = firsts.get(m.log_conversation, m.log_seq)
                firsts[m.log_conversation] = min(first, m.log_seq)
        if not firsts:
            return messages
        frames: dict[tuple[str, int], TaskEvent] = {}
        for conversation_id, first in firsts.items():
            for event in await self._log.events_after(conversation_id, first - 1):
                frames[conversation_id, event.seq] = event
        sessions = await self._sessions_of(messages)
        return [found for m in messages if (found := rebuilt(m, frames, sessions)) is not None]

    async def _sessions_of(self, messages: list[RemoteMessage]) -> dict[str, str]:
        """The session of each conversation a reference on the connection's own stream
        refers to (a load's replay: its scope does not name the session)."""
        sessions: dict[str, str] = {}
        for conversation_id in {m.log_conversation for m in messages if m.scope == ""}:
            if conversation_id is None:
                continue
            record = await self._log.get_conversation(conversation_id)
            if record is not None and record.session_id is not None:
                sessions[conversation_id] = record.session_id
        return sessions

    def queue(
        self, connection: RemoteClient, message: RemoteMessage, *, of_the_log: bool = False
    ) -> None:
        """Store `message`, then deliver it. One made of a stored frame of the log (a
        reference to it, or, `of_the_log`, a v2 client's translation of it) is delivered
        at once when it is next in the connection's order, its row held for the next
        batch (see the module docstring)."""
        made_of_the_log = of_the_log or message.log_conversation is not None
        if made_of_the_log and message.seq == connection.delivered + 1:
            connection.ahead[message.seq] = message
            connection.deliver(message)
            self._held.append((connection, message))
            if len(self._held) >= self._references_held:
                self._write_held()
            return
        self._write_held()  # the rows before this message's, in its batch
        self._writer.batch.messages.append((connection, message))
        self._writer.kick()

    @property
    def held(self) -> int:
        """How many rows of references wait for the next batch."""
        return len(self._held)

    def _write_held(self) -> None:
        if self._held:
            self._writer.batch.messages.extend(self._held)
            self._held.clear()
            self._writer.kick()

    async def _write(self, batch: _Batch) -> None:
        now = time.time()
        seen = {c.id: now for c, _m in batch.messages}
        # A store error goes up to the writer, which logs it and calls `_fail`.
        await self.store.append_messages([m for _c, m in batch.messages], list(seen.items()))
        for connection, message in batch.messages:
            connection.ahead.pop(message.seq, None)
            connection.deliver(message)

    def _fail(self, batch: _Batch, exc: Exception) -> None:
        why = f"the gateway could not store this connection's messages ({describe(exc)})"
        for connection in {c.id: c for c, _m in batch.messages}.values():
            connection.fail(why)

    async def flush(self) -> None:
        """Wait until every message queued so far is stored, the held rows too."""
        self._write_held()
        await self._writer.flush()

    def close(self) -> None:
        self._writer.close()


class RemoteClients:
    """The remote connections of this gateway process, by id."""

    def __init__(self, store: RemoteStore, log: LogReader, limits: Limits, boot_id: str) -> None:
        self.store = store
        self.limits = limits
        self.boot_id = boot_id
        self.hub = RemoteHub(store, log, WriterBackoff.of(limits), limits.remote_references_held)
        self._live: dict[str, RemoteClient] = {}

    @staticmethod
    def new_id() -> str:
        return CONNECTION_PREFIX + uuid.uuid4().hex

    async def open(
        self,
        principal: Principal,
        agent: str,
        transport: str,
        capabilities: dict[str, Any],
        wire: Wire,
        connection_id: str | None = None,
    ) -> RemoteClient:
        mine = [c for c in self._live.values() if c.principal.name == principal.name]
        if len(mine) >= self.limits.remote_connections_per_key:
            raise TooManyConnections(
                f"this API key holds {len(mine)} remote ACP connections, the most it may "
                f"(remote_connections_per_key = {self.limits.remote_connections_per_key}); "
                "close one (DELETE) first",
                code="too_many_connections",
            )
        now = time.time()
        record = RemoteConnection(
            connection_id or self.new_id(),
            principal.name,
            agent,
            transport,
            capabilities,
            self.boot_id,
            now,
            now,
        )
        await self.store.put_connection(record)
        connection = self._live[record.id] = RemoteClient(record, principal, self.hub, wire)
        return connection

    def get(self, connection_id: str | None, principal: Principal) -> RemoteClient:
        """The caller's live connection (404 for anything else: not ours, gone, unknown)."""
        connection = self._live.get(connection_id or "")
        if connection is not None and connection.failure is not None:  # the store failed it
            self._live.pop(connection.id, None)
            connection = None
        if connection is None or not owns(principal, connection.record.owner):
            raise NotFound(
                "no such remote ACP connection (it was closed, or this gateway restarted): "
                "send initialize again",
                code="connection_not_found",
            )
        connection.last_active = time.monotonic()
        return connection

    def all(self) -> list[RemoteClient]:
        return list(self._live.values())

    async def close_all(self) -> None:
        """Every stream ends; what was sent is stored (the records stay, for replay)."""
        for connection in self.all():
            connection.close()
        self._live.clear()
        await self.hub.flush()

    async def close(self, connection: RemoteClient) -> None:
        connection.close()
        self._live.pop(connection.id, None)
        await self.hub.flush()
        try:
            await self.store.delete_connection(connection.id)
        except Exception as exc:  # closed all the same; `forget_stale` deletes it later
            log.exception("could not delete remote connection %s: %s", connection.id, describe(exc))

    async def forget_stale(self) -> int:
        """Delete the stored connections no process serves any more (a gateway that was
        stopped or killed) once they are idle for `remote_idle_seconds`."""
        cutoff = time.time() - self.limits.remote_idle_seconds
        stale = [c for c in await self.store.idle_connections(cutoff) if c not in self._live]
        for connection_id in stale:
            await self.store.delete_connection(connection_id)
        return len(stale)

    def unread_beyond_limit(self, principal: Principal) -> list[RemoteClient]:
        """The key's connections to close so that one more fits its limit: those nobody
        reads (dropped, perhaps never coming back), least recently active first."""
        mine = [c for c in self._live.values() if c.principal.name == principal.name]
        excess = len(mine) + 1 - self.limits.remote_connections_per_key
        unread = sorted((c for c in mine if not c.readers), key=lambda c: c.last_active)
        return unread[: max(excess, 0)]

    def idle(self) -> list[RemoteClient]:
        """Clients nobody reads and nobody wrote to for `remote_idle_seconds`."""
        cutoff = time.monotonic() - self.limits.remote_idle_seconds
        return [c for c in self._live.values() if not c.readers and c.last_active < cutoff]


__all__ = [
    "CONNECTION_PREFIX",
    "INIT_SCOPE",
    "STORE_FAILED",
    "UNSTORED",
    "LogReader",
    "RemoteClient",
    "RemoteClients",
    "RemoteHub",
    "RemoteRequestError",
]
