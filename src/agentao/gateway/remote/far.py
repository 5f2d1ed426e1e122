"""A remote client here of a session live on another replica: watched and driven from here.

Theory of operation. A remote ACP connection lives on the replica it opened on; the
session it loads may be live on another replica (that one holds the conversation's
lease, store/cluster.py). Rather than refuse, this replica serves the client from the
shared store and passes what the client does to the holder. A `FarSession` is a
`ConversationReader` (reader.py: what the log's frames mean to remote clients, written
once for here and for the holder) whose frames are the store's:

* the conversation's log is read by one position (`events_after(conversation, pos)`),
  woken whenever any replica stores frames of it (`Replica.follow_conversation`), and
  read again at each keep-alive in case a wake-up was lost;
* what the holder's agent sent between turns (a mode change a client there asked
  for, say) is in that log too (`session-update` frames), read like the rest;
* `session/load` replays the log (each turn's prompt, then every update its agent
  sent), as references to its frames; the reply is the holder's to say (the agent's
  modes, models and commands: far_open.py asks it);
* a permission question in the log goes to the attached clients (the first answer
  wins, as for a local session), and the answer to the holder's desk
  (`POST /v1/permissions/{id}` there, with the answering client's own key); the log's
  record of the winning answer withdraws it from the others;
* `session/prompt` starts a task on the holder (`POST /v1/tasks`, the client's key,
  the remote policy) and is answered when its terminal frame is in the log; a v2
  client's at once, with the `messageId` the log's `task-started` frame gives its
  prompt (bridge.py), as for a session live here: the turn is its `state_update`s
  (what the log gives from a turn's start on, before the holder's reply comes back,
  waits for that answer); a v2 prompt sent while a turn runs is held in the holder's
  line (`busy: "queue"`, far_held.py) and answered once its turn begins, sent there
  only once the one read before it is answered (`_in_order`: the order they were sent);
  `session/cancel` is passed to the holder (its turn, the held prompts: far_held.py),
  and cancels the conversation's running tasks there; the turn of a prompt that was on
  its way meanwhile is cancelled once the holder's answer names it (the two requests
  may arrive in either order), and so is that of a v1 prompt whose request is
  cancelled on its way; naming a child of a session a connection watches here, it
  cancels that child alone there (far_held.py).

When no live replica holds the conversation any more (its holder stopped or its lease
ran out), `prompt` raises `NowFree` and the caller reopens the session here.
* a v2 client's `session/set_config_option`, `tool_call/cancel` and `terminal/cancel`,
  and a v1 client's `session/set_mode` and `session/set_config_option`, go to the holder
  once (`POST /v1/conversations/{id}/acp`, the client's key and version), which answers
  them as for a client of its own (bridge_calls.held_call); its answer or error is
  relayed.

What a far session cannot do: the agent's other session methods, and its `fs/*`
requests to this client (the holder serves those itself, confined to the session's
directories).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from agentao.gateway.config import Limits
from agentao.gateway.errors import ApiError, SessionBusy
from agentao.gateway.peers import Peers, error_message
from agentao.gateway.remote.bridge import user_message_id
from agentao.gateway.remote.clients import RemoteClient
from agentao.gateway.remote.held import PROMPT_DROPPED
from agentao.gateway.remote.reader import ConversationReader
from agentao.gateway.replicas import Replica
from agentao.gateway.sessions import LiveConversation
from agentao.protocol.errors import (
    AcpError,
    InternalError,
    InvalidRequest,
    PeerError,
    RequestCancelled,
)
from agentao.store.gateway import IN_FLIGHT_TASK, GatewayStore
from agentao.store.gateway_records import TaskEvent

log = logging.getLogger("agentao.gateway")

# How many `session/cancel`s this replica had read when the request a task serves was
# read (service.py sets it as it starts that task): the ones read after a far prompt are
# the prompt's to hear, whenever they reach the holder (`_in_order`, `_started`).
CANCELS_READ: contextvars.ContextVar[int] = contextvars.ContextVar("cancels_read", default=0)


class NowFree(Exception):
    """No live replica holds the conversation: it can be opened here."""


class FarSession(ConversationReader):
    """One conversation live on another replica, and this replica's clients of it."""

    def __init__(
        self,
        conv: LiveConversation,
        store: GatewayStore,
        replica: Replica,
        peers: Peers,
        limits: Limits,
    ) -> None:
        super().__init__(conv)
        self.store, self.replica, self.peers, self.limits = store, replica, peers, limits
        self._position = 0  # the last seq of the log read
        self._reading = asyncio.Lock()  # the watcher's reads and `_catch_up`'s, one by one
        self._watcher: asyncio.Task[None] | None = None
        self._passing: set[asyncio.Task[None]] = set()  # requests on their way to the holder
        self._starting = 0  # v2 prompts on their way to the holder, not yet acknowledged
        self._sending = asyncio.Lock()  # v2 prompts go to the holder one by one (`_in_order`)
        self._drops = 0  # prompts the holder dropped: those waiting to be sent are dropped too
        self._cancel_read = 0  # CANCELS_READ as of the last `session/cancel` of it read here
        self._queued = 0  # v2 prompts on their way or waiting to be sent
        self._held: list[TaskEvent] = []  # what the log gave meanwhile, read after the ack
        self._acked: set[str] = set()  # tasks of acknowledged prompts, their start not read
        self._sent: list[Any] | None = None  # the blocks of the v2 prompt on its way

    # ---- the reader's source and sink ----------------------------------------------------

    def _listen(self) -> None:
        """Started once the first client's position is known (`_attached`)."""

    def _unlisten(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            self._watcher = None
        self._stop_waiting()  # their prompters have all left

    async def _history(self, replay: bool) -> list[TaskEvent]:
        """The whole log: its open questions, and where a client starts, need it."""
        return await self.store.events_after(self.conv.id, 0)

    def _attached(self, client: RemoteClient, last: int) -> None:
        if self._watcher is None:  # the first client: the log is read on from here
            self._position = last
            self._watcher = asyncio.get_running_loop().create_task(self._watch())

    def _answer(self, request_id: str, option: str | None, reason: str, by: RemoteClient) -> None:
        self._pass_on(self._pass_answer(request_id, option, by))

    def _pass_on(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` (a request to the holder nobody waits for), held here until done:
        the loop keeps only a weak reference to a task."""
        task = asyncio.get_running_loop().create_task(work)
        self._passing.add(task)
        task.add_done_callback(self._passed)

    # ---- following the conversation ------------------------------------------------------

    async def _watch(self) -> None:
        with self.replica.follow_conversation(self.conv.id) as woken:
            while True:
                woken.clear()  # cleared before reading: a wake-up meanwhile is kept
                try:
                    await self._read()
                    await asyncio.wait_for(woken.wait(), self.limits.ping_interval_seconds)
                except TimeoutError:  # a wake-up may have been lost: read again anyway
                    pass
                except Exception:  # the database is away: read again after a keep-alive
                    log.exception("following conversation %s", self.conv.id)
                    await asyncio.sleep(self.limits.ping_interval_seconds)

    async def _read(self) -> None:
        """The log after the position, once; then the prompts whose task is over without
        a terminal frame (settled as dead) end too."""
        async with self._reading:
            rows = {t: await self.store.get_task(t) for t in list(self._waiting)}
            for event in await self.store.events_after(self.conv.id, self._position):
                self._position = event.seq  # (events read after rows: see the loop below)
                if self._starting and (self._held or self._unacked_start(event)):
                    # A v2 prompt's acknowledgement goes before its turn (`_acknowledge`):
                    # from the start that may be its own on, the log waits for it. Other
                    # turns (the one it waits behind on the holder, another client's, one
                    # of a prompt acknowledged already but read late) are read meanwhile.
                    self._held.append(event)
                else:
                    self._read_one(event)
            for task_id, row in rows.items():
                if row is not None and row.status != IN_FLIGHT_TASK and task_id in self._waiting:
                    error = {"message": row.error or "the turn ended", "code": "gateway_stopped"}
                    self._end(TaskEvent(task_id, 0, "task-error", 0.0, {"error": error}))

    async def _catch_up(self) -> None:
        """Read the log as far as it is stored now, whatever the watcher's wake-ups: a v2
        prompt's acknowledgement comes after what the log held before its turn's start
        (the end of the turn it waited behind), as for a session live here."""
        try:
            await self._read()
        except Exception:  # the database is away: the watcher reads it once it is back
            log.exception("reading conversation %s", self.conv.id)

    def _acknowledged(self) -> None:
        self._starting -= 1
        if not self._starting:
            self._sent = None
            held, self._held = self._held, []
            for event in held:
                self._read_one(event)

    def _unacked_start(self, event: TaskEvent) -> bool:
        """Whether `event` may start the turn of the prompt on its way: a start not yet
        acknowledged, of a task the holder's tasks API began (the source of the prompts
        passed on) with those blocks. Another client's turn is read on meanwhile."""
        if event.type != "task-started" or event.task_id in self._acked:
            return False
        payload = event.payload
        return payload.get("source") == "task" and payload.get("prompt") == self._sent

    def _read_one(self, event: TaskEvent) -> None:
        if event.type == "task-started":
            self._acked.discard(event.task_id)
        self.read(event)

    # ---- the holder's questions ----------------------------------------------------------

    def _passed(self, task: asyncio.Task[None]) -> None:
        self._passing.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("a request to the holder failed", exc_info=task.exception())

    async def _pass_answer(self, request_id: str, option_id: str | None, by: RemoteClient) -> None:
        try:
            path = f"/v1/permissions/{request_id}"
            reply = await self._on_holder("POST", path, {"optionId": option_id}, by)
        except (ApiError, NowFree) as exc:
            log.warning("could not pass a permission answer on: %s", exc)
            return
        if reply.status_code != 200:
            log.warning("the holder refused a permission answer: %s", error_message(reply))

    # ---- the client's turns --------------------------------------------------------------

    async def prompt(self, client: RemoteClient, blocks: list[Any], policy: str) -> Any:
        """A turn on the holder: the ACP result once its terminal frame is in the log; to
        a v2 client, its acknowledgement at once (the turn is then seen as its states)."""
        if client.bridge is not None:
            return await self._acknowledge(client, blocks, policy)
        start = asyncio.ensure_future(self._started(client, blocks, policy))
        try:
            task_id = await asyncio.shield(start)
        except asyncio.CancelledError:  # `$/cancel_request`: the request may be on the holder
            start.add_done_callback(functools.partial(self._cancel_once_started, client))
            raise
        ended = await self.ended(task_id)
        if ended["type"] == "task-error":
            error = ended.get("error") or {}
            raise InternalError(
                f"the turn failed: {error.get('message')}", {"reason": error.get("code")}
            )
        return {"stopReason": ended.get("stopReason") or "end_turn"}

    async def _acknowledge(self, client: RemoteClient, blocks: list[Any], policy: str) -> Any:
        """A v2 prompt's acknowledgement: the messageId every reader derives from the log.
        B's reader of the log may read the turn's first frames (its question too) before
        the holder's reply to the start comes back: they are held until the reply to the
        prompt is written, which the service does in the step this returns in
        (`service._serve`), so `_acknowledged` runs after it (`call_soon`). Once the
        holder's answer is back, the log is read as far as it is stored (`_catch_up`):
        what came before the turn (the end of the one it waited behind) goes first."""
        async with self._in_order():
            self._starting, self._sent = self._starting + 1, blocks
            try:
                task_id = await self._started(client, blocks, policy)
                await self._catch_up()  # holding its turn (its start is not acked yet)
                self._acked.add(task_id)  # its start, if still unread, is not held then
            finally:
                asyncio.get_running_loop().call_soon(self._acknowledged)
        return {"messageId": user_message_id(self.conv.id, task_id)}

    @contextlib.asynccontextmanager
    async def _in_order(self) -> AsyncIterator[None]:
        """A v2 prompt goes to the holder once the one read before it is answered there
        (its turn begun, or refused): the holder's line has them in the order this
        replica's clients sent them, whichever of their requests would arrive first, and
        only one at a time is on its way (the log is held for its acknowledgement alone).
        A `session/cancel` meanwhile drops it: -32800, never sent. At most `[limits]
        remote_prompt_queue_depth` wait here, as in the holder's line (one more is
        refused busy, -32600)."""
        if self._sending.locked() and self._queued >= self.limits.remote_prompt_queue_depth:
            raise SessionBusy(self.limits.retry_after_seconds)
        drops, read = self._drops, CANCELS_READ.get()
        self._queued += 1
        try:
            async with self._sending:
                if self._drops != drops or self._cancel_read > read:
                    raise RequestCancelled()
                yield
        finally:
            self._queued -= 1

    async def _started(self, client: RemoteClient, blocks: list[Any], policy: str) -> str:
        """`_start`; and if a `session/cancel` was read while the prompt was on its way,
        the turn it began is cancelled there once the holder's answer names it. Passed on
        as two requests, the cancel may reach the holder first, with nothing to cancel
        yet: on a session live here the prompt, read first, would have been cancelled."""
        task_id = await self._start(client, blocks, policy)
        if self._cancel_read > CANCELS_READ.get():
            await self._cancel_task(task_id, client)
        return task_id

    def _cancel_once_started(self, client: RemoteClient, start: asyncio.Future[str]) -> None:
        """A v1 prompt's request was cancelled while its start was on its way: the turn it
        began on the holder, if any, is cancelled too (its client was answered -32800)."""
        if start.cancelled() or start.exception() is not None:
            return
        self._pass_on(self._cancel_task(start.result(), client))

    async def _start(self, client: RemoteClient, blocks: list[Any], policy: str) -> str:
        """The id of the task the holder started for the client's prompt."""
        body = {
            "agent": self.conv.record.agent,
            "prompt": blocks,
            "conversation_id": self.conv.id,
            "permission_policy": policy,
        }
        if client.bridge is not None:  # v2: held on the holder while a turn runs (far_held)
            body["busy"] = "queue"
        reply = await self._on_holder("POST", "/v1/tasks", body, client)
        if reply.status_code == 409 and _code(reply) == PROMPT_DROPPED:
            self._drops += 1  # a session/cancel dropped it before its turn: those after it too
            raise RequestCancelled()
        retry = "busy" not in body  # a held prompt's 409 is its line's answer: final
        deadline = asyncio.get_running_loop().time() + self.limits.cancel_grace_seconds
        while retry and reply.status_code == 409 and asyncio.get_running_loop().time() < deadline:
            # Busy: most likely the turn whose end we just relayed is still finishing there.
            await asyncio.sleep(0.05)
            reply = await self._on_holder("POST", "/v1/tasks", body, client)
        if reply.status_code == 409:
            raise InvalidRequest(f"Invalid Request: {error_message(reply)}")
        if reply.status_code != 201:
            raise InternalError(f"the replica holding this session: {error_message(reply)}")
        return str(reply.json()["id"])

    async def session_call(self, client: RemoteClient, method: str, params: Any) -> Any:
        """A client's session call (bridge_calls.held_call), passed on to the holder once
        with the client's key and version, and answered as the holder answers it
        (`NowFree` if none)."""
        path = f"/v1/conversations/{self.conv.id}/acp"
        call = {"method": method, "params": params, "protocol": 1 if client.bridge is None else 2}
        reply = await self._on_holder("POST", path, call, client)
        answer = reply.json() if reply.status_code == 200 else None
        if not isinstance(answer, dict) or not ("result" in answer or "error" in answer):
            raise InternalError(f"the replica holding this session: {error_message(reply)}")
        if "error" in answer:
            error = answer["error"]
            raise PeerError(error.get("code"), str(error.get("message")), error.get("data"))
        return answer["result"]

    async def rename(self, client: RemoteClient, title: str) -> None:
        """A v2 client's `session/set_title`: the holder's rename, with the client's key."""
        reply = await self._on_holder(
            "POST", f"/v1/conversations/{self.conv.id}", {"title": title}, client
        )
        if reply.status_code != 200:
            raise InternalError(f"the replica holding this session: {error_message(reply)}")

    async def running(self) -> bool:
        """Whether a turn of the conversation runs (on the holder), as the store says."""
        return any(t.status == IN_FLIGHT_TASK for t in await self.store.list_tasks(self.conv.id))

    def cancel_read(self, count: int) -> None:
        """A client here sent `session/cancel` of this session, read as the `count`th: it
        drops the prompts read before it still waiting here to be sent (`_in_order`), and
        cancels the turns of those on their way (`_started`)."""
        self._cancel_read = count

    async def cancel(self, by: RemoteClient | None = None) -> None:
        """Cancel the conversation's running turns, on the holder; `by`'s `session/cancel`
        there first drops the v2 prompts held for this and other replicas' clients and
        cancels the turn (far_held.held_cancel), as the holder's own clients' would."""
        if by is not None:
            with contextlib.suppress(AcpError, ApiError, NowFree):
                await self.session_call(by, "session/cancel", {"sessionId": self.session_id})
        tasks = await self.store.list_tasks(self.conv.id)
        running = {t.id for t in tasks if t.status == IN_FLIGHT_TASK}
        for task_id in sorted(running | set(self._waiting)):
            await self._cancel_task(task_id, by)

    async def _cancel_task(self, task_id: str, by: RemoteClient | None) -> None:
        """Cancel one task on the holder (one that has ended already is left as it is)."""
        with contextlib.suppress(ApiError, NowFree):
            await self._on_holder("POST", f"/v1/tasks/{task_id}/cancel", on_behalf=by)

    async def _on_holder(
        self, method: str, path: str, body: Any = None, on_behalf: RemoteClient | None = None
    ) -> Any:
        url = await self.replica.holder_url(self.conv.id)
        if url is None:
            raise NowFree(self.conv.id)
        who = on_behalf or next(iter(self.clients.values()), None)
        credentials = who.credentials if who is not None else {}
        return await self.peers.call(url, method, path, credentials, body)


class FarSessions:
    """This replica's far sessions, by conversation id."""

    def __init__(self, store: GatewayStore, replica: Replica, peers: Peers, limits: Limits) -> None:
        self.store, self.replica, self.peers, self.limits = store, replica, peers, limits
        self._far: dict[str, FarSession] = {}

    def session(self, conv: LiveConversation) -> FarSession:
        far = self._far.get(conv.id)
        if far is None:
            far = self._far[conv.id] = FarSession(
                conv, self.store, self.replica, self.peers, self.limits
            )
        return far

    def find(self, session_id: str, connection: RemoteClient) -> FarSession | None:
        """The far session `connection` watches under this id."""
        for far in self._far.values():
            if far.conv.record.session_id == session_id and connection.id in far.clients:
                return far
        return None

    def detach(self, far: FarSession, connection: RemoteClient) -> None:
        far.detach(connection)
        if not far.watched:
            self._far.pop(far.conv.id, None)

    def watched_by(self, connection: RemoteClient) -> list[FarSession]:
        """The far sessions `connection` watches."""
        return [f for f in self._far.values() if connection.id in f.clients]

    def detach_all(self, connection: RemoteClient) -> None:
        for far in self.watched_by(connection):
            self.detach(far, connection)


def _code(reply: Any) -> Any:
    """The gateway error code of an error reply, if it has one."""
    with contextlib.suppress(ValueError, AttributeError):
        return reply.json()["error"].get("code")
    return None


__all__ = ["CANCELS_READ", "FarSession", "FarSessions", "NowFree"]
