"""The task stream: start a turn (`POST /v1/tasks`), watch it over a WebSocket, answer it.

Frames (JSON objects, one per WebSocket message), each with `seq`, `type`, `at`. A
task's frames are part of its conversation's log (`tasklog.py`): `seq` is the
conversation's number: a later turn's first frame follows the earlier turn's last
(one turn runs at a time, so one task's frames are a contiguous run of the log).

    task-started         taskId, conversationId, agent, sessionId, source, prompt
    task-running         update: the ACP update exactly as the agent sent it (unknown fields too);
                         childSessionId: a child's update (turns.py; on the questions too)
    permission-request   requestId, toolCallId, title, kind, toolCall, options, deadline, window
    permission-response  requestId, toolCallId, title, optionId, outcome, approved, by, reason
    question-request     requestId, question, deadline, childSessionId?, childTitle? (asking.py)
    question-response    requestId, answer (null: none), by, childSessionId?, childTitle?
    task-ended           stopReason, usage (the agent's, or null)
    task-error           error: {message, code}
    ping                 (no seq; not stored) while nothing else happens

`POST /v1/tasks` on a conversation whose turn runs is 409 `session_busy`, unless its body
says `busy: "queue"`: then it waits its turn in the line remote ACP's held v2 prompts wait
in (remote/held.py; another replica's far session passes its v2 clients' prompts so,
remote/far_held.py), answered 201 once its turn has begun, 409 `prompt_cancelled` if a
`session/cancel` drops it first.

A conversation's log also holds `session-update` frames (update: what the agent sent
while no turn ran) that belong to no task: a task stream never sends them (its
conversation's readers get them, `tasklog.py`).

A frame is sent only once it is stored. When the store fails during a turn, the
watchers get a last `task-error` with code `store_failed` and *no* seq (nothing
stored it), and the turn is stopped.

`WS /v1/tasks/{id}/view` is the same watch for the web UI: each frame, from the
first, arrives as the view items it changed (`views.py`: folded once, in Python).

`WS /v1/tasks/{id}/stream?after_seq=N` first sends every stored frame of this task
with `seq > N` (a seq of the conversation's log), then live ones, and closes after
`task-ended` / `task-error`. With API
keys, the handshake carries `Authorization` or offers the key as a subprotocol
(see `auth.py`); a refused one gets the error's HTTP status and body. A
watcher may send `{"type": "permission-response", "requestId", "optionId"}`
(optionId null rejects), `{"type": "question-response", "requestId", "answer"}` (the
agent's ask_user, asking.py), `{"type": "cancel"}` or `{"type": "steer", "text"}` (words for
the running turn, steer.py: answered `{"type": "steered", "outcome": "injected"}`, or an
`error` frame with the code `POST /v1/tasks/{id}/steer` answers). Every task is here, whether it
was started here, by Chat Completions or by the Responses API.

`POST /v1/permissions/{id}` answers a question; `POST /v1/permissions/{id}/presence`
says its owner watches it (the web UI, while it shows it): the deadline moves to now
plus `window` seconds, up to `Limits.permission_wait_max_seconds` after it was asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from fastapi import APIRouter, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse

from agentao.client.content import prompt_text
from agentao.gateway import workdirs
from agentao.gateway.asking_api import answer_from_stream
from agentao.gateway.auth import (
    CLIENT_HEADER,
    WEB_CLIENT,
    WS_PROTOCOL,
    Principal,
    check_owner,
    owns,
)
from agentao.gateway.errors import (
    ApiError,
    BadRequest,
    Conflict,
    NotFound,
    StoreFailed,
)
from agentao.gateway.identifiers import check_id
from agentao.gateway.peers import credentials, error_message
from agentao.gateway.permissions import AnswerRejected, UnknownRequest
from agentao.gateway.questions import open_questions
from agentao.gateway.reasons import Channel
from agentao.gateway.remote.far_held import hold_far_prompt
from agentao.gateway.service import Gateway
from agentao.gateway.sessions import TurnRequest
from agentao.gateway.steer import SteerBody, steer_task
from agentao.gateway.tasklog import STORE_FAILED, TERMINAL, UNSTORED, wire_frame
from agentao.gateway.turn_line import Busy
from agentao.gateway.views import ConversationView
from agentao.store.gateway import IN_FLIGHT_TASK
from agentao.store.gateway_records import TaskEvent, TaskRecord, encode_json

log = logging.getLogger("agentao.gateway")
router = APIRouter()
UNKNOWN_REQUEST = "permission_request_not_found"


# The string fields each kind of ACP content block needs (schema: ContentBlock).
BLOCK_FIELDS: dict[str, tuple[str, ...]] = {
    "text": ("text",),
    "image": ("data", "mimeType"),
    "audio": ("data", "mimeType"),
    "resource_link": ("name", "uri"),
    "resource": (),
}


class TaskBody(msgspec.Struct, kw_only=True):
    agent: str  # an agent name, or `agent/model`
    prompt: str | list[dict[str, Any]]
    conversation_id: str | None = None
    permission_policy: str | None = None
    cwd: str | None = None  # a new conversation's directory, within the agent's (workdirs.py)
    busy: Busy = "reject"  # "queue": held while the conversation's turn runs (far_held.py)


class PermissionAnswer(msgspec.Struct, kw_only=True):
    option_id: str | None = msgspec.field(default=None, name="optionId")


@router.post("/v1/tasks", status_code=201)
async def start_task(request: Request) -> Any:
    gw: Gateway = request.app.state.gateway
    principal = gw.principal(request)
    body = await gw.decode(request, TaskBody)
    choice = gw.resolve_model(principal, body.agent, "agent")
    policy = gw.policy(principal, request, body.permission_policy)
    blocks = prompt_blocks(body.prompt)
    await gw.budgets.check(principal.name)  # a new turn (a running one is never cut short)
    if body.conversation_id:
        check_id(body.conversation_id, "conversation_id")
        conv = await gw.conversations.get(body.conversation_id)
        if conv is None or not owns(principal, conv.record.owner):
            raise NotFound("no such conversation", param="conversation_id")
        if conv.record.agent != choice.agent:
            raise BadRequest(f"the conversation belongs to {conv.record.agent!r}", param="agent")
        workdirs.check_kept(conv.pool.spec, conv.record, body.cwd)
    else:
        spec = gw.pools[choice.agent].spec
        where = workdirs.new_session_params(spec, body.cwd)
        conv = await gw.conversations.create(
            principal.name, choice.agent, "task", session_params=where
        )
    title = prompt_text(blocks).strip()
    if body.busy == "queue":  # nothing suspends between its return and the begin
        await hold_far_prompt(gw, conv, principal.name, request)
    turn = await gw.conversations.begin(
        conv,
        TurnRequest(blocks, title or "(prompt)", principal.name, policy, choice.model, "task"),
    )
    await turn.log.stored.wait()  # so that any replica finds it by the id we answer with
    if turn.log.failure is not None:  # no id to answer with: nobody could read it back
        raise StoreFailed(turn.log.failure.payload["error"]["message"], code=STORE_FAILED)
    return JSONResponse(
        {
            "id": turn.id,
            "object": "task",
            "conversation_id": conv.id,
            "status": "running",
            "stream_url": f"/v1/tasks/{turn.id}/stream",
        },
        status_code=201,
    )


async def _task(gw: Gateway, principal: Principal, task_id: str) -> TaskRecord:
    """The task as stored (settled first if the process that ran it has died since)."""
    check_id(task_id, "task_id")
    live = gw.hub.get(task_id)
    if live is not None:  # just started: its row may be on its way to the store
        await live.stored.wait()
    task = await _stored(gw, principal, task_id)
    elsewhere = task.status == IN_FLIGHT_TASK and live is None  # not running here
    if elsewhere and await gw.recovery.settle_if_dead(task.boot_id):
        task = await _stored(gw, principal, task_id)
    return task


async def _stored(gw: Gateway, principal: Principal, task_id: str) -> TaskRecord:
    task = await gw.store.get_task(task_id)
    conv = await gw.store.get_conversation(task.conversation_id) if task else None
    if task is None or conv is None:
        raise NotFound(f"no task {task_id!r}")
    check_owner(principal, conv.owner, "task")
    return task


def prompt_blocks(prompt: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ACP content blocks to send: text as one block, or blocks whose shape is checked
    here (a block the agent would refuse must not start a turn)."""
    if isinstance(prompt, str):
        prompt = [{"type": "text", "text": prompt}]
    if not prompt:
        raise BadRequest("'prompt' must not be empty", param="prompt")
    for i, block in enumerate(prompt):
        kind = block.get("type")
        if not isinstance(kind, str) or kind not in BLOCK_FIELDS:
            raise BadRequest(
                f"prompt[{i}].type {kind!r} is not one of {sorted(BLOCK_FIELDS)}",
                param=f"prompt[{i}].type",
            )
        for field in BLOCK_FIELDS[kind]:
            if not isinstance(block.get(field), str):
                where = f"prompt[{i}].{field}"
                raise BadRequest(f"{where} must be a string", param=where)
        if kind == "resource" and not isinstance(block.get("resource"), dict):
            raise BadRequest(
                f"prompt[{i}].resource must be an object", param=f"prompt[{i}].resource"
            )
    return prompt


