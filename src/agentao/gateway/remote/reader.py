"""A conversation's log, read once for the remote clients here that watch it.

Theory of operation. Remote clients watch a conversation by reading its log (the
numbered frames of every turn, `tasklog.py`). What the log's frames mean to them is
written here once, whichever replica runs the conversation:

* `task-running`, and `session-update` (what the agent sent while no turn ran): a
  `session/update`, stored for each client as a reference to the log's frame
  (`RemoteClient.send_logged`), each frame once per client (by its seq);
* `permission-request`: `session/request_permission` to every attached client (and to
  one that attaches while it is open; a child's question under the child's id to a
  client that takes children, children.py); the first answer is passed on (`_answer`), and
  the `permission-response` frame that records whoever answered first withdraws the
  question from the others (`$/cancel_request`), so a tool runs at most once;
* `task-ended` / `task-error`: the end of a prompt that waits on it (`ended`).

A v2 client (bridge.py) is also sent the frames that are its turn's states
(`task-started`, the permission frames, the terminal ones), each translated.

Two things differ, and are a subclass's: where the frames come from (`_listen`,
`_unlisten`: the hub's delivery of stored frames on the replica that runs the turn,
`relay.py`; the store read by one position, woken by the replica's wake-ups, on any
other, `far.py`) and where an answer goes (`_answer`: the desk here, the holder's desk
through `Peers` there).

A client attaches in two steps: it *joins* (frames that come meanwhile are kept for
it), the history is read from the store (`_history`), and only then is it attached,
its position the last frame it read; the kept frames after that position follow. So a
frame stored while the store was being read is neither missed nor sent twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import Any

from agentao.gateway.remote.bridge import BRIDGED
from agentao.gateway.remote.children import CHILD, child_of, shows_children
from agentao.gateway.remote.clients import RemoteClient
from agentao.gateway.sessions import LiveConversation
from agentao.gateway.tasklog import SESSION_UPDATE, TERMINAL, UNSTORED
from agentao.protocol import meta
from agentao.store.gateway_records import TaskEvent

log = logging.getLogger("agentao.gateway")
ENDED_KEPT = 64  # terminal frames remembered, for a prompt whose task ends before it waits
# A turn's prompt, then its updates, and what the agent sent between turns (a mode
# change, a cancelled turn's late updates): the session's history in log order.
REPLAYED = frozenset({"task-started", "task-running", SESSION_UPDATE})
SENT = frozenset({"task-running", SESSION_UPDATE})  # a session/update to every client


class ConversationReader:
    """The remote clients of one conversation here, and the one reading of its log for
    them (see the module docstring). Subclasses say where frames come from and where
    answers go."""

    def __init__(self, conv: LiveConversation) -> None:
        self.conv = conv
        self.clients: dict[str, RemoteClient] = {}
        self.questions: set[Question] = set()  # open, to be offered to each attached client
        self._asked: dict[str, Question] = {}  # the log's open permission requests, by id
        self._seen: dict[str, int] = {}  # client -> the last log seq it was sent
        self._joining: dict[str, list[TaskEvent]] = {}  # client -> frames while it joins
        self._ended: OrderedDict[str, dict[str, Any]] = OrderedDict()  # task -> last frame
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}  # task -> its prompt
        self._children: set[str] = set()  # child sessions its log named (children.py)

    @property
    def session_id(self) -> str:
        assert self.conv.record.session_id is not None
        return self.conv.record.session_id

    @property
    def watched(self) -> bool:
        """Whether a client is attached or joining."""
        return bool(self.clients or self._joining)

    # ---- attaching -----------------------------------------------------------------------

    async def attach(self, client: RemoteClient, replay: bool) -> None:
        """From now on `client` gets every frame the log stores; with `replay`, the
        history first (see the module docstring)."""
        self._joining[client.id] = []
        self._listen()
        try:
            history = await self._history(replay)
        except BaseException:
            self._joining.pop(client.id, None)
            if not self.watched:
                self._unlisten()
            raise
        kept = self._joining.pop(client.id)
        if client.closed.is_set():  # it left while the history was read
            if not self.watched:
                self._unlisten()
            return
        if replay:
            self._replay(client, history)
        last = history[-1].seq if history else 0
        self._seen[client.id] = last
        self.clients[client.id] = client
        client.sessions.add(self.session_id)
        self._attached(client, last)
        for event in kept:
            self._send(event)
        for frame in self._open_requests(history):  # asked before anyone here watched
            self._ask(frame)
        for question in tuple(self.questions):
            question.offer(client)

    def detach(self, client: RemoteClient) -> None:
        """Forget `client` (its questions are no longer waited for)."""
        self.clients.pop(client.id, None)
        self._seen.pop(client.id, None)
        client.sessions.discard(self.session_id)
        client.sessions.difference_update(self._children)
        for question in self.questions:
            question.drop(client)
        self._detached(client)
        if not self.watched:
            self._unlisten()

    def _replay(self, client: RemoteClient, history: list[TaskEvent] | None) -> None:
        """The history as the log holds it: each turn's prompt, then its updates, and the
        notes between turns in their place, every one a reference to its frame (nothing
        copied); on the connection's own stream, before the reply to the load (the client
        reads no session stream yet)."""
        for event in history or ():
            if event.type in REPLAYED:
                client.send_logged(self.conv.id, event, self.session_id, scope="")

    # ---- the one reading of the log ------------------------------------------------------

    def read(self, event: TaskEvent) -> None:
        """One stored frame of the conversation's log (see the module docstring)."""
        if event.seq == UNSTORED:  # a store failure's: not part of the log
            return
        if event.type in SENT | BRIDGED:
            for kept in self._joining.values():
                kept.append(event)
            self._send(event)  # a v2 client's state comes before the question (bridge.py)
        if event.type == "permission-request":
            self._ask(event.payload)
        elif event.type == "permission-response":
            question = self._asked.pop(str(event.payload.get("requestId")), None)
            if question is not None:
                self._close(question)
        elif event.type in TERMINAL:
            self._end(event)

    def _send(self, event: TaskEvent) -> None:
        """An update to each attached client that has not had it (a replay may have). A
        child's id becomes one the clients that take children may name (its cancel)."""
        child = child_of(event)
        if child is not None:
            self._children.add(child)
        for client_id, client in tuple(self.clients.items()):
            if self._seen.get(client_id, 0) < event.seq:
                self._seen[client_id] = event.seq
                if child is not None and shows_children(client):
                    client.sessions.add(child)
                if event.type in client.frames:
                    client.send_logged(self.conv.id, event, self.session_id)

    def _ask(self, frame: dict[str, Any]) -> None:
        request_id = str(frame.get("requestId"))
        if request_id in self._asked:  # asked already (from the desk, or an earlier read)
            return
        params = {
            "sessionId": self.session_id,
            "toolCall": frame.get("toolCall"),
            "options": frame.get("options"),
        }
        question = Question("session/request_permission", params, self.session_id)
        if isinstance(child := frame.get(CHILD), str):  # under its id where shown
            question.child_params = {**params, "sessionId": child}
        self._asked[request_id] = question
        self.questions.add(question)
        for client in tuple(self.clients.values()):
            question.offer(client)
        question.answer.add_done_callback(lambda done: self._answered(request_id, question, done))

    def _answered(self, request_id: str, question: Question, done: asyncio.Future[Any]) -> None:
        """A client answered first: the answer is passed on (the log's record of the
        winning answer then withdraws the question from the others)."""
        if done.cancelled() or done.result() is None or question.answered_by is None:
            return  # withdrawn, or nobody could answer: the desk and its deadline decide
        option, reason = chosen(done.result())
        self._answer(request_id, option, reason, question.answered_by)

    def _close(self, question: Question) -> None:
        question.withdraw()
        self.questions.discard(question)
        self._closed()

    def _end(self, event: TaskEvent) -> None:
        frame = event.frame()
        self._ended[event.task_id] = frame
        while len(self._ended) > ENDED_KEPT:
            self._ended.popitem(last=False)
        waiting = self._waiting.pop(event.task_id, None)
        if waiting is not None and not waiting.done():
            waiting.set_result(frame)

    async def ended(self, task_id: str) -> dict[str, Any]:
        """The terminal frame of `task_id`, once the log has it."""
        frame = self._ended.get(task_id)
        if frame is not None:
            return frame
        waiting = self._waiting.get(task_id)
        if waiting is None:
            waiting = self._waiting[task_id] = asyncio.get_running_loop().create_future()
        return await waiting

    def _stop_waiting(self) -> None:
        """Every prompt waiting on a frame is cancelled (their clients have all left)."""
        for waiting in self._waiting.values():
            waiting.cancel()
        self._waiting.clear()

    # ---- what a subclass says ------------------------------------------------------------

    def _listen(self) -> None:
        """Start reading the log, if not yet (called as a client joins)."""
        raise NotImplementedError

    def _unlisten(self) -> None:
        """Stop reading it (nobody watches any more)."""
        raise NotImplementedError

    async def _history(self, replay: bool) -> list[TaskEvent] | None:
        """The log so far, as a joining client's position (and its replay); None when
        this source need not read it (the client starts at what comes next)."""
        raise NotImplementedError

    def _answer(self, request_id: str, option: str | None, reason: str, by: RemoteClient) -> None:
        """Pass a client's answer to a permission request on to whoever decides it."""
        raise NotImplementedError

    def _open_requests(self, history: list[TaskEvent] | None) -> list[dict[str, Any]]:
        """The permission requests still open when a client attaches."""
        return open_requests(history or [])

    def _attached(self, client: RemoteClient, last: int) -> None:
        """A client attached, its position `last` (a subclass's bookkeeping)."""

    def _detached(self, client: RemoteClient) -> None:
        """A client left (a subclass's bookkeeping)."""

    def _closed(self) -> None:
        """A question was withdrawn (a reader nobody needs may go)."""


