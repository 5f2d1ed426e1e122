"""`POST /v1/messages`: a conversation turn as an Anthropic Messages answer.

The request is said again as a Chat Completions body (anthropic_inputs.py) and runs
the chat face's own mechanics (`openai_chat.begin_chat_turn`): the same binding (the
`X-Session-Id` header, else the transcript), the same caller's tools bridge (a
`tool_use` answer while the turn waits, resumed by the `tool_result`s of the next
request), the same keys and ceilings. Only the answer's shape is this module's:

- whole: a `message` with `content` blocks (`thinking` when the request enables it,
  one `text`, then a `tool_use` per call of the caller's tools), `stop_reason` and
  `usage`;
- streamed: `message_start`, `ping`, then per block `content_block_start`, its
  `text_delta` / `thinking_delta` / `input_json_delta`s and `content_block_stop` (a
  block ends where the agent turns from reasoning to text or back), then
  `message_delta` (`stop_reason`, `usage`) and `message_stop`; a failure is an `error`
  event.

Stop reasons: `end_turn`; `max_tokens` for the agent's `max_tokens` and
`max_turn_requests`; `refusal`; `tool_use` at the caller's tool calls. A cancelled
turn has no Anthropic stop reason: an `api_error` (502, code `cancelled`).

Errors are Anthropic's shape, `{"type": "error", "error": {"type", "message"}}`, with
the status the gateway gives every face (our `code` and `param` ride along in
`error`). The key comes as `x-api-key` (the SDK's way) or `Authorization: Bearer`
(auth.py); `anthropic-version` is accepted and not read.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from agentao.client import TurnEnd
from agentao.gateway.anthropic_inputs import MessagesBody, chat_body, thinking_enabled
from agentao.gateway.errors import AgentFailed, ApiError
from agentao.gateway.mapping import estimate_usage, usage_from_agent
from agentao.gateway.openai_chat import StartedTurn, begin_chat_turn
from agentao.gateway.service import Gateway
from agentao.gateway.streaming import EventStream, sse, watch_disconnect
from agentao.gateway.turns import GatewayTurn, Step, ToolCalls, TurnFailed, TurnItem

router = APIRouter()

# Anthropic's error types by the status the gateway answers (anything else: api_error).
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    406: "invalid_request_error",
    409: "invalid_request_error",
    413: "request_too_large",
    415: "invalid_request_error",
    421: "invalid_request_error",
    429: "rate_limit_error",
    503: "overloaded_error",
}
STOP_REASONS = {
    "end_turn": "end_turn",
    "max_tokens": "max_tokens",
    "max_turn_requests": "max_tokens",
    "refusal": "refusal",
}


def error_body(status: int, message: str, **extra: str | None) -> dict[str, Any]:
    """Anthropic's error object; `extra` (our code, param) where given."""
    error = {"type": ERROR_TYPES.get(status, "api_error"), "message": message}
    error.update({k: v for k, v in extra.items() if v is not None})
    return {"type": "error", "error": error}


def error_response(exc: ApiError) -> JSONResponse:
    body = error_body(exc.status, exc.message, code=exc.code, param=exc.param)
    return JSONResponse(body, status_code=exc.status, headers=exc.headers)


@router.post("/v1/messages")
async def messages(request: Request) -> Response:
    try:
        return await _messages(request)
    except ApiError as exc:
        return error_response(exc)


async def _messages(request: Request) -> Response:
    gw: Gateway = request.app.state.gateway
    principal = gw.principal(request)
    body = await gw.decode(request, MessagesBody)
    thinking = thinking_enabled(body)
    started = await begin_chat_turn(gw, request, principal, chat_body(body))
    if isinstance(started, Response):  # passed on to the replica holding the conversation
        return started
    reply = _Reply(started, thinking, gw.budgets.cost_of)
    headers = {**started.headers, "X-Task-Id": started.turn.id}
    if body.stream:
        return EventStream(reply.stream(), reply.on_disconnect, headers)
    async with watch_disconnect(request, reply.on_disconnect):
        result = await reply.collect()
    return JSONResponse(result, headers=headers)


def stop_reason(end: TurnEnd) -> str:
    """Anthropic's stop reason for the agent's (AgentFailed for a cancelled turn)."""
    if end.stop_reason == "cancelled":
        raise AgentFailed("the turn was cancelled before it finished", code="cancelled")
    return STOP_REASONS.get(end.stop_reason, "end_turn")


