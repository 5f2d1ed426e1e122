"""Past conversations, as a person manages them: listed, searched, renamed, deleted.

    GET    /v1/conversations?q=TEXT           newest activity first; `q`: in a title or a prompt
    GET    /v1/conversations/{id}             one conversation
    POST   /v1/conversations/{id}  {title}    rename (the agent's later titles keep off it)
    DELETE /v1/conversations/{id}             with its tasks, frames and responses; 409 mid-turn
    GET    /v1/conversations/{id}/tasks       its turns, oldest first
    GET    /v1/conversations/{id}/view        its turns folded into keyed items (`views.py`),
                                              with `cwd` (where its session works) and
                                              `mode` (its session's, when known)
    POST   /v1/conversations/{id}/acp  {method, params, protocol}   a remote client's
           session call (v2: `session/set_config_option`, `tool_call/cancel`,
           `terminal/cancel`; v1, with `protocol: 1`: `session/set_mode`,
           `session/set_config_option`) another replica passes on to the one holding the
           session (remote/far.py); answered `{result}` or `{error}`, JSON-RPC's members,
           as the client's own replica would answer it; with `session/load` or
           `session/resume`, what a client opening the session would be answered, nothing
           attached or replayed (remote/far_open.py); with `session/cancel`, the
           session's running turn and the prompts held for other replicas, or (naming
           one of its children) that child alone (remote/far_held.py)

Only the owner sees a conversation (another key's is a 404, as everywhere), and only
conversations of agents the key may use. Titles are short and never raw JSON (`titles.py`).
"""

from __future__ import annotations

from typing import Any

import msgspec
from fastapi import APIRouter, Request

from agentao.gateway.agent_protocol import current_mode
from agentao.gateway.auth import Principal, owns
from agentao.gateway.config import Limits
from agentao.gateway.errors import BadRequest, NotFound
from agentao.gateway.identifiers import check_id
from agentao.gateway.remote.bridge_calls import held_call
from agentao.gateway.remote.far_held import CANCEL, held_cancel
from agentao.gateway.remote.far_open import OPEN_METHODS, held_open
from agentao.gateway.service import Gateway
from agentao.gateway.sessions import LiveConversation
from agentao.gateway.titles import person_title, short_title
from agentao.gateway.views import conversation_frames, fold
from agentao.gateway.workdirs import session_cwd
from agentao.store.gateway import IN_FLIGHT_TASK
from agentao.store.gateway_records import Conversation

router = APIRouter()


class Rename(msgspec.Struct, kw_only=True):
    title: str


class SessionCall(msgspec.Struct, kw_only=True):
    method: str
    params: dict[str, Any]
    protocol: int = 2  # the ACP version of the client the call is from


@router.get("/v1/conversations")
async def list_conversations(request: Request, q: str | None = None) -> Any:
    gw: Gateway = request.app.state.gateway
    principal = gw.principal(request)
    query = _query(q, gw.limits)
    convs = await gw.store.list_conversations(principal.name, gw.limits.conversations_listed, query)
    data = [conversation_json(c, gw.limits) for c in convs if _may_use(principal, c)]
    return {"object": "list", "data": data}


@router.get("/v1/conversations/{conversation_id}")
async def get_conversation(conversation_id: str, request: Request) -> Any:
    gw: Gateway = request.app.state.gateway
    record = await _owned(gw, gw.principal(request), conversation_id)
    return conversation_json(record, gw.limits)


@router.post("/v1/conversations/{conversation_id}")
async def rename_conversation(conversation_id: str, request: Request) -> Any:
    gw: Gateway = request.app.state.gateway
    principal = gw.principal(request)
    body = await gw.decode(request, Rename)
    title = _title(body.title, gw.limits)
    conv = await _live(gw, principal, conversation_id)
    await gw.conversations.rename(conv, title)
    return conversation_json(conv.record, gw.limits)


@router.delete("/v1/conversations/{conversation_id}")
async def delete_conversation(conversation_id: str, request: Request) -> Any:
    gw: Gateway = request.app.state.gateway
    conv = await _live(gw, gw.principal(request), conversation_id)
    await gw.conversations.delete(conv)
    return {"id": conversation_id, "object": "conversation.deleted", "deleted": True}


