"""`/v1/responses`: create (whole, streamed or in the background), retrieve, cancel, delete.

Not streamed unless asked (`stream: true`), so the SDK's plain
`responses.create()` gets one Response object. `previous_response_id` continues
the same ACP session: the stored response names its conversation and turn, and
the conversation names the agent's `sessionId`, so this survives a gateway
restart (the session is reopened with `session/load`). A `previous_response_id`
naming an older response of its conversation continues from that point: a new
conversation on the agent's fork of the session before the turn that came after it
(forks.py `fork_after_task`), the original untouched; an agent that cannot fork at a
turn is a 501 `fork_unsupported`.

The caller's own function `tools` (tool_bridge.py): when the agent calls one, the
response completes with a `function_call` item per call while the turn waits; the
next request (`previous_response_id` and `function_call_output` items) answers them,
and its response is the rest of the same turn.

`instructions` (and leading system messages of `input`) reach the agent as
instructions.py says; the `X-Instructions` header tells how.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import msgspec
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from agentao.client import TurnEnd
from agentao.gateway.auth import Principal, check_owner, owns
from agentao.gateway.batches import describe
from agentao.gateway.caller_tools import ToolResult, call_outputs, parse_tools, response_tools
from agentao.gateway.errors import BadRequest, Conflict, NotFound, unsupported
from agentao.gateway.forks import fork_after_task
from agentao.gateway.identifiers import check_id
from agentao.gateway.inputs import parse_response_input, prompt_blocks
from agentao.gateway.instructions import instruct
from agentao.gateway.mapping import estimate_usage, usage_from_agent
from agentao.gateway.response_builder import Event, LiveResponse, ResponseBuilder
from agentao.gateway.sampling import Temperature, TokenLimit, TopP, requested_knobs
from agentao.gateway.service import Gateway
from agentao.gateway.sessions import LiveConversation, TurnRequest
from agentao.gateway.streaming import EventStream, sse, watch_disconnect
from agentao.gateway.tool_bridge import holder_of_calls, offer_tools, result_expected
from agentao.gateway.transcript import ChatMessage, render
from agentao.gateway.turn_line import wait_if_queued
from agentao.gateway.turns import GatewayTurn, Step, ToolCalls, TurnFailed
from agentao.store.gateway import IN_FLIGHT_RESPONSE
from agentao.store.gateway_records import ResponseRecord

log = logging.getLogger("agentao.gateway")
router = APIRouter()


class TextFormat(msgspec.Struct):
    type: str  # "text", "json_object", "json_schema" (whose other fields are not read)


class TextOptions(msgspec.Struct):
    format: TextFormat | None = None
    verbosity: str | None = None


class ResponsesBody(msgspec.Struct, kw_only=True):
    model: str
    input: Any
    instructions: str | None = None
    temperature: Temperature | None = None
    top_p: TopP | None = None
    max_output_tokens: TokenLimit | None = None
    previous_response_id: str | None = None
    stream: bool = False
    store: bool = True
    background: bool = False
    metadata: dict[str, str] | None = None
    tools: list[Any] | None = None
    tool_choice: Any = None
    text: TextOptions | None = None
    conversation: Any = None
    prompt: Any = None
    x_acp: bool = False
    x_permission_policy: str | None = None


def check_supported(body: ResponsesBody) -> None:
    fmt = body.text.format if body.text is not None else None
    if fmt is not None and fmt.type != "text":
        raise unsupported("text.format", "only 'text' can be honoured by an agent")
    if body.conversation is not None:
        raise unsupported("conversation", "use previous_response_id to continue a conversation")
    if body.prompt is not None:
        raise unsupported("prompt", "stored prompts are not supported")
    if body.stream and body.background:
        raise unsupported("background", "cannot be combined with stream")
    if body.background and not body.store:
        raise unsupported("background", "needs store: true")


@router.post("/v1/responses")
async def create_response(request: Request) -> Any:
    gw: Gateway = request.app.state.gateway
    principal = gw.principal(request)
    body = await gw.decode(request, ResponsesBody)
    check_supported(body)
    limit = gw.limits.max_caller_tools
    tools = parse_tools(response_tools(body.tools), body.tool_choice, limit)
    choice = gw.resolve_model(principal, body.model)
    policy = gw.policy(principal, request, body.x_permission_policy)
    if body.previous_response_id is not None:
        check_id(body.previous_response_id, "previous_response_id")
    pool = gw.conversations.pool(choice.agent)
    results, items = call_outputs(body.input)
    if results:  # the caller answers the agent's calls of its tools: the same turn goes on
        return await _resume(gw, request, principal, body, choice, results, items)
    await gw.budgets.check(principal.name)  # a new turn (a running one is never cut short)
    messages = parse_response_input(items, images=pool.info.images)
    if body.instructions:
        messages.insert(0, ChatMessage("system", body.instructions))
    conv, fresh = await _conversation(gw, principal, choice.agent, body.previous_response_id)
    if (waiting := gw.tools.of(conv)) is not None and waiting.pending:
        raise result_expected("input")
    await offer_tools(gw, principal.name, conv, tools)
    delivery = instruct(gw.conversations, conv, messages, fresh=fresh)
    messages = delivery.messages
    text = render(messages, history=fresh and len(messages) > 1)
    await wait_if_queued(gw, conv, request)  # `busy = "queue"`: in line, not 409
    turn_index = conv.record.turn_count
    turn = await gw.conversations.begin(
        conv,
        TurnRequest(
            prompt=prompt_blocks(messages, text),
            title=text,
            owner=principal.name,
            policy=policy,
            model=choice.model,
            knobs=requested_knobs(
                {
                    "temperature": body.temperature,
                    "top_p": body.top_p,
                    "max_output_tokens": body.max_output_tokens,
                }
            ),
            source="responses",
        ),
    )
    if tools:
        turn.take_calls()
    return await _respond(
        gw,
        request,
        principal,
        body,
        choice,
        conv,
        turn,
        turn_index,
        len(text),
        headers=delivery.headers(),
    )


async def _resume(
    gw: Gateway,
    request: Request,
    principal: Principal,
    body: ResponsesBody,
    choice: Any,
    results: list[ToolResult],
    items: list[Any],
) -> Any:
    """`function_call_output` items: the waiting calls answered, the same turn read on."""
    if items:
        raise unsupported("input", "with function_call_output items, send nothing else")
    if body.previous_response_id is None:
        raise BadRequest(
            "function_call_output answers the calls of the response named by previous_response_id",
            param="previous_response_id",
        )
    if holder := await holder_of_calls(gw, principal, [r.call_id for r in results]):
        # The calls wait on the replica holding their conversation (tool_bridge.py).
        return await gw.peers.pass_on(request, holder)
    bridge = gw.tools.answering(principal.name, results)  # a 400 before anything is answered
    conv, _ = await _conversation(gw, principal, choice.agent, body.previous_response_id)
    turn = conv.turn
    if bridge.conv.id != conv.id:
        raise BadRequest(
            "these calls are not the previous response's",
            param="input",
            code="unknown_tool_call_id",
        )
    if turn is None or turn.done.is_set():
        raise Conflict("the turn these results answer has ended", code="turn_ended")
    bridge.answer(results)
    turn_index = conv.record.turn_count
    return await _respond(gw, request, principal, body, choice, conv, turn, turn_index, 0)


async def _respond(
    gw: Gateway,
    request: Request,
    principal: Principal,
    body: ResponsesBody,
    choice: Any,
    conv: LiveConversation,
    turn: GatewayTurn,
    turn_index: int,
    prompt_chars: int,
    *,
    headers: dict[str, str] | None = None,
) -> Any:
    """The response: the turn's items from here on, whole, streamed or in the background;
    `headers`: more of the answer's headers (X-Instructions)."""
    echo = {
        "instructions": body.instructions,
        "metadata": body.metadata or {},
        "previous_response_id": body.previous_response_id,
        "store": body.store,
        "background": body.background,
        "x_conversation_id": conv.id,
    }
    builder = ResponseBuilder(choice.name, echo, x_acp=body.x_acp)
    live = LiveResponse(builder, turn, principal.name, asyncio.Event())
    run = _Run(gw, live, conv, turn_index, body.store, prompt_chars)
    headers = {"X-Session-Id": conv.id, "X-Task-Id": turn.id, **(headers or {})}
    if body.background:  # stored now: it must outlive this request, even a restart
        await turn.log.stored.wait()  # its conversation's row is in the store
        await run.save()
        run.in_background()
        return JSONResponse(builder.snapshot(), headers=headers)
    if body.store:  # retrievable (in progress) at once; settled if this process dies
        gw.hub.start_response(run.record())
    if body.stream:
        return EventStream(run.sse(), run.on_disconnect, headers)
    async with watch_disconnect(request, run.on_disconnect):
        async for _events in run.events():
            pass
    return JSONResponse(builder.snapshot(), headers=headers)


