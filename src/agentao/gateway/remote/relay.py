"""A live session's remote watchers: every update to each of them, the agent's questions too.

Theory of operation. Several remote clients may watch one live session (each its own
`Connection`). A `SessionRelay` holds them for one conversation and reads the
conversation's log (`TaskHub.watch_conversation`): every agent update of every turn,
whoever started it (a remote client, the OpenAI API, the web UI), reaches each
attached connection as the log stored it, in the log's order, and is stored for the
connection as a reference to the log's frame, not again (`Connection.send_logged`).
What the agent sends while no turn runs (a mode change's update, late updates of a
cancelled turn) is in no log: the relay also watches the agent session
(`Session.watch`) and passes those on as messages of their own. When the conversation
gets a new agent session (a reload after the agent process died), the relay watches
the new one (`Conversations.on_bound`).

What the agent asks of its client about a watched session goes to its watchers:
* a permission request, as its `permission-request` frame comes in the log (so after
  the updates before it), to *all* of them (and to one that attaches while it is
  open): the first answer goes to the gateway's desk (`PermissionDesk.answer`), where
  the first answer wins -- theirs or a person's -- and the `permission-response` frame
  that records it withdraws the question from the others (`$/cancel_request`), so a
  tool runs at most once;
* `_agentao.cn/ask_user` to all of them too, the first answer winning (it is in no log);
* `fs/read_text_file` / `fs/write_text_file` to the watcher that advertised the
  capability (the one that started the running turn first), else served here as for
  any gateway session (`LocalFiles`, confined to the session's directories).
Detaching a connection never touches another client's turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from agentao.client import Session, Update
from agentao.client.files import FileHandler, Workspace
from agentao.client.serving import ASK_USER_UNAVAILABLE
from agentao.gateway.permissions import AnswerRejected, UnknownRequest
from agentao.gateway.remote.connection import Connection, RemoteRequestError
from agentao.gateway.sessions import Conversations, LiveConversation
from agentao.gateway.tasklog import UNSTORED
from agentao.protocol import meta
from agentao.protocol.errors import AcpError, PeerError
from agentao.store.gateway_records import TaskEvent

log = logging.getLogger("agentao.gateway")
ASK_USER_METHOD = "_agentao.cn/ask_user"


def _chosen(result: Any) -> tuple[str | None, str]:
    """The option a client's `session/request_permission` result chose (None: it
    cancelled), and the reason it gave (`_meta`), if any."""
    outcome = result.get("outcome") if isinstance(result, dict) else None
    option = None
    if isinstance(outcome, dict) and outcome.get("outcome") == "selected":
        chosen = outcome.get("optionId")
        option = chosen if isinstance(chosen, str) else None
    extra = result.get("_meta") if isinstance(result, dict) else None
    reason = extra.get(meta.REASON, "") if isinstance(extra, dict) else ""
    return option, str(reason)


class SessionRelay:
    """One conversation's remote watchers (see the module docstring)."""

    def __init__(
        self,
        conv: LiveConversation,
        conversations: Conversations,
        forget: Callable[[SessionRelay], None],
    ) -> None:
        self.conv = conv
        self.conversations = conversations
        self.hub = conversations.hub  # its log, read from the first attach to the last detach
        self._asked: dict[str, Question] = {}  # the log's open permission requests, by id
        self.forget = forget  # called when nobody watches and nothing is asked any more
        self.connections: dict[str, Connection] = {}
        self.prompter: Connection | None = None  # who started the running turn, if remote
        self.questions: set[Question] = set()  # the agent's, open
        self._watched: Session | None = None
        self._unwatch: Callable[[], None] | None = None

    @property
    def session_id(self) -> str:
        assert self.conv.record.session_id is not None
        return self.conv.record.session_id

    def attach(self, connection: Connection) -> None:
        """`connection` watches from now on, and is asked what is still open."""
        if not self.connections:
            self.hub.watch_conversation(self.conv.id, self)
        self.connections[connection.id] = connection
        connection.sessions.add(self.session_id)
        self.conversations.attach(self.conv, connection.id)
        if self.conv.session is not None:
            self.watch(self.conv.session)
        self._ask_what_is_open()
        for question in self.questions:
            question.offer(connection)

    def _ask_what_is_open(self) -> None:
        """The running turn's questions still open at the desk, asked before anyone here
        watched the log: asked now (one the log brings later is not asked twice)."""
        turn = self.conv.turn
        if turn is None or turn.done.is_set():
            return
        for ask in self.conversations.desk.open_for(turn.id):
            if ask.id not in self._asked:
                self._ask_from_log(ask.frame())

    def detach(self, connection: Connection) -> None:
        """Forget `connection` (its questions are no longer waited for)."""
        self.connections.pop(connection.id, None)
        connection.sessions.discard(self.session_id)
        self.conversations.detach(self.conv, connection.id)
        if self.prompter is connection:
            self.prompter = None
        for question in self.questions:
            question.drop(connection)
        if not self.connections:
            self.hub.unwatch_conversation(self.conv.id, self)
            self.stop()

    def watch(self, session: Session) -> None:
        if session is self._watched:
            return
        self.stop()
        self._watched, self._unwatch = session, session.watch(self._update)

    def stop(self) -> None:
        if self._unwatch is not None:
            self._unwatch()
        self._watched = self._unwatch = None

    def put_nowait(self, event: TaskEvent) -> None:
        """A frame of the conversation's log, stored: a turn's update goes to every
        watcher (as a reference to the frame), a permission request is asked of them,
        and its answer, whoever gave it, withdraws it."""
        if event.seq == UNSTORED:
            return
        if event.type == "task-running":
            for connection in tuple(self.connections.values()):
                connection.send_logged(self.conv.id, event, self.session_id)
        elif event.type == "permission-request":
            self._ask_from_log(event.payload)
        elif event.type == "permission-response":
            question = self._asked.pop(str(event.payload.get("requestId")), None)
            if question is not None:
                self._close_question(question)

    def _ask_from_log(self, frame: dict[str, Any]) -> None:
        request_id = str(frame.get("requestId"))
        if request_id in self._asked:  # asked already, from the desk (`attach`)
            return
        params = {
            "sessionId": self.session_id,
            "toolCall": frame.get("toolCall"),
            "options": frame.get("options"),
        }
        question = Question("session/request_permission", params, self.session_id)
        self._asked[request_id] = question
        self.questions.add(question)
        for connection in self.connections.values():
            question.offer(connection)
        question.answer.add_done_callback(lambda done: self._to_desk(request_id, question, done))

    def _to_desk(self, request_id: str, question: Question, done: asyncio.Future[Any]) -> None:
        """A watcher answered first: the answer goes to the desk (which records it in the
        log; that frame withdraws the question from the others)."""
        if done.cancelled() or done.result() is None or question.answered_by is None:
            return  # withdrawn, or nobody could answer: the desk and its deadline decide
        option, reason = _chosen(done.result())
        try:
            self.conversations.desk.answer(
                request_id, option, question.answered_by.principal, channel="acp", reason=reason
            )
        except (UnknownRequest, AnswerRejected) as exc:  # answered at the desk first
            log.info("a remote client's permission answer came too late: %s", exc)

    def _close_question(self, question: Question) -> None:
        question.withdraw()
        self.questions.discard(question)
        if not (self.connections or self.questions):
            self.forget(self)

    def _update(self, update: Update) -> None:
        """An update straight from the agent session: passed on only while no turn runs
        (a turn's updates come through its log, `put_nowait`)."""
        turn = self.conv.turn
        if turn is not None and not turn.done.is_set():
            return
        params = {"sessionId": self.session_id, "update": update.raw}
        for connection in tuple(self.connections.values()):
            connection.notify("session/update", params, self.session_id)

    # ---- the agent's questions -----------------------------------------------------------

    async def ask_user(self, question: str) -> str:
        result = await self._first(
            ASK_USER_METHOD, {"sessionId": self.session_id, "question": question}
        )
        answer = result.get("answer") if isinstance(result, dict) else None
        return answer if isinstance(answer, str) else ASK_USER_UNAVAILABLE

    async def _first(self, method: str, params: dict[str, Any]) -> Any:
        """Ask every watcher, and each that attaches while it is open; the first answer."""
        question = Question(method, params, self.session_id)
        self.questions.add(question)
        try:
            for connection in self.connections.values():
                question.offer(connection)
            return await question.answer
        finally:
            self.questions.discard(question)
            question.withdraw()
            if not (self.connections or self.questions):
                self.forget(self)

    def reader_for(self, capability: str) -> Connection | None:
        """The watcher to serve a file request: the prompter first, then any that can."""
        candidates = [self.prompter, *self.connections.values()]
        return next((c for c in candidates if c is not None and c.supports(capability)), None)


