"""A person's words for a running task, from the task stream or over HTTP: steering.

`POST /v1/tasks/{id}/steer {"text"}` and the task stream's `{"type": "steer", "text"}`
frame (tasks.py) both come here, once the caller was found to own the task. The words
go to the running turn's agent through `Session.steer()` (`_session/steering`), never
as a turn of their own: the turn is the gateway's, already counted and logged. The
agent's `user_message_chunk` for them arrives inside the turn, so they land in the
conversation's log where the agent read them, and every reader sees them.

Answers: `{"outcome": "injected"}`; 409 `steering_unsupported` when the agent does not
advertise steering (send the words as the next prompt instead); 409 `task_not_running`
when no turn of the task runs (ended, or ended while the words travelled); 409
`task_elsewhere` when another replica runs it and cannot be reached; 400 for empty or
non-text words; 413 `steering_too_large` beyond `Limits.max_request_bytes` (the bound of
any prompt sent over HTTP). An agent that fails the request: 502 `agent_error`.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from agentao.client import ClientError, SteeringUnsupported
from agentao.gateway.errors import AgentFailed, BadRequest, Conflict, PayloadTooLarge
from agentao.gateway.service import Gateway
from agentao.store.gateway import IN_FLIGHT_TASK
from agentao.store.gateway_records import TaskRecord

INJECTED: Final = "injected"
STEERING_UNSUPPORTED: Final = "steering_unsupported"
TASK_NOT_RUNNING: Final = "task_not_running"


class SteerBody(msgspec.Struct, kw_only=True):
    text: str


def steering_text(text: Any, max_bytes: int) -> str:
    """The words, checked: a non-empty string of at most `max_bytes` UTF-8 bytes."""
    if not isinstance(text, str) or not text.strip():
        raise BadRequest("'text' must be a non-empty string", param="text", code="invalid_value")
    if len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise PayloadTooLarge(
            f"'text' is above {max_bytes} bytes (max_request_bytes)",
            param="text",
            code="steering_too_large",
        )
    return text


async def steer_task(gw: Gateway, task: TaskRecord, text: Any) -> dict[str, Any]:
    """Send `text` to the task's running turn (the caller owns `task`); the answer."""
    words = steering_text(text, gw.limits.max_request_bytes)
    turn = gw.conversations.running(task.id)
    if turn is None:
        raise _not_here(task)
    if not turn.session.steerable:
        raise _unsupported(task.id)
    try:
        outcome = await turn.session.steer(words, idle_behavior="promptRequired")
    except SteeringUnsupported:
        raise _unsupported(task.id) from None
    except ClientError as exc:
        raise AgentFailed(f"the agent refused the steering: {exc}", code="agent_error") from None
    if outcome != INJECTED:  # the turn ended meanwhile: nothing was done with the words
        raise Conflict(f"task {task.id!r} is no longer running", code=TASK_NOT_RUNNING)
    return {"id": task.id, "object": "task.steering", "outcome": outcome}


def _not_here(task: TaskRecord) -> Conflict:
    if task.status == IN_FLIGHT_TASK:  # another replica's, one the holder step could not reach
        return Conflict(
            f"task {task.id!r} runs on another gateway process that cannot be reached",
            code="task_elsewhere",
        )
    return Conflict(
        f"task {task.id!r} is {task.status}: only a running task can be steered",
        code=TASK_NOT_RUNNING,
    )


def _unsupported(task_id: str) -> Conflict:
    return Conflict(
        f"task {task_id!r}: its agent does not take words while it works "
        "(no steering); send them as the next prompt",
        code=STEERING_UNSUPPORTED,
    )


__all__ = [
    "INJECTED",
    "STEERING_UNSUPPORTED",
    "TASK_NOT_RUNNING",
    "SteerBody",
    "steer_task",
    "steering_text",
]