@router.get("/v1/tasks/{task_id}")
async def get_task(task_id: str, request: Request) -> Any:
    gw: Gateway = request.app.state.gateway
    return task_json(await _task(gw, gw.principal(request), task_id))


def task_json(task: TaskRecord) -> dict[str, Any]:
    return {
        "id": task.id,
        "object": "task",
        "conversation_id": task.conversation_id,
        "status": task.status,
        "error": task.error,
        "prompt": task.prompt,
        "created_at": task.created_at,
        "ended_at": task.ended_at,
    }


@router.get("/v1/tasks/{task_id}/events")
async def task_events(task_id: str, request: Request, after_seq: int = 0) -> Any:
    """The stored frames (for a page that renders a past turn without a WebSocket)."""
    gw: Gateway = request.app.state.gateway
    await _task(gw, gw.principal(request), task_id)
    events = await gw.store.task_events(task_id, after_seq)
    return {"object": "list", "data": [e.frame() for e in events]}


@router.get("/v1/permissions")
async def pending_permissions(request: Request) -> Any:
    """The open questions of this caller's tasks, whichever replica runs them: read from
    the logs (questions.py), where every replica's questions are."""
    gw: Gateway = request.app.state.gateway
    principal = gw.principal(request)
    data = await open_questions(gw.store, principal.name)
    # The server's clock, so a page can count down to each deadline whatever its own says.
    return {"object": "list", "data": data, "now": time.time()}


