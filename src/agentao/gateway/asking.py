"""The agent's own questions (`ask_user`) at the gateway's desk, as permission questions are.

Theory of operation. Our agent's `ask_user` tool asks the person a free-text question
(`_agentao.cn/ask_user`; a child's, a subagent's, through its root session: pool.py).
When the session's conversation has a turn running, the question is a
`question-request` frame in its log {requestId, question, deadline, window,
childSessionId?, childTitle?}, so the task stream, the web UI and every replica read it; its end is a
`question-response` frame {requestId, answer (null: none), by} where `by` is `human`,
`acp` (a remote ACP client), `deadline` or `cancelled`.

The first answer wins: the owner's over HTTP (`POST /v1/questions/{id}`,
asking_api.py) or the task's WebSocket (`{"type": "question-response", "requestId",
"answer"}`), or a remote ACP client's, for the question goes to the conversation's
remote watchers too (`SessionRelays.ask_user`); whichever wins, the other side's is
withdrawn. Unanswered at `[limits] permission_deadline_seconds`, the agent gets what it
got when nobody could be asked ("(user unavailable)"); as for permissions, the owner's
presence (`POST /v1/questions/{id}/presence`, sent by the web UI while it shows the
question) moves the deadline on, up to `permission_wait_max_seconds` after it was asked. An answer longer than
`[limits] max_answer_chars` is refused, never cut.

Without a running turn (a remote client's turn runs through the log too, so this is
rare: a question asked while a turn ends), only remote watchers are asked.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from agentao.client.serving import ASK_USER_UNAVAILABLE
from agentao.gateway.auth import Principal, owns
from agentao.gateway.pool import AskingChild
from agentao.gateway.sessions import Conversations
from agentao.gateway.tasklog import TaskLog

QUESTION_REQUEST = "question-request"
QUESTION_RESPONSE = "question-response"
Answerer = Literal["human", "acp", "deadline", "cancelled"]
RemoteAsk = Callable[[str, str, AskingChild | None], Awaitable[str]]


class QuestionUnknown(LookupError):
    """No open question of this id for this caller (another key's is not told apart)."""


class AnswerTooLong(ValueError):
    """An answer past `[limits] max_answer_chars`."""


@dataclass(slots=True)
class OpenQuestion:
    """An `ask_user` question on a running task, open until answered, withdrawn or late."""

    id: str
    task_id: str
    owner: str
    future: asyncio.Future[tuple[str, Answerer]] = field(repr=False)
    deadline: float = 0.0  # moved on by a watcher's presence, up to `latest`
    window: float = 0.0  # seconds each presence gives
    latest: float = 0.0  # the deadline never goes past this

    async def answered(self) -> tuple[str, Answerer]:
        """The answer, or TimeoutError once the deadline passed with nobody present since."""
        while True:
            try:
                left = self.deadline - time.time()
                return await asyncio.wait_for(asyncio.shield(self.future), left)
            except TimeoutError:
                if self.deadline <= time.time():
                    raise


class QuestionDesk:
    """Open `ask_user` questions across all tasks; the pools' `ask_user` handler."""

    def __init__(
        self,
        conversations: Conversations,
        remote: RemoteAsk | None,
        deadline_seconds: float,
        max_answer_chars: int,
        max_wait_seconds: float = 3600.0,
    ) -> None:
        self.conversations = conversations
        self.remote = remote  # the remote ACP watchers (remote/relay.py), if any
        self.deadline_seconds = deadline_seconds
        self.max_answer_chars = max_answer_chars
        self.max_wait_seconds = max_wait_seconds  # however long someone watches
        self._open: dict[str, OpenQuestion] = {}

    async def ask_user(
        self, session_id: str, question: str, child: AskingChild | None = None
    ) -> str:
        """The agent's question about `session_id` (a child's: its root's, naming it)."""
        conv = self.conversations.live_session(session_id)
        turn = conv.turn if conv is not None else None
        if turn is None or turn.done.is_set():
            return await self._remote_only(session_id, question, child)
        return await self._ask(turn.log, turn.context.owner, session_id, question, child)

    async def _remote_only(self, session_id: str, question: str, child: AskingChild | None) -> str:
        if self.remote is None:
            return ASK_USER_UNAVAILABLE
        return await self.remote(session_id, question, child)

    async def _ask(
        self,
        task_log: TaskLog,
        owner: str,
        session_id: str,
        question: str,
        child: AskingChild | None,
    ) -> str:
        ask = self._opened(task_log.task_id, owner)
        named = _naming(child)
        frame = {"requestId": ask.id, "question": question, "deadline": ask.deadline}
        frame |= {"window": ask.window, **named}
        task_log.emit(QUESTION_REQUEST, frame)
        remote = self._offer_remote(ask, session_id, question, child)
        recorded = False

        def ended_first() -> None:  # the turn ends while it is open: cancelled, said first
            nonlocal recorded
            recorded = True
            self._open.pop(ask.id, None)
            _record(task_log, ask.id, None, "cancelled", named)

        task_log.until_end(ask.id, ended_first)
        answer: str | None = None
        by: Answerer = "deadline"
        try:
            answer, by = await ask.answered()
        except TimeoutError:
            pass
        except asyncio.CancelledError:  # the turn was cancelled
            by = "cancelled"
            raise
        finally:
            task_log.ended_open(ask.id)
            self._open.pop(ask.id, None)
            if remote is not None:
                remote.cancel()  # withdrawn from the remote clients (reader.py `withdraw`)
            if not recorded:
                _record(task_log, ask.id, answer, by, named)
        return ASK_USER_UNAVAILABLE if answer is None else answer

    def _opened(self, task_id: str, owner: str) -> OpenQuestion:
        now, seconds = time.time(), self.deadline_seconds
        future: asyncio.Future[tuple[str, Answerer]] = asyncio.get_running_loop().create_future()
        ask = OpenQuestion("ask_" + uuid.uuid4().hex[:16], task_id, owner, future)
        ask.deadline, ask.window = now + seconds, seconds
        ask.latest = now + max(seconds, self.max_wait_seconds)
        self._open[ask.id] = ask
        return ask

    def _offer_remote(
        self, ask: OpenQuestion, session_id: str, question: str, child: AskingChild | None
    ) -> asyncio.Task[None] | None:
        """Ask the remote watchers too; a real answer of theirs settles the question."""
        if self.remote is None:
            return None
        ask_remote = self.remote

        async def remote() -> None:
            answer = await ask_remote(session_id, question, child)
            if answer != ASK_USER_UNAVAILABLE and not ask.future.done():
                ask.future.set_result((answer, "acp"))

        return asyncio.get_running_loop().create_task(remote())

    def answer(
        self, request_id: str, answer: str, principal: Principal, *, task_id: str | None = None
    ) -> None:
        """The owner's answer (given `task_id`, on that task's stream). Raises
        QuestionUnknown (none open, or not theirs), AnswerTooLong."""
        ask = self._open.get(request_id)
        if ask is None or ask.future.done():  # none, or answered already: the first wins
            raise QuestionUnknown(f"no open question {request_id!r}")
        if not owns(principal, ask.owner) or task_id not in (None, ask.task_id):
            raise QuestionUnknown(f"no open question {request_id!r}")
        if len(answer) > self.max_answer_chars:
            raise AnswerTooLong(
                f"the answer is {len(answer)} characters; at most {self.max_answer_chars}"
            )
        ask.future.set_result((answer, "human"))

    def present(self, request_id: str, principal: Principal) -> float:
        """The question's owner watches it (the web UI, while it shows it): its deadline
        moves to now plus its window (never back, never past its latest). The deadline."""
        ask = self._open.get(request_id)
        if ask is None or ask.future.done() or not owns(principal, ask.owner):
            raise QuestionUnknown(f"no open question {request_id!r}")
        ask.deadline = max(ask.deadline, min(time.time() + ask.window, ask.latest))
        return ask.deadline

    def open_for(self, task_id: str) -> list[str]:
        """The ids of one task's open questions."""
        return [q.id for q in self._open.values() if q.task_id == task_id]


def _naming(child: AskingChild | None) -> dict[str, str]:
    """A child's question names the child: its session and its title."""
    return {} if child is None else {"childSessionId": child.session_id, "childTitle": child.title}


def _record(
    task_log: TaskLog, request_id: str, answer: str | None, by: Answerer, named: dict[str, str]
) -> None:
    if task_log.finished.is_set():
        return
    task_log.emit(QUESTION_RESPONSE, {"requestId": request_id, "answer": answer, "by": by, **named})


__all__ = [
    "QUESTION_REQUEST",
    "QUESTION_RESPONSE",
    "AnswerTooLong",
    "OpenQuestion",
    "QuestionDesk",
    "QuestionUnknown",
]
