"""A remote client here of a session live on another replica: watched and driven from here.

Theory of operation. A remote ACP connection lives on the replica it opened on; the
session it loads may be live on another replica (that one holds the conversation's
lease, store/cluster.py). Rather than refuse, this replica serves the client from the
shared store and passes what the client does to the holder:

* `session/load` replays the conversation as the gateway logged it (each turn's
  prompt, then every update its agent sent), then attaches; the reply carries the
  session id only (the agent's modes and models are the holder's to say);
* every update of every turn on the conversation, whoever started it and on whichever
  replica, reaches the client live: the holder stores its task frames and wakes the
  others (`Replica.follow_conversation`); frames are read from the store, each once,
  and stored for the client as references to the log's frames, not again;
* a permission question in those frames goes to the attached clients (the first answer
  wins, as for a local session), and the answer to the holder's desk
  (`POST /v1/permissions/{id}` there, with the client's own key); an answer given
  elsewhere first withdraws the question here;
* `session/prompt` starts a task on the holder (`POST /v1/tasks`, the client's key,
  the remote policy) and is answered when its terminal frame is stored;
  `session/cancel` cancels the conversation's running tasks there.

When no live replica holds the conversation any more (its holder stopped or its lease
ran out), `prompt` raises `NowFree` and the caller reopens the session here.
What a far session cannot do: the agent's own session methods (`session/set_mode`,
config options) and the agent's `fs/*` requests to this client (the holder serves
those itself, confined to the session's directories).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from typing import Any

from agentao.gateway.config import Limits
from agentao.gateway.errors import ApiError
from agentao.gateway.peers import Peers, error_message
from agentao.gateway.remote.connection import Connection
from agentao.gateway.remote.relay import Question
from agentao.gateway.replicas import Replica
from agentao.gateway.sessions import LiveConversation
from agentao.protocol.errors import InternalError, InvalidRequest
from agentao.store.gateway import IN_FLIGHT_TASK, GatewayStore
from agentao.store.gateway_records import TaskEvent

log = logging.getLogger("agentao.gateway")
ENDED_KEPT = 64  # terminal frames remembered, for a prompt whose task ends before it waits


class NowFree(Exception):
    """No live replica holds the conversation: it can be opened here."""


class FarSession:
    """One conversation live on another replica, and this replica's clients of it."""

    def __init__(
        self,
        conv: LiveConversation,
        store: GatewayStore,
        replica: Replica,
        peers: Peers,
        limits: Limits,
    ) -> None:
        self.conv = conv
        self.store, self.replica, self.peers, self.limits = store, replica, peers, limits
        self.connections: dict[str, Connection] = {}
        self._seen: dict[str, dict[str, int]] = {}  # connection -> task -> last seq sent it
        self._position: dict[str, int] = {}  # task -> last seq read
        self._running: set[str] = set()  # the conversation's tasks not over yet
        self._questions: dict[str, Question] = {}  # permission request id -> question
        self._ended: OrderedDict[str, dict[str, Any]] = OrderedDict()  # task -> last frame
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}  # task -> its prompt
        self._watcher: asyncio.Task[None] | None = None
        self._passing: set[asyncio.Task[None]] = set()  # answers on their way to the holder

    @property
    def session_id(self) -> str:
        assert self.conv.record.session_id is not None
        return self.conv.record.session_id

    # ---- watchers ------------------------------------------------------------------------

    async def attach(self, connection: Connection, replay: bool) -> None:
        """From now on `connection` gets every update; with `replay`, the history first."""
        seen: dict[str, int] = {}
        open_questions: dict[str, dict[str, Any]] = {}
        for task in await self.store.list_tasks(self.conv.id):
            events = await self.store.task_events(task.id, 0)
            if replay:
                self._replay(connection, task.prompt, events)
            seen[task.id] = events[-1].seq if events else 0
            if task.status == IN_FLIGHT_TASK:
                self._running.add(task.id)
                open_questions.update(_still_open(events))
            if task.id not in self._position:  # the first client: start from here
                self._position[task.id] = seen[task.id]
        self._seen[connection.id] = seen
        self.connections[connection.id] = connection
        connection.sessions.add(self.session_id)
        for question in self._questions.values():
            question.offer(connection)
        for request_id, frame in open_questions.items():  # asked before anyone here watched
            if request_id not in self._questions:
                self._ask(frame)
        if self._watcher is None:
            self._watcher = asyncio.get_running_loop().create_task(self._watch())

    def detach(self, connection: Connection) -> None:
        self.connections.pop(connection.id, None)
        self._seen.pop(connection.id, None)
        connection.sessions.discard(self.session_id)
        for question in self._questions.values():
            question.drop(connection)
        if not self.connections and self._watcher is not None:
            self._watcher.cancel()
            self._watcher = None
            for waiting in self._waiting.values():  # their prompters have all left
                waiting.cancel()
            self._waiting.clear()

    def _replay(self, connection: Connection, prompt: str, events: list[TaskEvent]) -> None:
        said = {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": prompt}}
        connection.notify("session/update", {"sessionId": self.session_id, "update": said})
        for event in events:
            if event.type == "task-running":
                update = {"sessionId": self.session_id, "update": event.payload["update"]}
                connection.notify("session/update", update)

    # ---- following the conversation ------------------------------------------------------

    async def _watch(self) -> None:
        with self.replica.follow_conversation(self.conv.id) as woken:
            while True:
                tasks = set(woken.tasks)  # taken before reading: a wake-up meanwhile is kept
                woken.tasks.clear()
                woken.clear()
                try:
                    await self._read(tasks)
                    await asyncio.wait_for(woken.wait(), self.limits.ping_interval_seconds)
                except TimeoutError:  # a wake-up may have been lost: look at them all
                    woken.tasks.update(await self._all_tasks())
                except Exception:  # the database is away: read again after a keep-alive
                    log.exception("following conversation %s", self.conv.id)
                    await asyncio.sleep(self.limits.ping_interval_seconds)

    async def _all_tasks(self) -> list[str]:
        try:
            return [t.id for t in await self.store.list_tasks(self.conv.id)]
        except Exception:
            log.exception("listing the tasks of conversation %s", self.conv.id)
            return []

    async def _read(self, tasks: set[str]) -> None:
        for task_id in sorted(tasks | self._running):
            task = await self.store.get_task(task_id)  # before its frames: see tasks.py
            if task is None:
                continue
            for event in await self.store.task_events(task_id, self._position.get(task_id, 0)):
                self._position[task_id] = event.seq
                self._deliver(event)
            if task.status == IN_FLIGHT_TASK:
                self._running.add(task_id)
                continue
            self._running.discard(task_id)
            if task_id in self._waiting:  # over without a terminal frame: settled as dead
                error = {"message": task.error or "the turn ended", "code": "gateway_stopped"}
                self._end(TaskEvent(task_id, 0, "task-error", 0.0, {"error": error}))

    def _deliver(self, event: TaskEvent) -> None:
        if event.type == "task-running":  # stored for each client as a reference only
            for connection in self._unseen(event):
                connection.send_logged(self.conv.id, event, self.session_id)
        elif event.type == "permission-request":
            self._ask(event.payload)
        elif event.type == "permission-response":
            question = self._questions.pop(str(event.payload.get("requestId")), None)
            if question is not None:
                question.withdraw()  # answered elsewhere first
        elif event.type in ("task-ended", "task-error"):
            self._end(event)

    def _unseen(self, event: TaskEvent) -> list[Connection]:
        """The clients that have not had this frame (a replay may have sent it already)."""
        out = []
        for connection_id, connection in self.connections.items():
            seen = self._seen.get(connection_id, {})
            if seen.get(event.task_id, 0) < event.seq:
                seen[event.task_id] = event.seq
                out.append(connection)
        return out

    def _end(self, event: TaskEvent) -> None:
        self._running.discard(event.task_id)
        frame = event.frame()
        self._ended[event.task_id] = frame
        while len(self._ended) > ENDED_KEPT:
            self._ended.popitem(last=False)
        waiting = self._waiting.pop(event.task_id, None)
        if waiting is not None and not waiting.done():
            waiting.set_result(frame)

    # ---- the holder's questions ----------------------------------------------------------

    def _ask(self, frame: dict[str, Any]) -> None:
        request_id = str(frame.get("requestId"))
        params = {
            "sessionId": self.session_id,
            "toolCall": frame.get("toolCall"),
            "options": frame.get("options"),
        }
        question = self._questions[request_id] = Question(
            "session/request_permission", params, self.session_id
        )
        for connection in self.connections.values():
            question.offer(connection)
        question.answer.add_done_callback(lambda done: self._answered(request_id, done))

    def _answered(self, request_id: str, done: asyncio.Future[Any]) -> None:
        question = self._questions.pop(request_id, None)
        if question is None or done.cancelled():
            return
        question.withdraw()
        result = done.result()
        if result is None:  # every client failed to answer: the holder's desk decides
            return
        outcome = result.get("outcome") if isinstance(result, dict) else None
        chosen = outcome.get("optionId") if isinstance(outcome, dict) else None
        # Held here until done: the loop keeps only a weak reference to a task.
        task = asyncio.get_running_loop().create_task(self._pass_answer(request_id, chosen))
        self._passing.add(task)
        task.add_done_callback(self._passed)

    def _passed(self, task: asyncio.Task[None]) -> None:
        self._passing.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("passing a permission answer on failed", exc_info=task.exception())

    async def _pass_answer(self, request_id: str, option_id: Any) -> None:
        try:
            path = f"/v1/permissions/{request_id}"
            reply = await self._on_holder("POST", path, {"optionId": option_id})
        except (ApiError, NowFree) as exc:
            log.warning("could not pass a permission answer on: %s", exc)
            return
        if reply.status_code != 200:
            log.warning("the holder refused a permission answer: %s", error_message(reply))

    # ---- the client's turns --------------------------------------------------------------

    async def prompt(self, connection: Connection, blocks: list[Any], policy: str) -> Any:
        """A turn on the holder: the ACP result once its terminal frame is stored."""
        body = {
            "agent": self.conv.record.agent,
            "prompt": blocks,
            "conversation_id": self.conv.id,
            "permission_policy": policy,
        }
        reply = await self._on_holder("POST", "/v1/tasks", body, connection)
        deadline = asyncio.get_running_loop().time() + self.limits.cancel_grace_seconds
        while reply.status_code == 409 and asyncio.get_running_loop().time() < deadline:
            # Busy: most likely the turn whose end we just relayed is still finishing there.
            await asyncio.sleep(0.05)
            reply = await self._on_holder("POST", "/v1/tasks", body, connection)
        if reply.status_code == 409:
            raise InvalidRequest(f"Invalid Request: {error_message(reply)}")
        if reply.status_code != 201:
            raise InternalError(f"the replica holding this session: {error_message(reply)}")
        task_id = str(reply.json()["id"])
        self._running.add(task_id)
        ended = self._ended.get(task_id)
        if ended is None:
            waiting = self._waiting[task_id] = asyncio.get_running_loop().create_future()
            ended = await waiting
        if ended["type"] == "task-error":
            error = ended.get("error") or {}
            raise InternalError(
                f"the turn failed: {error.get('message')}", {"reason": error.get("code")}
            )
        return {"stopReason": ended.get("stopReason") or "end_turn"}

    async def cancel(self) -> None:
        """Cancel the conversation's running turns, on the holder."""
        for task_id in list(self._running):
            with contextlib.suppress(ApiError, NowFree):
                await self._on_holder("POST", f"/v1/tasks/{task_id}/cancel")

    async def _on_holder(
        self, method: str, path: str, body: Any = None, on_behalf: Connection | None = None
    ) -> Any:
        url = await self.replica.holder_url(self.conv.id)
        if url is None:
            raise NowFree(self.conv.id)
        who = on_behalf or next(iter(self.connections.values()), None)
        credentials = who.credentials if who is not None else {}
        return await self.peers.call(url, method, path, credentials, body)


def _still_open(events: list[TaskEvent]) -> dict[str, dict[str, Any]]:
    """The permission requests among `events` that no later frame answered."""
    asked: dict[str, dict[str, Any]] = {}
    for event in events:
        request_id = str(event.payload.get("requestId"))
        if event.type == "permission-request":
            asked[request_id] = event.payload
        elif event.type == "permission-response":
            asked.pop(request_id, None)
    return asked


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

    def find(self, session_id: str, connection: Connection) -> FarSession | None:
        """The far session `connection` watches under this id."""
        for far in self._far.values():
            if far.conv.record.session_id == session_id and connection.id in far.connections:
                return far
        return None

    def detach(self, far: FarSession, connection: Connection) -> None:
        far.detach(connection)
        if not far.connections:
            self._far.pop(far.conv.id, None)

    def detach_all(self, connection: Connection) -> None:
        for far in [f for f in self._far.values() if connection.id in f.connections]:
            self.detach(far, connection)


__all__ = ["FarSession", "FarSessions", "NowFree"]