@router.post("/v1/conversations/{conversation_id}/acp", include_in_schema=False)
async def session_call(conversation_id: str, request: Request) -> Any:
    """A remote v2 client's session call on the conversation, held here (holders.py passes
    the request on to the holder, as it came, when another replica holds it)."""
    gw: Gateway = request.app.state.gateway
    principal = gw.principal(request)
    body = await gw.decode(request, SessionCall)
    conv = await _live(gw, principal, conversation_id)
    session = await gw.conversations.bind(conv)
    spec = gw.conversations.pool(conv.record.agent).spec
    if body.method in OPEN_METHODS:  # what a client opening it here would be answered
        return held_open(principal, spec, session, body.method)
    if body.method == CANCEL:  # the session's turn and held prompts, or one child (far_held)
        return await held_cancel(gw, conv, body.params.get("sessionId"))
    params = {**body.params, "sessionId": session.id}  # this conversation's, whatever it said
    return await held_call(principal, spec, session, (body.method, params), body.protocol)


@router.get("/v1/conversations/{conversation_id}/tasks")
async def conversation_tasks(conversation_id: str, request: Request) -> Any:
    gw: Gateway = request.app.state.gateway
    await _owned(gw, gw.principal(request), conversation_id)
    tasks = await gw.store.list_tasks(conversation_id)
    data = [
        {
            "id": t.id,
            "status": t.status,
            "prompt": t.prompt,
            "created_at": t.created_at,
            "ended_at": t.ended_at,
        }
        for t in tasks
    ]
    return {"object": "list", "data": data}


@router.get("/v1/conversations/{conversation_id}/view")
async def conversation_view(conversation_id: str, request: Request) -> Any:
    """What the web UI draws: the conversation's stored frames folded once (`views.py`)."""
    gw: Gateway = request.app.state.gateway
    record = await _owned(gw, gw.principal(request), conversation_id)
    tasks = await gw.store.list_tasks(conversation_id)
    view = fold(await conversation_frames(gw.store, conversation_id))
    running = [t.id for t in tasks if t.status == IN_FLIGHT_TASK]
    live = await gw.conversations.get(conversation_id)
    return {
        "object": "view",
        "items": view.items(),
        "running": running,
        "cwd": session_cwd(live.pool.spec, record) if live is not None else None,
        "mode": view.session.mode or _live_mode(live),
    }


def _live_mode(live: LiveConversation | None) -> str | None:
    """The mode its session opened in (the agent says so in its answer), while it is open
    here; a later change is in the log (`current_mode_update`)."""
    session = live.session if live is not None else None
    return current_mode(session.response) if session is not None else None


def conversation_json(c: Conversation, limits: Limits) -> dict[str, Any]:
    # Titles stored before titles were made short are shortened when shown.
    title = c.title if c.title_by == "person" else short_title(c.title, limits.title_chars)
    return {
        "id": c.id,
        "object": "conversation",
        "agent": c.agent,
        "title": title or None,
        "title_by": c.title_by or "prompt",
        "source": c.source,
        "turn_count": c.turn_count,
        "created_at": c.created_at,
        "updated_at": c.updated_at,
    }


async def _owned(gw: Gateway, principal: Principal, conversation_id: str) -> Conversation:
    """The stored conversation, if `principal` may see it (else 404, whoever owns it)."""
    check_id(conversation_id, "conversation_id")
    record = await gw.store.get_conversation(conversation_id)
    if record is None or not owns(principal, record.owner) or not _may_use(principal, record):
        raise NotFound("no such conversation", param="conversation_id")
    return record


async def _live(gw: Gateway, principal: Principal, conversation_id: str) -> LiveConversation:
    await _owned(gw, principal, conversation_id)
    conv = await gw.conversations.get(conversation_id)
    if conv is None:  # its agent is no longer configured here
        raise NotFound("no such conversation (its agent is not served here)")
    return conv


def _may_use(principal: Principal, c: Conversation) -> bool:
    return principal.agents is None or c.agent in principal.agents


def _title(value: str, limits: Limits) -> str:
    try:
        return person_title(value, limits.max_title_chars)
    except ValueError as exc:
        raise BadRequest(str(exc), param="title") from None


def _query(q: str | None, limits: Limits) -> str | None:
    query = (q or "").strip()
    if len(query) > limits.max_search_chars:
        raise BadRequest(f"q is longer than {limits.max_search_chars} characters", param="q")
    return query or None


__all__ = ["conversation_json", "router"]