class Question:
    """One question of the agent, open to a session's watchers until one answers.

    Each watcher gets it as its own request; the first good answer settles `answer`, and
    `withdraw()` takes it back from the rest (`$/cancel_request`). When every watcher
    asked answered with an error, `answer` is None; one that left is just not waited for.
    """

    def __init__(self, method: str, params: dict[str, Any], scope: str) -> None:
        self.method, self.params, self.scope = method, params, scope
        self.answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.answered_by: Connection | None = None  # whose answer `answer` holds
        self._asking: dict[str, asyncio.Task[Any]] = {}
        self._connections: dict[str, Connection] = {}

    def offer(self, connection: Connection) -> None:
        if self.answer.done() or connection.id in self._asking:
            return
        task = asyncio.ensure_future(connection.request(self.method, self.params, self.scope))
        self._asking[connection.id] = task
        self._connections[connection.id] = connection
        task.add_done_callback(self._answered)

    def drop(self, connection: Connection) -> None:
        """`connection` left: no longer asked (one that attaches later still is)."""
        task = self._asking.pop(connection.id, None)
        if task is not None:
            task.cancel()

    def _answered(self, task: asyncio.Task[Any]) -> None:
        if self.answer.done() or task.cancelled():
            return
        if task.exception() is None:
            by = next(
                (c for i, c in self._connections.items() if self._asking.get(i) is task), None
            )
            self.answered_by = by
            self.answer.set_result(task.result())
            return
        log.info("%s: a remote client answered %r", self.method, task.exception())
        if all(t.done() for t in self._asking.values()):
            self.answer.set_result(None)

    def withdraw(self) -> None:
        for task in self._asking.values():
            task.cancel()