@router.post("/v1/permissions/{request_id}")
async def answer_permission(request_id: str, request: Request) -> Any:
    """A person's answer. On replicas the holder step (holders.py) has already passed it
    to the replica whose turn asks, found from the log: this desk's or nobody's."""
    gw: Gateway = request.app.state.gateway
    principal = gw.principal(request)
    check_id(request_id, "request_id")
    body = await gw.decode(request, PermissionAnswer)
    try:
        gw.desk.answer(request_id, body.option_id, principal, channel=channel_of(request))
    except UnknownRequest as exc:
        raise BadRequest(str(exc), param="requestId", code=UNKNOWN_REQUEST) from None
    except AnswerRejected as exc:
        raise BadRequest(str(exc), param="optionId") from None
    return {"requestId": request_id, "optionId": body.option_id, "accepted": True}


@router.post("/v1/permissions/{request_id}/presence")
async def permission_presence(request_id: str, request: Request) -> Any:
    """Someone (the web UI, while it shows the question) watches it: its deadline moves
    on (`Limits.permission_wait_max_seconds`). The deadline now, on the server's clock."""
    gw: Gateway = request.app.state.gateway
    principal = gw.principal(request)
    check_id(request_id, "request_id")
    try:
        deadline = gw.desk.present(request_id, principal)
    except UnknownRequest as exc:
        raise BadRequest(str(exc), param="requestId", code=UNKNOWN_REQUEST) from None
    return {"requestId": request_id, "deadline": deadline, "now": time.time()}


@router.post("/v1/tasks/{task_id}/cancel")
async def cancel_task(task_id: str, request: Request) -> Any:
    """Cancel a running task, wherever it runs; the task as it is then. A task that is
    over is a 400 saying how it ended."""
    gw: Gateway = request.app.state.gateway
    principal = gw.principal(request)
    task = await _task(gw, principal, task_id)
    turn = gw.conversations.running(task_id)
    if turn is not None:
        turn.cancel()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(turn.done.wait(), gw.limits.cancel_grace_seconds + 5)
        await gw.hub.flush()  # its end is in the store before it is read back
        task = await _stored(gw, principal, task_id)
    elif task.status == IN_FLIGHT_TASK:  # another replica's, one the holder step could not reach
        raise Conflict(
            f"task {task_id!r} runs on another gateway process that cannot be reached",
            code="task_elsewhere",
        )
    else:
        raise BadRequest(f"task {task_id!r} is {task.status}: only a running task can be cancelled")
    return task_json(task)


@router.post("/v1/tasks/{task_id}/steer")
async def steer(task_id: str, request: Request) -> Any:
    """Words for the running turn (steer.py): `{"outcome": "injected"}` or a 409."""
    gw: Gateway = request.app.state.gateway
    principal = gw.principal(request)
    task = await _task(gw, principal, task_id)
    body = await gw.decode(request, SteerBody)
    return await steer_task(gw, task, body.text)


def channel_of(request: Request) -> Channel:
    """Who is answering: the web UI marks its requests (`CLIENT_HEADER`), others are HTTP."""
    return "web" if request.headers.get(CLIENT_HEADER) == WEB_CLIENT else "http"