async def _conversation(
    gw: Gateway, principal: Principal, agent: str, previous: str | None
) -> tuple[LiveConversation, bool]:
    if previous is None:
        return await gw.conversations.create(principal.name, agent, "responses"), True
    record = await gw.store.get_response(previous)
    conv = await gw.conversations.get(record.conversation_id) if record else None
    if record is None or conv is None or not owns(principal, conv.record.owner):
        raise NotFound(
            f"previous response {previous!r} not found",
            param="previous_response_id",
            code="previous_response_not_found",
        )
    if conv.record.agent != agent:
        raise BadRequest(
            f"the previous response came from the agent {conv.record.agent!r}", param="model"
        )
    if record.turn < conv.record.turn_count - 1:  # an older response: go on from there
        return await fork_after_task(gw, conv, record.turn), False
    return conv, False


class _Run:
    """Drives one response: events from the turn, the stored row kept current."""

    def __init__(
        self,
        gw: Gateway,
        live: LiveResponse,
        conv: LiveConversation,
        turn_index: int,
        store: bool,
        prompt_chars: int,
    ) -> None:
        self.gw = gw
        self.live = live
        self.conv = conv
        self.turn_index = turn_index
        self.store = store
        self.prompt_chars = prompt_chars
        self.paused = False  # ended at the caller's tool calls: the turn waits, not cancelled
        gw.live_responses[live.builder.id] = live

    def on_disconnect(self) -> None:
        """The client left: the turn is cancelled, unless it waits for the caller's results."""
        if not self.paused:
            self.live.turn.cancel()

    def record(self) -> ResponseRecord:
        b = self.live.builder
        return ResponseRecord(
            b.id, self.conv.id, self.turn_index, b.status, b.snapshot(), boot_id=self.gw.boot.id
        )

    async def save(self) -> None:
        if self.store:
            await self.gw.store.put_response(self.record())

    async def events(self) -> AsyncIterator[list[Event]]:
        """The response's events, a batch per wake-up (see `GatewayTurn.batches`)."""
        builder, turn = self.live.builder, self.live.turn
        try:
            yield builder.start()
            async for batch in turn.batches():
                events: list[Event] = []
                for item in batch:
                    if isinstance(item, Step):
                        events += builder.feed(item)
                    elif isinstance(item, TurnFailed):
                        events += builder.fail(item.message, item.code)
                    elif isinstance(item, ToolCalls):
                        self.paused = True
                        usage = estimate_usage(self.prompt_chars, turn.mapper)
                        events += builder.pause(item.calls, usage)
                    else:
                        events += builder.finish(item, self._usage(item, turn))
                yield events
        finally:
            if not self.paused:  # else the request with the results reads on
                turn.detach()
            await self._finished()

    async def _finished(self) -> None:
        builder = self.live.builder
        if builder.status == "in_progress":  # the consumer left before the end
            result = await self.live.turn.wait()
            if isinstance(result, TurnEnd):
                builder.finish(result, self._usage(result, self.live.turn))
            else:
                builder.fail(result.message, result.code)
        try:
            await self.save()
        except Exception as exc:  # the client was told (`store_failed`); the log says why
            log.exception("response %s: could not store it: %s", builder.id, describe(exc))
        finally:
            self.gw.live_responses.pop(builder.id, None)
            self.live.done.set()

    def _usage(self, end: TurnEnd, turn: GatewayTurn) -> Any:
        usage = usage_from_agent(end.usage) or estimate_usage(self.prompt_chars, turn.mapper)
        return replace(usage, cost_usd=self.gw.budgets.cost_of(turn))  # as charged

    async def sse(self) -> AsyncIterator[bytes]:
        async for events in self.events():
            if events:
                yield b"".join(sse(event, event["type"]) for event in events)

    def in_background(self) -> None:
        async def drive() -> None:
            async for _events in self.events():
                pass

        task = asyncio.get_running_loop().create_task(drive())
        self.gw.background.add(task)
        task.add_done_callback(self.gw.background.discard)