class _Reply:
    """Builds the Messages answer of one turn (or of its rest, resumed by tool results)."""

    def __init__(
        self,
        started: StartedTurn,
        thinking: bool,
        cost_of: Callable[[GatewayTurn], float | None],
    ) -> None:
        self.id = "msg_" + uuid.uuid4().hex
        self.model = started.choice.name
        self.turn: GatewayTurn = started.turn
        self.thinking = thinking
        self.prompt_chars = sum(len(b.get("text", "")) for b in self.turn.prompt)
        self.cost_of = cost_of  # an ended turn's cost, as charged (budgets.py)
        self.paused = False  # ended at the caller's tool calls: the turn waits, not cancelled
        self._open: str | None = None  # the kind of the streamed block open now
        self._index = -1  # the streamed block's index

    def on_disconnect(self) -> None:
        """The client left: the turn is cancelled, unless it waits for the caller's results."""
        if not self.paused:
            self.turn.cancel()

    def _usage(self, end: TurnEnd | None) -> dict[str, Any]:
        usage = usage_from_agent(end.usage) if end is not None else None
        usage = usage or estimate_usage(self.prompt_chars, self.turn.mapper)
        out: dict[str, Any] = {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": usage.cached_tokens,
        }
        if usage.estimated:
            out["x_estimated"] = True
        if (cost := self.cost_of(self.turn)) is not None:
            out["x_cost_usd"] = cost
        return out

    def _message(self, content: list[Any], stop: str | None, usage: dict[str, Any]) -> dict:
        return {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }

    # ---- whole ---------------------------------------------------------------------

    async def collect(self) -> dict[str, Any]:
        text, reasoning = [], []
        end: TurnEnd | ToolCalls | None = None
        async for item in self.turn.items():
            if isinstance(item, Step):
                text.append(item.delta.text)
                reasoning.append(item.delta.reasoning)
            elif isinstance(item, TurnFailed):
                raise AgentFailed(item.message, code=item.code)
            else:
                end = item
        assert end is not None
        content: list[dict[str, Any]] = []
        if self.thinking and "".join(reasoning):
            content.append({"type": "thinking", "thinking": "".join(reasoning), "signature": ""})
        if "".join(text) or not isinstance(end, ToolCalls):
            content.append({"type": "text", "text": "".join(text)})
        if isinstance(end, ToolCalls):
            self.paused = True
            content += [_tool_use(call) for call in end.calls]
            return self._message(content, "tool_use", self._usage(None))
        return self._message(content, stop_reason(end), self._usage(end))

    # ---- streamed ------------------------------------------------------------------

    async def stream(self) -> AsyncIterator[bytes]:
        usage = {"input_tokens": max(1, self.prompt_chars // 4), "output_tokens": 0}
        start = {"type": "message_start", "message": self._message([], None, usage)}
        yield _event(start) + _event({"type": "ping"})
        try:
            async for batch in self.turn.batches():
                out = b"".join([self._encode(item) for item in batch])
                if out:
                    yield out
        finally:
            if not self.paused:  # else the request with the results reads on
                self.turn.detach()

    def _encode(self, item: TurnItem) -> bytes:
        if isinstance(item, Step):
            reasoning = item.delta.reasoning if self.thinking else ""
            out = self._delta("thinking", reasoning) if reasoning else b""
            return out + (self._delta("text", item.delta.text) if item.delta.text else b"")
        if isinstance(item, TurnFailed):
            return _event(error_body(502, item.message, code=item.code))
        if isinstance(item, ToolCalls):
            self.paused = True
            out = self._close() + b"".join(self._tool_block(call) for call in item.calls)
            return out + self._end("tool_use", self._usage(None))
        try:
            stop = stop_reason(item)
        except AgentFailed as exc:
            return _event(error_body(exc.status, exc.message, code=exc.code))
        return self._close() + self._end(stop, self._usage(item))

    def _delta(self, kind: str, text: str) -> bytes:
        """One delta of `kind`, in the open block if it is of that kind, else a new one."""
        out = b""
        if self._open != kind:
            out = self._close() + self._start(_EMPTY[kind])
            self._open = kind
        delta = {"type": f"{kind}_delta", kind: text}
        return out + _event({"type": "content_block_delta", "index": self._index, "delta": delta})

    def _start(self, block: dict[str, Any]) -> bytes:
        self._index += 1
        return _event({"type": "content_block_start", "index": self._index, "content_block": block})

    def _close(self) -> bytes:
        if self._open is None:
            return b""
        self._open = None
        return _event({"type": "content_block_stop", "index": self._index})

    def _tool_block(self, call: Any) -> bytes:
        """A call of the caller's tool as Anthropic streams one: the block with an empty
        input, the input as JSON text, the block's end."""
        out = self._start({**_tool_use(call), "input": {}})
        delta = {"type": "input_json_delta", "partial_json": call.arguments}
        out += _event({"type": "content_block_delta", "index": self._index, "delta": delta})
        return out + _event({"type": "content_block_stop", "index": self._index})

    def _end(self, stop: str, usage: dict[str, Any]) -> bytes:
        delta = {"stop_reason": stop, "stop_sequence": None}
        return _event({"type": "message_delta", "delta": delta, "usage": usage}) + _event(
            {"type": "message_stop"}
        )


_EMPTY = {
    "text": {"type": "text", "text": ""},
    "thinking": {"type": "thinking", "thinking": "", "signature": ""},
}


def _tool_use(call: Any) -> dict[str, Any]:
    """A `tool_bridge.PendingCall` as a `tool_use` block (the id answers it)."""
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": call.args}


def _event(data: dict[str, Any]) -> bytes:
    return sse(data, event=data["type"])


__all__ = ["ERROR_TYPES", "STOP_REASONS", "error_body", "error_response", "router"]
