"""Edit and resend: a new conversation forked from an earlier prompt of another.

    POST /v1/conversations/{id}/fork  {before_task}   -> 201, the new conversation

`before_task` names one of the conversation's tasks (a turn: one prompt and what answered
it). The agent forks the conversation's session before that turn (`session/fork` with
`_meta["agentao.cn/beforeTurn"]` = how many of the conversation's tasks came before it:
server/fork.py), so the fork's model context holds exactly the earlier turns; the new
conversation carries the forked session from its start, on the same agent, where the
source's session works, and the source is untouched. The page then sends the edited
prompt as the new conversation's first task.

The agent's count of turns may run behind the conversation's tasks (a task whose agent
process died mid-turn left no turn there), so the task's prompt goes along too
(`_meta["agentao.cn/beforePrompt"]`): the agent forks before the nearest turn at or before
that count with that prompt. A task the agent has no turn for is a 409
`fork_point_not_found`.

Only the owner forks (another key's conversation is a 404, as everywhere); an agent that
does not advertise forking at a turn (`capabilities.session.fork._meta` naming the key: a
fork at the end only would silently keep the turns being edited) is a 501
`fork_unsupported`. (A task still running, or left running by a replica that died, has
no turn at the agent yet: the prompt search skips it as it skips a task whose process
died.) The new conversation's own log starts empty: the turns before the fork are in its
agent session (the model sees them), not copied into its log.

`fork_after_task` is the same fork for the Responses API: a `previous_response_id` naming
an older response of a conversation continues a new conversation forked after that
response's turn (gateway/openai_responses.py).
"""

from __future__ import annotations

import contextlib
from typing import Any

import msgspec
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from agentao.client import AgentError, ClientError
from agentao.gateway.conversations_api import _live, conversation_json
from agentao.gateway.errors import AgentFailed, Conflict, NotFound, NotImplementedApi
from agentao.gateway.identifiers import check_id
from agentao.gateway.service import Gateway
from agentao.gateway.sessions import LiveConversation

router = APIRouter()
BEFORE_TURN_KEY = "agentao.cn/beforeTurn"  # server/capabilities.py: the agent's keys
BEFORE_PROMPT_KEY = "agentao.cn/beforePrompt"
METHOD_NOT_FOUND = -32601


class ForkBody(msgspec.Struct, kw_only=True):
    before_task: str


@router.post("/v1/conversations/{conversation_id}/fork")
async def fork_conversation(conversation_id: str, request: Request) -> Any:
    gw: Gateway = request.app.state.gateway
    principal = gw.principal(request)
    body = await gw.decode(request, ForkBody)
    check_id(body.before_task, "before_task")
    conv = await _live(gw, principal, conversation_id)
    _check_forks_at_a_turn(conv)
    turns_before, prompt = await _fork_point(gw, conv, body.before_task)
    fork = await _forked_conversation(gw, conv, turns_before, prompt)
    data = conversation_json(fork.record, gw.limits)
    data["forked_from"] = {"conversation_id": conv.id, "before_task": body.before_task}
    return JSONResponse(data, status_code=201)


async def fork_after_task(gw: Gateway, conv: LiveConversation, index: int) -> LiveConversation:
    """A new conversation on the agent's fork of `conv`'s session after its task `index`
    (0-based), i.e. before the task that followed it; `conv` is untouched. The Responses
    API's `previous_response_id` naming an older response of a conversation."""
    _check_forks_at_a_turn(conv)
    tasks = await gw.store.list_tasks(conv.id)
    if not 0 <= index < len(tasks) - 1:
        raise Conflict("no task follows that one in its conversation", code="fork_point_not_found")
    return await _forked_conversation(gw, conv, index + 1, tasks[index + 1].prompt)


async def _forked_conversation(
    gw: Gateway, conv: LiveConversation, turns_before: int, prompt: str
) -> LiveConversation:
    """The new conversation on the agent's fork of `conv`'s session before that turn."""
    session_id = await _fork_session(gw, conv, turns_before, prompt)
    record = conv.record
    return await gw.conversations.create(
        record.owner,
        record.agent,
        record.source,
        session_id=session_id,
        session_params=record.session_params,
    )


def _check_forks_at_a_turn(conv: LiveConversation) -> None:
    """501 unless the agent's `initialize` advertised forking at an earlier turn."""
    init = conv.pool.initialize_result or {}
    caps = (init.get("agentCapabilities") or {}).get("sessionCapabilities") or {}
    fork = caps.get("fork") if isinstance(caps, dict) else None
    meta = fork.get("_meta") if isinstance(fork, dict) else None
    if not isinstance(meta, dict) or BEFORE_TURN_KEY not in meta:
        raise NotImplementedApi(
            f"agent {conv.record.agent!r} cannot fork a session at an earlier prompt",
            code="fork_unsupported",
        )


async def _fork_point(gw: Gateway, conv: LiveConversation, task_id: str) -> tuple[int, str]:
    """How many of the conversation's tasks came before `task_id`, and its prompt."""
    tasks = await gw.store.list_tasks(conv.id)
    index = next((i for i, t in enumerate(tasks) if t.id == task_id), None)
    if index is None:
        raise NotFound("no such task in this conversation", param="before_task")
    return index, tasks[index].prompt


async def _fork_session(gw: Gateway, conv: LiveConversation, turns_before: int, prompt: str) -> str:
    """The agent's fork of the conversation's session before the turn of `prompt`, at most
    `turns_before` turns in: its id. The fork is closed on the agent at once; the new
    conversation's first turn loads it."""
    session = await gw.conversations.bind(conv)
    params: dict[str, Any] = {
        "sessionId": session.id,
        "cwd": session.cwd,
        "mcpServers": [],
        "_meta": {BEFORE_TURN_KEY: turns_before, BEFORE_PROMPT_KEY: prompt},
    }
    timeout = session.channel.timeouts.request
    try:
        answer = await session.channel.call_raw("session/fork", params, timeout)
    except AgentError as exc:
        if exc.code == METHOD_NOT_FOUND:
            raise NotImplementedApi(
                f"agent {conv.record.agent!r} cannot fork sessions", code="fork_unsupported"
            ) from None
        if isinstance(exc.data, dict) and exc.data.get("reason") == "no_such_turn":
            raise Conflict(
                "the agent kept no turn for that task (it ended before the agent finished "
                "it); edit a prompt the agent answered",
                param="before_task",
                code="fork_point_not_found",
            ) from None
        raise AgentFailed(f"the agent could not fork the session: {exc.message}") from None
    except ClientError as exc:
        raise AgentFailed(f"the agent could not fork the session: {exc}") from None
    fork_id = answer.get("sessionId") if isinstance(answer, dict) else None
    if not isinstance(fork_id, str) or not fork_id:
        raise AgentFailed("the agent's session/fork answer names no sessionId")
    with contextlib.suppress(ClientError):  # left open, it ends with the agent's process
        await session.channel.call_raw("session/close", {"sessionId": fork_id}, timeout)
    return fork_id


__all__ = ["fork_after_task", "router"]