async def _find(gw: Gateway, principal: Principal, response_id: str) -> dict[str, Any]:
    """The response as it is now: live in this process, else as stored (settled first if
    the process that ran it has died since)."""
    check_id(response_id, "response_id")
    live = gw.live_responses.get(response_id)
    if live is not None:
        if not owns(principal, live.owner):
            raise NotFound(f"no response {response_id!r}", code="response_not_found")
        return live.builder.snapshot()
    record = await _stored(gw, principal, response_id)
    if record.status == IN_FLIGHT_RESPONSE and await gw.recovery.settle_if_dead(record.boot_id):
        record = await _stored(gw, principal, response_id)
    return record.body


async def _stored(gw: Gateway, principal: Principal, response_id: str) -> ResponseRecord:
    record = await gw.store.get_response(response_id)
    conv = await gw.store.get_conversation(record.conversation_id) if record else None
    if record is None or conv is None:
        raise NotFound(f"no response {response_id!r}", code="response_not_found")
    check_owner(principal, conv.owner, "response")
    return record


@router.get("/v1/responses/{response_id}")
async def get_response(response_id: str, request: Request) -> Any:
    gw: Gateway = request.app.state.gateway
    principal = gw.principal(request)
    if request.query_params.get("stream") in ("true", "1"):
        raise unsupported("stream", "resuming a response stream is not supported")
    return JSONResponse(await _find(gw, principal, response_id))


