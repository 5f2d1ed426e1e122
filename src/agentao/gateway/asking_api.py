"""Answering the agent's `ask_user` questions: `POST /v1/questions/{id}` and the WebSocket.

`GET /v1/questions` lists the caller's open questions (from the logs: every replica's);
`POST /v1/questions/{id}` {"answer": "..."} answers an open question (asking.py) of the
caller's own tasks: a question of another key's, or none open, is a 404
(`question_not_found`: the two are not told apart); an answer past
`[limits] max_answer_chars` is a 413 (`answer_too_long`). `POST
/v1/questions/{id}/presence`: its owner watches it, the deadline moves on (asking.py). A route of its own rather than
`/v1/permissions/{id}`: that one takes an option out of a list, this one free text, and
a client of either is never surprised by the other's shape.

On a task's WebSocket a watcher sends `{"type": "question-response", "requestId",
"answer"}`; `answer_from_stream` is its handler (tasks.py), an error its words.
"""

from __future__ import annotations

import time
from typing import Any

import msgspec
from fastapi import APIRouter, Request

from agentao.gateway.asking import (
    QUESTION_REQUEST,
    QUESTION_RESPONSE,
    AnswerTooLong,
    QuestionUnknown,
)
from agentao.gateway.auth import Principal
from agentao.gateway.errors import NotFound, PayloadTooLarge
from agentao.gateway.identifiers import check_id
from agentao.gateway.service import Gateway

router = APIRouter()
QUESTION_NOT_FOUND = "question_not_found"
ANSWER_TOO_LONG = "answer_too_long"


class QuestionAnswer(msgspec.Struct, kw_only=True):
    answer: str


@router.get("/v1/questions")
async def open_questions(request: Request) -> Any:
    """The caller's open `ask_user` questions, whichever replica runs their tasks: read
    from the logs, oldest first, with the server's `now` (deadlines are its times)."""
    gw: Gateway = request.app.state.gateway
    principal = gw.principal(request)
    events = await gw.store.running_events(principal.name)
    ended = {e.payload.get("requestId") for _, e in events if e.type == QUESTION_RESPONSE}
    data = [
        {"taskId": e.task_id, "conversationId": conversation_id, **e.payload}
        for conversation_id, e in events
        if e.type == QUESTION_REQUEST and e.payload.get("requestId") not in ended
    ]
    return {"object": "list", "data": data, "now": time.time()}


@router.post("/v1/questions/{request_id}")
async def answer_question(request_id: str, request: Request) -> Any:
    """The owner's answer to the agent's question; the first answer wins."""
    gw: Gateway = request.app.state.gateway
    principal = gw.principal(request)
    check_id(request_id, "request_id")
    body = await gw.decode(request, QuestionAnswer)
    try:
        gw.questions.answer(request_id, body.answer, principal)
    except QuestionUnknown as exc:
        raise NotFound(str(exc), param="requestId", code=QUESTION_NOT_FOUND) from None
    except AnswerTooLong as exc:
        raise PayloadTooLarge(str(exc), param="answer", code=ANSWER_TOO_LONG) from None
    return {"requestId": request_id, "accepted": True}


@router.post("/v1/questions/{request_id}/presence")
async def question_presence(request_id: str, request: Request) -> Any:
    """Its owner watches the question (the web UI, while it shows it): the deadline moves
    on (`[limits] permission_wait_max_seconds` at most). The deadline, on the server's clock."""
    gw: Gateway = request.app.state.gateway
    principal = gw.principal(request)
    check_id(request_id, "request_id")
    try:
        deadline = gw.questions.present(request_id, principal)
    except QuestionUnknown as exc:
        raise NotFound(str(exc), param="requestId", code=QUESTION_NOT_FOUND) from None
    return {"requestId": request_id, "deadline": deadline, "now": time.time()}


def answer_from_stream(
    gw: Gateway, principal: Principal, task_id: str, frame: dict[str, Any]
) -> str | None:
    """A watcher's answer on the task's stream; None, or what was wrong with it."""
    request_id, answer = str(frame.get("requestId")), frame.get("answer")
    if not isinstance(answer, str):
        return "a question-response frame needs a string answer"
    try:
        gw.questions.answer(request_id, answer, principal, task_id=task_id)
    except (QuestionUnknown, AnswerTooLong) as exc:
        return str(exc)
    return None


__all__ = [
    "ANSWER_TOO_LONG",
    "QUESTION_NOT_FOUND",
    "QuestionAnswer",
    "answer_from_stream",
    "router",
]
