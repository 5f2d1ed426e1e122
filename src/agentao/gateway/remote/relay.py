"""A live session's remote watchers here: its log as the hub delivers it, the agent's questions.

Theory of operation. Several remote clients may watch one live session (each its own
`RemoteClient`). A `SessionRelay` holds them for one conversation running on this
replica: a `ConversationReader` (reader.py: what the log's frames mean to remote
clients, written once for here and for other replicas) whose frames are the hub's
delivery of the conversation's stored frames (`TaskHub.watch_conversation`), and whose
answers to permission requests go to this gateway's desk (`PermissionDesk.answer`),
where the first answer wins -- a client's or a person's. A `session/load` replays the
history from the log, as references to its frames, when the log holds all of it (a
conversation this gateway opened); a session opened elsewhere, whose earlier turns the
log never saw, is replayed from the agent's own history.

What the agent sends while no turn runs (a mode change's update, late updates of a
cancelled turn) is in the log too, as `session-update` frames of no task
(`Conversations` notes them, `TaskHub.note`): the relay reads them there like any
frame, numbered, so a client that resumes gets them again and one on another replica
gets them too (far.py).

The agent's other questions about a watched session:
* `_agentao.cn/ask_user` to all of them too, the first answer winning; while a turn runs
  the desk (asking.py) asks it on the log at the same time and withdraws it from here
  when a person answers first;
  a child's (a subagent's, asked through its root session, pool.py) under the child's
  id to those that take children (children.py), named after the child to the others;
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

from agentao.client import Session
from agentao.client.files import FileHandler, Workspace
from agentao.client.serving import ASK_USER_UNAVAILABLE
from agentao.client.view import Message
from agentao.gateway.permissions import AnswerRejected, UnknownRequest
from agentao.gateway.pool import AskingChild
from agentao.gateway.remote.clients import RemoteClient, RemoteRequestError
from agentao.gateway.remote.reader import ConversationReader, Question
from agentao.gateway.sessions import Conversations, LiveConversation
from agentao.protocol.errors import AcpError, PeerError
from agentao.store.gateway_records import TaskEvent

log = logging.getLogger("agentao.gateway")
ASK_USER_METHOD = "_agentao.cn/ask_user"


class SessionRelay(ConversationReader):
    """One conversation's remote watchers here, where it runs (see the module docstring):
    the log as the hub delivers its stored frames, answers to the desk."""

    def __init__(
        self,
        conv: LiveConversation,
        conversations: Conversations,
        forget: Callable[[SessionRelay], None],
    ) -> None:
        super().__init__(conv)
        self.conversations = conversations
        self.hub = conversations.hub  # its log, read from the first attach to the last detach
        self.forget = forget  # called when nobody watches and nothing is asked any more
        self.prompter: RemoteClient | None = None  # who started the running turn, if remote
        self._listening = False

    # ---- the reader's source and sink ----------------------------------------------------

    def put_nowait(self, event: TaskEvent) -> None:
        """A stored frame of the conversation's log, from the hub."""
        self.read(event)

    def _listen(self) -> None:
        if not self._listening:
            self.hub.watch_conversation(self.conv.id, self)
            self._listening = True

    def _unlisten(self) -> None:
        if self._listening:
            self.hub.unwatch_conversation(self.conv.id, self)
            self._listening = False

    async def _history(self, replay: bool) -> list[TaskEvent] | None:
        """The log, for a replay (a client that only attaches starts at what comes next)."""
        return await self.hub.store.events_after(self.conv.id, 0) if replay else None

    def _replay(self, client: RemoteClient, history: list[TaskEvent] | None) -> None:
        """From the log when it holds the session's whole history (a conversation this
        gateway opened: one turn in the log for each prompt the agent's history holds);
        else (a session opened elsewhere, a log past its retention) the agent's own."""
        session = self.conv.session
        if session is None or (history is not None and _whole(history, session)):
            super()._replay(client, history)
            return
        for update in session.view.replay():
            client.send_update(self.session_id, update)  # the connection's stream, as a reply

    def _answer(self, request_id: str, option: str | None, reason: str, by: RemoteClient) -> None:
        try:
            self.conversations.desk.answer(
                request_id, option, by.principal, channel="acp", reason=reason
            )
        except (UnknownRequest, AnswerRejected) as exc:  # answered at the desk first
            log.info("a remote client's permission answer came too late: %s", exc)

    def _open_requests(self, history: list[TaskEvent] | None) -> list[dict[str, Any]]:
        """The running turn's questions still open at the desk, asked before anyone here
        watched the log (one the log brings later is not asked twice)."""
        turn = self.conv.turn
        if turn is None or turn.done.is_set():
            return []
        return [ask.frame() for ask in self.conversations.desk.open_for(turn.id)]

    def _attached(self, client: RemoteClient, last: int) -> None:
        self.conversations.attach(self.conv, client.id)

    def _detached(self, client: RemoteClient) -> None:
        self.conversations.detach(self.conv, client.id)
        if self.prompter is client:
            self.prompter = None

    def _closed(self) -> None:
        if not (self.watched or self.questions):
            self.forget(self)

    # ---- the agent's questions -----------------------------------------------------------

    async def ask_user(self, question: str, child: AskingChild | None = None) -> str:
        """The agent's question to the person, to every watcher; a child's under the
        child's id to those that take children, named after it to the others."""
        params = {"sessionId": self.session_id, "question": question}
        child_params = None
        if child is not None:
            child_params = {**params, "sessionId": child.session_id}
            params = {**params, "question": f"(subagent {child.title}) {question}"}
        result = await self._first(ASK_USER_METHOD, params, child_params)
        answer = result.get("answer") if isinstance(result, dict) else None
        return answer if isinstance(answer, str) else ASK_USER_UNAVAILABLE

    async def _first(
        self, method: str, params: dict[str, Any], child_params: dict[str, Any] | None = None
    ) -> Any:
        """Ask every watcher, and each that attaches while it is open; the first answer."""
        question = Question(method, params, self.session_id)
        question.child_params = child_params
        self.questions.add(question)
        try:
            for client in tuple(self.clients.values()):
                question.offer(client)
            return await question.answer
        finally:
            self._close(question)

    def reader_for(self, capability: str) -> RemoteClient | None:
        """The watcher to serve a file request: the prompter first, then any that can."""
        candidates = [self.prompter, *self.clients.values()]
        return next((c for c in candidates if c is not None and c.supports(capability)), None)