@router.post("/v1/responses/{response_id}/cancel")
async def cancel_response(response_id: str, request: Request) -> Any:
    """Cancel a response in progress here. As OpenAI answers: a cancelled one again is the
    same object (200); a completed, failed or incomplete one is a 400 saying which."""
    gw: Gateway = request.app.state.gateway
    principal = gw.principal(request)
    body = await _find(gw, principal, response_id)
    live = gw.live_responses.get(response_id)
    if live is not None:
        live.turn.cancel()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(live.done.wait(), gw.limits.cancel_grace_seconds + 5)
        return JSONResponse(live.builder.snapshot())
    status = body.get("status")
    if status == "cancelled":
        return JSONResponse(body)
    if status == IN_FLIGHT_RESPONSE:  # another replica's, one the holder step could not reach
        raise Conflict(
            f"response {response_id!r} is in progress on another gateway process that cannot "
            "be reached; cancel it there",
            param="response_id",
            code="response_elsewhere",
        )
    raise BadRequest(
        f"Cannot cancel a {status} response: {response_id!r} is {status}; only a response in "
        "progress can be cancelled",
        param="response_id",
        code=f"response_{status}",
    )


@router.delete("/v1/responses/{response_id}")
async def delete_response(response_id: str, request: Request) -> Any:
    gw: Gateway = request.app.state.gateway
    principal = gw.principal(request)
    await _find(gw, principal, response_id)
    live = gw.live_responses.get(response_id)
    if live is not None:
        live.turn.cancel()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(live.done.wait(), gw.limits.cancel_grace_seconds + 5)
    await gw.store.delete_response(response_id)
    return JSONResponse({"id": response_id, "object": "response", "deleted": True})


__all__ = ["ResponsesBody", "check_supported", "router"]
