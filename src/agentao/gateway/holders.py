"""The holder step: which replica holds the conversation a request names, found before
any route runs.

Theory of operation. On a shared store a live conversation belongs to one replica at a
time (its lease, replicas.py). `HolderRouting` is a pure ASGI middleware, the innermost
(Guard, CORS and BodyLimit have judged the request). For each route that names a
conversation (`NAMED`, one row per route) it reads only the name: the id in the path,
one body field decoded alone with msgspec (the raw bytes are kept), a header, or the
stored response, task or permission question an id points to (a question is a frame
of its conversation's log: questions.py). When another live replica holds that
conversation, the request goes there as it came (`Peers.pass_on`: forwarded with the
caller's credentials, or a 307 with `cross_replica = "redirect"`), and no route runs
here: nothing is parsed, hashed, or refused twice. A conversation that is free, ours,
or whose holder went quiet is served here, and the route claims its lease.

What is not passed on: reads the shared store answers as well as the holder (GET a
response, a task, a conversation, its tasks, the task stream); a request that names no
conversation or names it badly (the route answers it, 400 or 404, as it would anyway);
a caller the gateway does not authenticate (401 here, not a database lookup on its
behalf); and Chat Completions without an explicit key, whose conversation is named only
by its transcript's hash: that route asks `Replica.holder_url` itself once it has hashed
(openai_chat.py). Another replica may take the lease between this step and the turn:
the claim then answers 503 `TakenElsewhere`, and the client's retry is passed on here.

On SQLite (one gateway, `Replica.shared` false) every request goes straight through.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import msgspec
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentao.gateway.auth import Principal, owns
from agentao.gateway.errors import ApiError
from agentao.gateway.identifiers import check_id, check_session_key
from agentao.gateway.openai_chat import SESSION_HEADER
from agentao.gateway.questions import asking_conversation
from agentao.gateway.service import Gateway
from agentao.gateway.sessions import CONVERSATION_PREFIX, keyed_conversation_id

log = logging.getLogger("agentao.gateway")
S = TypeVar("S", bound=msgspec.Struct)


class _PreviousResponse(msgspec.Struct):
    previous_response_id: str | None = None


class _ConversationField(msgspec.Struct):
    conversation_id: str | None = None


class _SessionKey(msgspec.Struct):
    x_session_id: str | None = None


@dataclass(frozen=True, slots=True)
class Named:
    """What a request says about its conversation: the path's match, the raw body."""

    gateway: Gateway
    principal: Principal
    request: Request
    match: re.Match[str]
    body: bytes


Namer = Callable[[Named], Awaitable[str | None]]


async def _by_path(named: Named) -> str | None:
    return _checked(named.match["id"])


async def _by_response_in_path(named: Named) -> str | None:
    return await _response_conversation(named.gateway, _checked(named.match["id"]))


async def _by_task_in_path(named: Named) -> str | None:
    task_id = _checked(named.match["id"])
    task = await named.gateway.store.get_task(task_id) if task_id else None
    return task.conversation_id if task is not None else None


async def _by_question_in_path(named: Named) -> str | None:
    """The conversation whose running turn asks this question: read from the caller's
    own logs (questions.py), so another key's question names nothing."""
    request_id = _checked(named.match["id"])
    if request_id is None:
        return None
    return await asking_conversation(named.gateway.store, named.principal.name, request_id)


async def _by_previous_response(named: Named) -> str | None:
    body = _field(named.body, _PreviousResponse)
    previous = body.previous_response_id if body is not None else None
    return await _response_conversation(named.gateway, _checked(previous))


async def _by_conversation_field(named: Named) -> str | None:
    body = _field(named.body, _ConversationField)
    return _checked(body.conversation_id if body is not None else None)


async def _by_session_key(named: Named) -> str | None:
    """The conversation an explicit Chat Completions (or Anthropic Messages) key names
    (as `openai_chat._keyed` finds it): one of the caller's own by id, else the key's
    own conversation."""
    body = _field(named.body, _SessionKey)
    key = body.x_session_id if body is not None else None
    key = key if key is not None else named.request.headers.get(SESSION_HEADER)
    try:
        key = check_session_key(
            key or "", "x_session_id", named.gateway.limits.max_session_key_length
        )
    except ApiError:  # none, or bad: the route answers it
        return None
    if key.startswith(CONVERSATION_PREFIX):
        record = await named.gateway.store.get_conversation(key)
        if record is not None and owns(named.principal, record.owner):
            return key
    return keyed_conversation_id(named.principal.name, key)