def _whole(history: list[TaskEvent], session: Session) -> bool:
    """Whether the log holds the session's whole history: as many turns as the agent's
    history has prompts (a session opened elsewhere has prompts the log never saw)."""
    turns = sum(1 for event in history if event.type == "task-started")
    prompts = sum(
        1 for entry in session.view.entries if isinstance(entry, Message) and entry.role == "user"
    )
    return turns == prompts


class SessionRelays:
    """Every relay, and the agent-side handlers that route a session's questions to it."""

    def __init__(
        self, conversations: Conversations, files: FileHandler, deadline_seconds: float
    ) -> None:
        self.conversations = conversations
        self.local_files = files
        self.deadline_seconds = deadline_seconds  # for a question no desk oversees
        self._relays: dict[str, SessionRelay] = {}  # conversation id -> relay

    def relay(self, conv: LiveConversation) -> SessionRelay:
        relay = self._relays.get(conv.id)
        if relay is None:
            relay = self._relays[conv.id] = SessionRelay(conv, self.conversations, self._forget)
        return relay

    def find(self, session_id: str) -> SessionRelay | None:
        conv = self.conversations.live_session(session_id)
        return self._relays.get(conv.id) if conv is not None else None

    def detach(self, relay: SessionRelay, connection: RemoteClient) -> None:
        relay.detach(connection)
        # A relay nobody watches is kept while the agent's question is open, so that a
        # client that comes back (or another) is asked it.
        if not (relay.watched or relay.questions):
            self._forget(relay)

    def watched_by(self, connection: RemoteClient) -> list[SessionRelay]:
        """The relays `connection` is attached to (the sessions it watches here)."""
        return [r for r in self._relays.values() if connection.id in r.clients]

    def detach_all(self, connection: RemoteClient) -> None:
        for relay in self.watched_by(connection):
            self.detach(relay, connection)

    def _forget(self, relay: SessionRelay) -> None:
        if self._relays.get(relay.conv.id) is relay:
            del self._relays[relay.conv.id]

    # ---- the pool's handlers -------------------------------------------------------------

    async def ask_user(
        self, session_id: str, question: str, child: AskingChild | None = None
    ) -> str:
        """The agent's `ask_user` about `session_id` (a child's: its root's, naming it)."""
        relay = self.find(session_id)
        if relay is None:
            return ASK_USER_UNAVAILABLE
        try:
            return await asyncio.wait_for(relay.ask_user(question, child), self.deadline_seconds)
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

    def _file_reader(self, session_id: str, capability: str) -> RemoteClient | None:
        relay = self.find(session_id)
        return relay.reader_for(capability) if relay is not None else None


async def _forwarded(connection: RemoteClient, method: str, params: Any, scope: str) -> Any:
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


__all__ = ["ASK_USER_METHOD", "SessionRelay", "SessionRelays"]
