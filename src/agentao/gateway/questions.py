"""Open permission questions, read from the conversations' logs.

Theory of operation. A question to a human is a `permission-request` frame in its
conversation's stored log, and its end (an answer, the deadline, a cancel) is a
`permission-response` frame with the same `requestId` (permissions.py). So the store
says, for every replica at once, which questions are open: those of a running task
with no answer frame yet. Only the caller's own conversations are read (the store
filters by owner): another key's question is never listed, and never found to answer.

`GET /v1/permissions` lists them from here; `POST /v1/permissions/{id}` finds here
which conversation asks (and `POST /v1/questions/{id}` too: the agent's `ask_user`,
asking.py), so the holder step (holders.py) passes the answer to the one
replica that holds it, whose desk takes it. No replica is asked in turn.
"""

from __future__ import annotations

from typing import Any

from agentao.gateway.views import tool_view
from agentao.store.gateway import GatewayStore
from agentao.store.gateway_records import TaskEvent

# As the desk writes them (permissions.py).
QUESTION = "permission-request"
ANSWER = "permission-response"
ASKING = (QUESTION, "question-request")  # what `asking_conversation` finds


async def open_questions(store: GatewayStore, owner: str) -> list[dict[str, Any]]:
    """`owner`'s open questions, as `GET /v1/permissions` lists them, oldest first."""
    return [
        _listed(conversation_id, event)
        for conversation_id, event in _unanswered(await store.running_events(owner))
    ]


async def asking_conversation(store: GatewayStore, owner: str, request_id: str) -> str | None:
    """The conversation of `owner`'s that asks question `request_id` (None: no running
    task of theirs asked it)."""
    for conversation_id, event in await store.running_events(owner):
        # The agent's own questions too (asking.py): their ids never meet permissions'.
        if event.type in ASKING and event.payload.get("requestId") == request_id:
            return conversation_id
    return None


def _unanswered(events: list[tuple[str, TaskEvent]]) -> list[tuple[str, TaskEvent]]:
    answered = {e.payload.get("requestId") for _, e in events if e.type == ANSWER}
    return [
        (conversation_id, e)
        for conversation_id, e in events
        if e.type == QUESTION and e.payload.get("requestId") not in answered
    ]


def _listed(conversation_id: str, event: TaskEvent) -> dict[str, Any]:
    question = event.payload
    tool = tool_view(question["toolCall"])  # folded here: the web UI's card draws it
    return {"taskId": event.task_id, "conversationId": conversation_id, **question, "tool": tool}


__all__ = ["asking_conversation", "open_questions"]