# ---- the WebSocket ----------------------------------------------------------------------


@router.websocket("/v1/tasks/{task_id}/stream")
async def stream_task(websocket: WebSocket, task_id: str) -> None:
    await _watch(websocket, task_id, None)


@router.websocket("/v1/tasks/{task_id}/view")
async def view_task(websocket: WebSocket, task_id: str) -> None:
    """The same frames, from the first, each sent as the view items it changed
    (`views.py`): what the web UI renders."""
    await _watch(websocket, task_id, ConversationView())


async def _watch(websocket: WebSocket, task_id: str, view: ConversationView | None) -> None:
    gw: Gateway = websocket.app.state.gateway
    try:
        principal = gw.principal(websocket)
        await _task(gw, principal, task_id)
        after = 0 if view is not None else _after_seq(websocket.query_params.get("after_seq"))
    except ApiError as exc:  # refused with the error's status and body
        await exc.send(websocket.scope, websocket.receive, websocket.send)
        return
    # Answer our protocol name, never the key a browser offered next to it.
    offered = websocket.scope.get("subprotocols", ())
    await websocket.accept(subprotocol=WS_PROTOCOL if WS_PROTOCOL in offered else None)
    reader = asyncio.get_running_loop().create_task(_read(websocket, gw, principal, task_id))
    send = _sender(websocket, view)
    try:
        await _send_frames(websocket, gw, task_id, after, send)
        await websocket.close(code=1000)
    except (WebSocketDisconnect, RuntimeError):
        pass  # the watcher left; it can come back with after_seq
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await reader


Send = Callable[[TaskEvent], Awaitable[None]]


def _sender(websocket: WebSocket, view: ConversationView | None) -> Send:
    """Each frame as it is (the task stream), or as the view items it changed."""

    async def frame(event: TaskEvent) -> None:
        # msgspec: an update's frame holds the bytes the agent sent (events.Update.wire)
        await websocket.send_text(encode_json(wire_frame(event)).decode())

    async def items(event: TaskEvent) -> None:
        changed = view.feed(event) if view is not None else []
        message: dict[str, Any] = {"type": "view", "items": changed}
        if event.seq != UNSTORED:
            message["seq"] = event.seq
        await websocket.send_json(message)

    return frame if view is None else items