def open_requests(events: list[TaskEvent]) -> list[dict[str, Any]]:
    """The permission requests among `events` that no later frame answered, of turns the
    log has not ended."""
    asked: dict[str, dict[str, Any]] = {}
    ended: set[str] = set()
    task_of: dict[str, str] = {}
    for event in events:
        request_id = str(event.payload.get("requestId"))
        if event.type == "permission-request":
            asked[request_id], task_of[request_id] = event.payload, event.task_id
        elif event.type == "permission-response":
            asked.pop(request_id, None)
        elif event.type in TERMINAL:
            ended.add(event.task_id)
    return [frame for rid, frame in asked.items() if task_of[rid] not in ended]


def chosen(result: Any) -> tuple[str | None, str]:
    """The option a client's `session/request_permission` result chose (None: it
    cancelled), and the reason it gave (`_meta`), if any."""
    outcome = result.get("outcome") if isinstance(result, dict) else None
    option = None
    if isinstance(outcome, dict) and outcome.get("outcome") == "selected":
        picked = outcome.get("optionId")
        option = picked if isinstance(picked, str) else None
    extra = result.get("_meta") if isinstance(result, dict) else None
    reason = extra.get(meta.REASON, "") if isinstance(extra, dict) else ""
    return option, str(reason)


class Question:
    """One question of the agent, open to a session's watchers until one answers.

    Each watcher gets it as its own request; the first good answer settles `answer`, and
    `withdraw()` takes it back from the rest (`$/cancel_request`). When every watcher
    asked answered with an error, `answer` is None; one that left is just not waited for.
    """

    def __init__(self, method: str, params: dict[str, Any], scope: str) -> None:
        self.method, self.params, self.scope = method, params, scope
        self.answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.answered_by: RemoteClient | None = None  # whose answer `answer` holds
        # A child's question, as a client that takes children is asked it (children.py).
        self.child_params: dict[str, Any] | None = None
        self._asking: dict[str, asyncio.Task[Any]] = {}
        self._clients: dict[str, RemoteClient] = {}

    def offer(self, client: RemoteClient) -> None:
        if self.answer.done() or client.id in self._asking:
            return
        params = self.params
        if self.child_params is not None and shows_children(client):
            params = self.child_params
        task = asyncio.ensure_future(client.request(self.method, params, self.scope))
        self._asking[client.id] = task
        self._clients[client.id] = client
        task.add_done_callback(self._answered)

    def drop(self, client: RemoteClient) -> None:
        """`client` left: no longer asked (one that attaches later still is)."""
        task = self._asking.pop(client.id, None)
        if task is not None:
            task.cancel()

    def _answered(self, task: asyncio.Task[Any]) -> None:
        if self.answer.done() or task.cancelled():
            return
        if task.exception() is None:
            by = next((c for i, c in self._clients.items() if self._asking.get(i) is task), None)
            self.answered_by = by
            self.answer.set_result(task.result())
            return
        log.info("%s: a remote client answered %r", self.method, task.exception())
        if all(t.done() for t in self._asking.values()):
            self.answer.set_result(None)

    def withdraw(self) -> None:
        for task in self._asking.values():
            task.cancel()


__all__ = [
    "ENDED_KEPT",
    "ConversationReader",
    "Question",
    "chosen",
    "open_requests",
]