class SessionRelays:
    """Every relay, and the agent-side handlers that route a session's questions to it."""

    def __init__(
        self, conversations: Conversations, files: FileHandler, deadline_seconds: float
    ) -> None:
        self.conversations = conversations
        self.local_files = files
        self.deadline_seconds = deadline_seconds  # for a question no desk oversees
        self._relays: dict[str, SessionRelay] = {}  # conversation id -> relay
        conversations.on_bound.append(self._bound)

    def relay(self, conv: LiveConversation) -> SessionRelay:
        relay = self._relays.get(conv.id)
        if relay is None:
            relay = self._relays[conv.id] = SessionRelay(conv, self.conversations, self._forget)
        return relay

    def find(self, session_id: str) -> SessionRelay | None:
        conv = self.conversations.live_session(session_id)
        return self._relays.get(conv.id) if conv is not None else None

    def detach(self, relay: SessionRelay, connection: Connection) -> None:
        relay.detach(connection)
        # A relay nobody watches is kept while the agent's question is open, so that a
        # client that comes back (or another) is asked it.
        if not (relay.connections or relay.questions):
            self._forget(relay)

    def detach_all(self, connection: Connection) -> None:
        for relay in [r for r in self._relays.values() if connection.id in r.connections]:
            self.detach(relay, connection)

    def _forget(self, relay: SessionRelay) -> None:
        if self._relays.get(relay.conv.id) is relay:
            del self._relays[relay.conv.id]

    def _bound(self, conv: LiveConversation) -> None:
        relay = self._relays.get(conv.id)
        if relay is not None and conv.session is not None:
            relay.watch(conv.session)

    # ---- the pool's handlers -------------------------------------------------------------

    async def ask_user(self, session_id: str, question: str) -> str:
        relay = self.find(session_id)
        if relay is None:
            return ASK_USER_UNAVAILABLE
        try:
            return await asyncio.wait_for(relay.ask_user(question), self.deadline_seconds)
        except TimeoutError:
            return ASK_USER_UNAVAILABLE

    async def read_text_file(
        self, ws: Workspace, path: str, line: int | None, limit: int | None
    ) -> str:
        connection = self._file_reader(ws.session_id, "fs.readTextFile")
        if connection is None:
            return await self.local_files.read_text_file(ws, path, line, limit)
        params = {"sessionId": ws.session_id, "path": path, "line": line, "limit": limit}
        params = {k: v for k, v in params.items() if v is not None}
        result = await _forwarded(connection, "fs/read_text_file", params, ws.session_id)
        content = result.get("content") if isinstance(result, dict) else None
        if not isinstance(content, str):
            raise PeerError(-32603, "the remote client's fs/read_text_file had no content")
        return content

    async def write_text_file(self, ws: Workspace, path: str, content: str) -> None:
        connection = self._file_reader(ws.session_id, "fs.writeTextFile")
        if connection is None:
            return await self.local_files.write_text_file(ws, path, content)
        params = {"sessionId": ws.session_id, "path": path, "content": content}
        await _forwarded(connection, "fs/write_text_file", params, ws.session_id)

    def _file_reader(self, session_id: str, capability: str) -> Connection | None:
        relay = self.find(session_id)
        return relay.reader_for(capability) if relay is not None else None


async def _forwarded(connection: Connection, method: str, params: Any, scope: str) -> Any:
    """A request to the remote client, its error passed to the agent as the client said it."""
    try:
        return await connection.request(method, params, scope)
    except RemoteRequestError as exc:
        error = exc.error
        raise _ClientSaid(
            error.get("code", -32603), str(error.get("message")), error.get("data")
        ) from None


class _ClientSaid(AcpError):
    """The remote client's own error, relayed to the agent unchanged."""

    def __init__(self, code: int, message: str, data: Any) -> None:
        super().__init__(message, data)
        self.code = code  # type: ignore[misc]


__all__ = ["ASK_USER_METHOD", "Question", "SessionRelay", "SessionRelays"]