def _after_seq(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        raise BadRequest("after_seq must be an integer", param="after_seq") from None


async def _send_frames(
    websocket: WebSocket, gw: Gateway, task_id: str, after: int, send: Send
) -> None:
    task_log = gw.hub.get(task_id)
    queue = task_log.subscribe() if task_log is not None else None
    try:
        last = after
        for event in await gw.store.task_events(task_id, after):
            await send(event)
            last = event.seq
            if event.type in TERMINAL:
                return
        if queue is None:  # not running here: ended, or running on another replica
            await _follow_elsewhere(websocket, gw, task_id, last, send)
            return
        while True:
            event = await _next(queue, websocket, gw.limits.ping_interval_seconds)
            if event is None or UNSTORED < event.seq <= last:
                continue
            await send(event)
            last = event.seq
            if event.type in TERMINAL:
                return
    finally:
        if task_log is not None and queue is not None:
            task_log.unsubscribe(queue)


async def _follow_elsewhere(
    websocket: WebSocket, gw: Gateway, task_id: str, last: int, send: Send
) -> None:
    """A task another replica runs: its frames from the store each time that replica
    says it stored some (and at each keep-alive, in case a wake-up was lost), until its
    terminal frame, or its row says it is over."""
    if not gw.replica.shared:
        return  # one gateway alone: what is not running here has ended
    with gw.replica.follow(task_id) as stored:
        while True:
            stored.clear()  # before reading: a wake-up during the read is kept
            task = await gw.store.get_task(task_id)  # before the frames: see below
            for event in await gw.store.task_events(task_id, last):
                await send(event)
                last = event.seq
                if event.type in TERMINAL:
                    return
            # Over, as read *before* its frames were: they include its last ones.
            if task is None or task.status != IN_FLIGHT_TASK:
                return
            try:
                await asyncio.wait_for(stored.wait(), gw.limits.ping_interval_seconds)
            except TimeoutError:
                await websocket.send_json({"type": "ping", "at": time.time()})


async def _next(
    queue: asyncio.Queue[TaskEvent], websocket: WebSocket, ping_interval: float
) -> TaskEvent | None:
    try:
        return await asyncio.wait_for(queue.get(), ping_interval)
    except TimeoutError:
        await websocket.send_json({"type": "ping", "at": time.time()})
        return None


async def _read(websocket: WebSocket, gw: Gateway, principal: Principal, task_id: str) -> None:
    """Frames from the watcher: permission answers, cancel and steering."""
    while True:
        try:
            frame = await websocket.receive_json()
        except (WebSocketDisconnect, RuntimeError):
            return
        except ValueError:
            await websocket.send_json({"type": "error", "message": "frames must be JSON"})
            continue
        kind = frame.get("type") if isinstance(frame, dict) else None
        if kind == "permission-response":
            error = await _answer_from_stream(websocket, gw, principal, task_id, frame)
        elif kind == "question-response":  # the agent's ask_user (asking_api.py)
            error = await _question_from_stream(websocket, gw, principal, task_id, frame)
        elif kind == "cancel":
            error = await _cancel_from_stream(websocket, gw, task_id)
        elif kind == "steer":
            await _steer_from_stream(websocket, gw, principal, task_id, frame.get("text"))
            continue
        else:
            error = f"unknown frame {kind!r}"
        if error is not None:
            await websocket.send_json({"type": "error", "message": error})


async def _answer_from_stream(
    websocket: WebSocket, gw: Gateway, principal: Principal, task_id: str, frame: dict[str, Any]
) -> str | None:
    """A watcher's answer, to this replica's desk or to the one running the task."""
    request_id, option_id = str(frame.get("requestId")), frame.get("optionId")
    try:
        gw.desk.answer(request_id, option_id, principal, task_id=task_id, channel="stream")
        return None
    except UnknownRequest as exc:
        url = await _runs_at(gw, task_id)
        if url is None:
            return str(exc)
    except AnswerRejected as exc:
        return str(exc)
    try:
        check_id(request_id, "requestId")
        path = f"/v1/permissions/{request_id}"
        reply = await gw.peers.call(
            url, "POST", path, credentials(websocket), {"optionId": option_id}
        )
    except ApiError as exc:
        return exc.message
    return None if reply.status_code == 200 else error_message(reply)


async def _question_from_stream(
    websocket: WebSocket, gw: Gateway, principal: Principal, task_id: str, frame: dict[str, Any]
) -> str | None:
    """A watcher's answer to the agent's question: here, or at the replica running it."""
    error = answer_from_stream(gw, principal, task_id, frame)
    url = await _runs_at(gw, task_id) if error is not None else None
    if url is None:
        return error
    try:
        path = f"/v1/questions/{check_id(str(frame.get('requestId')), 'requestId')}"
        body = {"answer": frame.get("answer")}
        reply = await gw.peers.call(url, "POST", path, credentials(websocket), body)
    except ApiError as exc:
        return exc.message
    return None if reply.status_code == 200 else error_message(reply)


async def _cancel_from_stream(websocket: WebSocket, gw: Gateway, task_id: str) -> str | None:
    turn = gw.conversations.running(task_id)
    if turn is not None:
        turn.cancel()
        return None
    url = await _runs_at(gw, task_id)
    if url is None:
        return None  # over already: its task-ended frame is on its way
    try:
        await gw.peers.call(url, "POST", f"/v1/tasks/{task_id}/cancel", credentials(websocket))
    except ApiError as exc:
        return exc.message
    return None


async def _steer_from_stream(
    websocket: WebSocket, gw: Gateway, principal: Principal, task_id: str, text: Any
) -> None:
    """A watcher's words for the turn, here or at the replica running it: a `steered`
    frame with the outcome, or an `error` frame with the code the HTTP route answers."""
    try:
        url = await _runs_at(gw, task_id)
        if url is None:
            answer = await steer_task(gw, await _task(gw, principal, task_id), text)
        else:
            path = f"/v1/tasks/{task_id}/steer"
            reply = await gw.peers.call(url, "POST", path, credentials(websocket), {"text": text})
            if reply.status_code != 200:
                error = {"type": "error", "message": error_message(reply), "code": _code(reply)}
                await websocket.send_json(error)
                return
            answer = reply.json()
    except ApiError as exc:
        await websocket.send_json({"type": "error", "message": exc.message, "code": exc.code})
        return
    await websocket.send_json({"type": "steered", "outcome": answer["outcome"]})


def _code(reply: Any) -> str | None:
    with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
        return str(reply.json()["error"]["code"])
    return None


async def _runs_at(gw: Gateway, task_id: str) -> str | None:
    """Where the task runs, when another live replica runs it."""
    if gw.hub.get(task_id) is not None:
        return None
    task = await gw.store.get_task(task_id)
    if task is None or task.status != IN_FLIGHT_TASK:
        return None
    return await gw.replica.url_of(task.boot_id)


__all__ = ["router"]
