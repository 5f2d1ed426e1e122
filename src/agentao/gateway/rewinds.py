"""Rewind a conversation's files: back to before one of its turns.

    POST /v1/conversations/{id}/rewind  {before_task, dry_run?, force?}  -> 200

The gateway passes the agent's `_session/rewind` through (server/rewind.py), for the
files only: `before_task` names one of the conversation's tasks, and the files the agent
changed from that turn on go back to what they were before it. The answer is the agent's:
`changes` (each file's `restore`, `delete`, `unchanged`, `conflict`, `not_restorable` or
`refused`, with a `reason`), `files_changed`, `notes`, and `can_rewind`: false when a file
changed outside the agent since, in which case nothing was done (`error` names the files)
unless `force` is true. `dry_run` only says what would change.

The conversation itself is never cut here: its log is the record of what happened. To go on
from before that turn, the page forks the conversation there (`POST .../fork`, forks.py),
as edit and resend does; together they are "rewind to here".

The task is found among the agent's turns as forks.py finds it: the nearest stored turn at
or before the task's index with the task's prompt (`_session/rewind_points`), since the
agent keeps no turn for a task whose process died. Only the owner rewinds (404 otherwise);
an unknown task is 404; an agent that does not name `_session/rewind` in `initialize`'s
`_meta["_agentao.cn/extensions"]` is 501 `rewind_unsupported`; a task the agent kept no
turn for is 409 `rewind_point_not_found`; a turn running is 409 `session_busy`; a
session whose mode writes nothing (a read-only key's ceiling) is 403 `read_only`.
"""

from __future__ import annotations

from typing import Any

import msgspec
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from agentao.client import AgentError, ClientError
from agentao.client.rewind import REWIND_METHOD, REWIND_POINTS_METHOD, read_points
from agentao.gateway.conversations_api import _live
from agentao.gateway.errors import AgentFailed, Conflict, Forbidden, NotFound, NotImplementedApi
from agentao.gateway.identifiers import check_id
from agentao.gateway.service import Gateway
from agentao.gateway.sessions import LiveConversation

__all__ = ["router"]

router = APIRouter()
EXTENSIONS_META_KEY = "_agentao.cn/extensions"  # server/capabilities.py: the agent's list
PROMPT_MATCH_CHARS = 2000  # what identifies a turn by its prompt (server/fork.py)


class RewindBody(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    before_task: str
    dry_run: bool = False
    force: bool = False


@router.post("/v1/conversations/{conversation_id}/rewind")
async def rewind_conversation(conversation_id: str, request: Request) -> Any:
    gw: Gateway = request.app.state.gateway
    principal = gw.principal(request)
    body = await gw.decode(request, RewindBody)
    check_id(body.before_task, "before_task")
    conv = await _live(gw, principal, conversation_id)
    _check_rewinds(conv)
    index, prompt = await _task(gw, conv, body.before_task)
    session = await gw.conversations.bind(conv)
    timeout = session.channel.timeouts.request
    try:
        points = await session.channel.call_raw(
            REWIND_POINTS_METHOD, {"sessionId": session.id}, timeout
        )
        params = {
            "sessionId": session.id,
            "beforeTurn": _turn_of(read_points(points), index, prompt),
            "mode": "files",
            "dryRun": body.dry_run,
            "force": body.force,
        }
        answer = await session.channel.call_raw(REWIND_METHOD, params, timeout)
    except AgentError as exc:
        raise _refused(exc) from None
    except ClientError as exc:
        raise AgentFailed(f"the agent could not rewind: {exc}") from None
    return JSONResponse(_answer(answer, body))


def _check_rewinds(conv: LiveConversation) -> None:
    init = conv.pool.initialize_result or {}
    named = (init.get("_meta") or {}).get(EXTENSIONS_META_KEY) if isinstance(init, dict) else None
    methods = {e.get("method") for e in named or () if isinstance(e, dict)}
    if REWIND_METHOD not in methods or REWIND_POINTS_METHOD not in methods:
        raise NotImplementedApi(
            f"agent {conv.record.agent!r} cannot rewind files", code="rewind_unsupported"
        )


async def _task(gw: Gateway, conv: LiveConversation, task_id: str) -> tuple[int, str]:
    tasks = await gw.store.list_tasks(conv.id)
    index = next((i for i, t in enumerate(tasks) if t.id == task_id), None)
    if index is None:
        raise NotFound("no such task in this conversation", param="before_task")
    return index, tasks[index].prompt


def _turn_of(points: list[Any], index: int, prompt: str) -> int:
    """The agent's turn for the task: the nearest at or before `index` with its prompt."""
    wanted = prompt.strip()[:PROMPT_MATCH_CHARS]
    for point in sorted(points, key=lambda p: p.index, reverse=True):
        if point.index <= index and point.text.strip()[:PROMPT_MATCH_CHARS] == wanted:
            return int(point.index)
    raise Conflict(
        "the agent kept no turn for that task (it ended before the agent finished it)",
        param="before_task",
        code="rewind_point_not_found",
    )


def _refused(exc: AgentError) -> Exception:
    reason = exc.data.get("reason") if isinstance(exc.data, dict) else None
    if reason == "read_only":
        return Forbidden("this conversation's agent session may not write files", code="read_only")
    if reason == "busy":
        return Conflict("a turn is running in this conversation", code="session_busy")
    if exc.code == -32601:
        return NotImplementedApi("the agent cannot rewind files", code="rewind_unsupported")
    return AgentFailed(f"the agent could not rewind: {exc.message}")


def _answer(answer: Any, body: RewindBody) -> dict[str, Any]:
    files = answer.get("files") if isinstance(answer, dict) else None
    files = files if isinstance(files, dict) else {}
    data = {
        "before_task": body.before_task,
        "dry_run": body.dry_run,
        "can_rewind": files.get("canRewind") is not False,
        "changes": [c for c in files.get("changes") or () if isinstance(c, dict)],
        "files_changed": [p for p in files.get("filesChanged") or () if isinstance(p, str)],
        "notes": [n for n in files.get("notes") or () if isinstance(n, str)],
    }
    if isinstance(files.get("error"), str):
        data["error"] = files["error"]
    return data