# (method, path) -> how the request names its conversation. Writes only: reads are
# answered from the shared store wherever they arrive.
NAMED: tuple[tuple[str, re.Pattern[str], Namer], ...] = (
    ("POST", re.compile(r"/v1/chat/completions"), _by_session_key),
    ("POST", re.compile(r"/v1/messages"), _by_session_key),  # anthropic_messages.py
    ("POST", re.compile(r"/v1/responses"), _by_previous_response),
    ("POST", re.compile(r"/v1/responses/(?P<id>[^/]+)/cancel"), _by_response_in_path),
    ("DELETE", re.compile(r"/v1/responses/(?P<id>[^/]+)"), _by_response_in_path),
    ("POST", re.compile(r"/v1/tasks"), _by_conversation_field),
    ("POST", re.compile(r"/v1/tasks/(?P<id>[^/]+)/cancel"), _by_task_in_path),
    ("POST", re.compile(r"/v1/tasks/(?P<id>[^/]+)/steer"), _by_task_in_path),  # steer.py
    ("POST", re.compile(r"/v1/conversations/(?P<id>[^/]+)"), _by_path),
    ("POST", re.compile(r"/v1/conversations/(?P<id>[^/]+)/acp"), _by_path),
    ("POST", re.compile(r"/v1/conversations/(?P<id>[^/]+)/fork"), _by_path),
    ("POST", re.compile(r"/v1/conversations/(?P<id>[^/]+)/rewind"), _by_path),
    ("DELETE", re.compile(r"/v1/conversations/(?P<id>[^/]+)"), _by_path),
    ("POST", re.compile(r"/v1/permissions/(?P<id>[^/]+)"), _by_question_in_path),
    ("POST", re.compile(r"/v1/permissions/(?P<id>[^/]+)/presence"), _by_question_in_path),
    ("POST", re.compile(r"/v1/questions/(?P<id>[^/]+)"), _by_question_in_path),  # asking_api.py
    ("POST", re.compile(r"/v1/questions/(?P<id>[^/]+)/presence"), _by_question_in_path),
)


def naming(method: str, path: str) -> tuple[Namer, re.Match[str]] | None:
    """How a request to `method path` names its conversation, if it does."""
    for verb, pattern, namer in NAMED:
        if verb == method and (match := pattern.fullmatch(path)):
            return namer, match
    return None


def _checked(value: str | None) -> str | None:
    try:
        return check_id(value, "id") if value else None
    except ApiError:
        return None


def _field(body: bytes, shape: type[S]) -> S | None:
    """The one field `shape` names, decoded alone (every other field is skipped)."""
    try:
        return msgspec.json.decode(body, type=shape)
    except msgspec.DecodeError:  # not JSON, not an object, a wrong type: the route says
        return None


async def _response_conversation(gw: Gateway, response_id: str | None) -> str | None:
    record = await gw.store.get_response(response_id) if response_id else None
    return record.conversation_id if record is not None else None


class HolderRouting:
    """Pure ASGI middleware: a request naming a conversation another live replica holds
    is passed there before any route runs (see the module's docstring)."""

    def __init__(self, app: ASGIApp, gateway: Gateway) -> None:
        self.app = app
        self.gateway = gateway

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = naming(scope["method"], scope["path"]) if scope["type"] == "http" else None
        if found is None or not self.gateway.replica.shared:
            await self.app(scope, receive, send)
            return
        try:
            body = await _read_body(receive)
        except ApiError as exc:  # too large (BodyLimit): refused before any route
            await exc.send(scope, receive, send)
            return
        replay = _replaying(body, receive)
        request = Request(scope, replay)
        holder = await self._holder(request, *found, body)
        if holder is None:
            await self.app(scope, replay, send)
            return
        response = await self.gateway.peers.pass_on(request, holder)
        await response(scope, replay, send)

    async def _holder(
        self, request: Request, namer: Namer, match: re.Match[str], body: bytes
    ) -> str | None:
        """Where the named conversation is live, when another replica holds it."""
        gw = self.gateway
        try:
            principal = gw.principal(request)
        except ApiError:  # the route refuses it (401) without asking the store anything
            return None
        try:
            conversation_id = await namer(Named(gw, principal, request, match, body))
            return await gw.replica.holder_url(conversation_id) if conversation_id else None
        except Exception:  # the store is away: the route meets it too, and says so
            log.warning("could not tell which replica holds %s", request.url.path, exc_info=True)
            return None


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client left: nothing more comes
            return b"".join(chunks)
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """`receive` with the body already read given once more, then the client's own
    messages (its disconnect, which a route watches)."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


__all__ = ["NAMED", "HolderRouting", "naming"]
