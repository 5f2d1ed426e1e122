"""`POST /v1/chat/completions`: a conversation turn as a Chat Completions answer.

Binding (see `transcript.py`): an explicit key (`X-Session-Id` header or the
body's `x_session_id`) names the conversation; without one, the longest
transcript prefix that ends with one of our stored answers does. Only the
messages after that prefix go to the agent. The answer carries
`X-Session-Id`, so a client may switch to explicit binding at any time.

Mapping (design.md §5): message text -> `content`; thoughts, tool activity and
the plan -> `reasoning_content` (or into `content` with the seed's prefixes
when `x_reasoning: "inline"`); the raw ACP update -> `delta.x_acp` when the
request sets `x_acp: true`. Agent-run tools are never `tool_calls`.

The caller's own tools (`tools`, tool_bridge.py): the agent reaches them as an MCP
server of the conversation's own; when it calls one, the answer ends with
`tool_calls` (`finish_reason: "tool_calls"`) while the turn waits, and the request
that carries the results (`role: tool` messages ending the transcript) is bound by
their `tool_call_id`s and answered with the rest of the same turn.

`begin_chat_turn` is all of that up to the turn begun (or resumed); the answer's shape
is the route's. `POST /v1/messages` (anthropic_messages.py) runs the same function on
its request said in Chat Completions' words, and renders the turn in Anthropic's.

Instructions (leading `system`/`developer` messages) reach the agent as instructions.py
says: as ACP `systemPrompt` where the agent takes it, else in the prompt's text; the
`X-Instructions` header tells which.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

import msgspec
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from agentao.client import TurnEnd
from agentao.gateway.auth import Principal, owns
from agentao.gateway.caller_tools import (
    ToolResult,
    asked_calls,
    parse_tools,
    tool_results,
)
from agentao.gateway.config import Limits
from agentao.gateway.errors import (
    AgentFailed,
    BadRequest,
    Conflict,
    SessionLost,
    error_body,
    unsupported,
)
from agentao.gateway.identifiers import check_session_key
from agentao.gateway.inputs import parse_chat_messages, prompt_blocks
from agentao.gateway.instructions import instruct
from agentao.gateway.mapping import chat_finish_reason, estimate_usage, usage_from_agent
from agentao.gateway.sampling import Temperature, TokenLimit, TopP, requested_knobs
from agentao.gateway.service import Gateway, ModelChoice
from agentao.gateway.sessions import (
    CONVERSATION_PREFIX,
    LiveConversation,
    TurnRequest,
    keyed_conversation_id,
)
from agentao.gateway.streaming import EventStream, sse, watch_disconnect
from agentao.gateway.tool_bridge import holder_of_calls, offer_tools, result_expected
from agentao.gateway.transcript import (
    OFFLOAD_MESSAGES,
    ChatMessage,
    HashedTranscript,
    hash_transcript,
    render,
    tail_after_last_answer,
)
from agentao.gateway.turn_line import wait_if_queued
from agentao.gateway.turns import GatewayTurn, Step, ToolCalls, TurnFailed, TurnItem

router = APIRouter()
SESSION_HEADER = "x-session-id"
_encode = msgspec.json.Encoder().encode
# Stands for the delta in the chunk template; no id, model name or key can hold \x01.
_DELTA_MARK: Any = "\x01delta\x01"
_ENCODED_MARK = _encode(_DELTA_MARK)


class StreamOptions(msgspec.Struct):
    include_usage: bool = False


class ChatBody(msgspec.Struct, kw_only=True):
    """The fields we read; sampling knobs go to the agent where it offers them (sampling.py)."""

    model: str
    messages: list[Any]
    temperature: Temperature | None = None
    top_p: TopP | None = None
    max_tokens: TokenLimit | None = None
    max_completion_tokens: TokenLimit | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int | None = None
    tools: list[Any] | None = None
    tool_choice: Any = None
    functions: list[Any] | None = None
    function_call: Any = None
    response_format: dict[str, Any] | None = None
    logprobs: bool | None = None
    audio: Any = None
    modalities: list[str] | None = None
    stop: str | list[str] | None = None
    x_acp: bool = False
    x_session_id: str | None = None
    x_permission_policy: str | None = None
    x_reasoning: Literal["separate", "inline", "omit"] = "separate"


def check_supported(body: ChatBody) -> None:
    """400 naming the first parameter the gateway cannot honour."""
    if body.n is not None and body.n != 1:
        raise unsupported("n", "must be 1: an agent turn has one answer")
    if body.functions or body.function_call is not None:
        raise unsupported(
            "functions" if body.functions else "function_call", "is the legacy form: use tools"
        )
    if body.response_format and body.response_format.get("type") not in (None, "text"):
        raise unsupported("response_format", "only 'text' can be honoured by an agent")
    if body.logprobs:
        raise unsupported("logprobs", "agents do not report token log-probabilities")
    if body.audio is not None or (body.modalities and set(body.modalities) - {"text"}):
        raise unsupported("modalities", "only text output is supported")
    if body.stop:
        raise unsupported("stop", "stop sequences cannot be applied to an agent turn")


@router.post("/v1/chat/completions")
async def chat_completions(request: Request) -> Any:
    gw: Gateway = request.app.state.gateway
    principal = gw.principal(request)
    body = await gw.decode(request, ChatBody)
    check_supported(body)
    started = await begin_chat_turn(gw, request, principal, body)
    if isinstance(started, Response):
        return started
    return await _answer(request, body, started)


@dataclass(frozen=True, slots=True)
class StartedTurn:
    """A chat turn begun (or resumed by tool results) for one request, and what its
    answer's headers say; any face renders it in its own shape (anthropic_messages.py)."""

    turn: GatewayTurn
    choice: ModelChoice
    headers: dict[str, str]


async def begin_chat_turn(
    gw: Gateway, request: Request, principal: Principal, body: ChatBody
) -> StartedTurn | Response:
    """The turn a Chat Completions body asks for: the conversation found (by its key or its
    transcript) or made, the caller's tools offered, the new messages prompted; or the
    request passed on to the replica that holds the conversation (a Response)."""
    tools = parse_tools(body.tools, body.tool_choice, gw.limits.max_caller_tools)
    choice = gw.resolve_model(principal, body.model)
    policy = gw.policy(principal, request, body.x_permission_policy)
    pool = gw.conversations.pool(choice.agent)
    key = _session_key(gw, request, body)
    results = tool_results(body.messages)
    asked = [r.call_id for r in results] or asked_calls(body.messages)
    if holder := await holder_of_calls(gw, principal, asked):
        # The calls wait on the replica holding their conversation (tool_bridge.py).
        return await gw.peers.pass_on(request, holder)
    hashed = await _read_transcript(body.messages, pool.info.images, gw.limits)
    if results:  # the caller answers the agent's calls of its tools: the same turn goes on
        return await _resume(gw, principal, choice, key, hashed, results)
    await gw.budgets.check(principal.name)  # a new turn (a running one is never cut short)
    if gw.tools.waiting(principal.name, asked) is not None:
        raise result_expected("messages")
    conv, new, fresh = await _conversation(gw, principal, choice, key, hashed)
    if key is None and not fresh and (holder := await gw.replica.holder_url(conv.id)):
        # Named by its transcript alone, so found only now (a key is found before: holders.py).
        return await gw.peers.pass_on(request, holder)
    if (waiting := gw.tools.of(conv)) is not None and waiting.pending:
        raise result_expected("messages")
    await offer_tools(gw, principal.name, conv, tools)
    delivery = instruct(gw.conversations, conv, new, fresh=fresh)
    turn_request = _turn_request(body, principal, policy, choice, hashed, delivery.messages, fresh)
    await wait_if_queued(gw, conv, request)  # `busy = "queue"`: in line, not 409
    try:
        turn = await gw.conversations.begin(conv, turn_request)
    except SessionLost:  # start the conversation over, with the whole transcript
        gw.conversations.start_over(conv)
        delivery = instruct(gw.conversations, conv, hashed.messages, fresh=True)
        everything = delivery.messages
        turn_request = _turn_request(body, principal, policy, choice, hashed, everything, True)
        turn = await gw.conversations.begin(conv, turn_request)
    if tools:
        turn.take_calls()
    return StartedTurn(turn, choice, {"X-Session-Id": key or conv.id, **delivery.headers()})


async def _answer(request: Request, body: ChatBody, started: StartedTurn) -> Any:
    """The answer: the turn's items from here on, streamed or whole."""
    turn = started.turn
    headers = {**started.headers, "X-Task-Id": turn.id}
    reply_id, now = "chatcmpl-" + uuid.uuid4().hex, int(time.time())
    cost_of = request.app.state.gateway.budgets.cost_of  # the usage's cost (budgets.py)
    reply = _Reply(reply_id, now, started.choice, body, turn, cost_of)
    if body.stream:
        return EventStream(reply.stream(), reply.on_disconnect, headers)
    async with watch_disconnect(request, reply.on_disconnect):
        result = await reply.collect()
    return JSONResponse(result, headers=headers)


async def _resume(
    gw: Gateway,
    principal: Principal,
    choice: ModelChoice,
    key: str | None,
    hashed: HashedTranscript,
    results: list[ToolResult],
) -> StartedTurn:
    """The results of the agent's calls: answered, and the rest of the same turn read."""
    bridge = gw.tools.answering(principal.name, results)  # a 400 before anything is answered
    conv, turn = bridge.conv, bridge.conv.turn
    if conv.record.agent != choice.agent:
        raise BadRequest(f"this session belongs to the agent {conv.record.agent!r}", param="model")
    if turn is None or turn.done.is_set():
        raise Conflict("the turn these results answer has ended", code="turn_ended")
    # From here, the turn's text is the answer to this transcript (transcript_after).
    turn.transcript = (hashed, len(turn.mapper.full_text))
    bridge.answer(results)
    return StartedTurn(turn, choice, {"X-Session-Id": key or conv.id})


def _session_key(gw: Gateway, request: Request, body: ChatBody) -> str | None:
    """The explicit conversation key, if any: it is echoed as a header, so it is checked
    before anything runs (see `identifiers.py`)."""
    limit = gw.limits.max_session_key_length
    if body.x_session_id is not None:
        return check_session_key(body.x_session_id, "x_session_id", limit)
    header = request.headers.get(SESSION_HEADER)
    return check_session_key(header, "X-Session-Id", limit) if header is not None else None


async def _read_transcript(raw: list[Any], images: bool, limits: Limits) -> HashedTranscript:
    """The request's messages, parsed and hashed; a long transcript on a worker thread, so
    the event loop goes on serving everyone else meanwhile."""

    def read() -> HashedTranscript:
        messages = parse_chat_messages(raw, images=images)
        return hash_transcript(messages, limits.transcript_match_depth)

    if len(raw) > OFFLOAD_MESSAGES:
        return await asyncio.to_thread(read)
    return read()


async def _conversation(
    gw: Gateway,
    principal: Principal,
    choice: ModelChoice,
    key: str | None,
    hashed: HashedTranscript,
) -> tuple[LiveConversation, list[ChatMessage], bool]:
    """(conversation, messages to send, whether the agent starts fresh)."""
    convs = gw.conversations
    messages, candidates = hashed.messages, hashed.candidates
    if key:
        conv = await _keyed(gw, principal, choice, key)
        if conv.record.agent != choice.agent:
            raise BadRequest(
                f"this session belongs to the agent {conv.record.agent!r}", param="model"
            )
        if conv.record.turn_count == 0:
            return conv, messages, True
        for digest, length in candidates:
            if digest == conv.record.transcript_hash:
                return conv, _new_only(messages[length:]), False
        return conv, _new_only(tail_after_last_answer(messages)), False
    hashes = [digest for digest, _ in candidates]
    found = await convs.by_transcript(principal.name, choice.agent, hashes) if hashes else None
    if found is not None:
        conv, digest = found
        return conv, _new_only(messages[dict(candidates)[digest] :]), False
    return await convs.create(principal.name, choice.agent, "chat"), messages, True


async def _keyed(
    gw: Gateway, principal: Principal, choice: ModelChoice, key: str
) -> LiveConversation:
    """The conversation an explicit key names: one of ours by id, else the key's own."""
    convs = gw.conversations
    derived = keyed_conversation_id(principal.name, key)
    for conv in (convs.live(key), convs.live(derived)):  # the hot path: no store lookup
        if conv is not None and owns(principal, conv.record.owner):
            return conv
    if key.startswith(CONVERSATION_PREFIX):  # may be one of ours (only ours look so)
        conv = await convs.get(key)
        if conv is not None and owns(principal, conv.record.owner):
            return conv
    return await convs.get(derived) or await convs.create(
        principal.name, choice.agent, "chat", derived
    )


def _new_only(messages: list[ChatMessage]) -> list[ChatMessage]:
    if not any(m.role in ("user", "system", "developer") for m in messages):
        raise BadRequest(
            "no new user message to send after the conversation so far", param="messages"
        )
    return messages


def _turn_request(
    body: ChatBody,
    principal: Principal,
    policy: Any,
    choice: ModelChoice,
    transcript: HashedTranscript,
    new: list[ChatMessage],
    fresh: bool,
) -> TurnRequest:
    text = render(new, history=fresh and len(new) > 1)

    def transcript_after(turn: GatewayTurn) -> str | None:
        result = turn.result
        if isinstance(result, TurnEnd) and result.stop_reason != "cancelled":
            # Resumed by tool results: the last request's transcript, and the text since.
            answered, start = turn.transcript or (transcript, 0)
            return answered.answered(turn.mapper.full_text[start:])
        return None

    return TurnRequest(
        prompt=prompt_blocks(new, text),
        title=text,
        owner=principal.name,
        policy=policy,
        model=choice.model,
        knobs=requested_knobs(
            {
                "temperature": body.temperature,
                "top_p": body.top_p,
                "max_tokens": body.max_tokens,
                "max_completion_tokens": body.max_completion_tokens,
            }
        ),
        source="chat",
        inline_reasoning=body.x_reasoning == "inline",
        transcript_after=transcript_after,
    )


class _Reply:
    """Builds the Chat Completions answer of one turn, streamed or whole."""

    def __init__(
        self,
        reply_id: str,
        created: int,
        choice: ModelChoice,
        body: ChatBody,
        turn: GatewayTurn,
        cost_of: Callable[[GatewayTurn], float | None] = lambda turn: None,
    ) -> None:
        self.id = reply_id
        self.created = created
        self.choice = choice
        self.body = body
        self.turn = turn
        self.prompt_chars = sum(len(b.get("text", "")) for b in turn.prompt)
        self.cost_of = cost_of  # an ended turn's cost, as charged (budgets.py)
        # A turn resumed by tool results answers with the text from there on.
        self.text_from = turn.transcript[1] if getattr(turn, "transcript", None) else 0
        self.paused = False  # ended at the caller's tool calls: the turn waits, not cancelled
        # The role rides on the first chunk that says something, as OpenAI's does when
        # the first token is ready: one write less before the first token.
        self._first: dict[str, Any] = {"role": "assistant"}
        # Every delta chunk is the same object around its delta: encoded once, here, so
        # each update costs the encoding of its delta alone.
        head, _, tail = _encode(self._chunk(_DELTA_MARK)).partition(_ENCODED_MARK)
        self._head, self._tail = b"data: " + head, tail + b"\n\n"
        # ... and a text-only delta's chunk is these two around the encoded text.
        self._text_open, self._text_close = self._head + b'{"content":', b"}" + self._tail
        self._text_between = self._text_close + self._text_open  # one chunk's end, the next's start

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.choice.name,
            "system_fingerprint": None,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    def _delta(self, step: Step) -> dict[str, Any]:
        delta: dict[str, Any] = {}
        if step.delta.text:
            delta["content"] = step.delta.text
        if step.delta.reasoning and self.body.x_reasoning == "separate":
            delta["reasoning_content"] = step.delta.reasoning
        if self.body.x_acp:
            delta["x_acp"] = step.update.wire  # its bytes, as received (sse encodes them)
        return delta

    def _usage(self, end: TurnEnd | None) -> dict[str, Any]:
        usage = usage_from_agent(end.usage) if end is not None else None
        usage = usage or estimate_usage(self.prompt_chars, self.turn.mapper)
        return replace(usage, cost_usd=self.cost_of(self.turn)).chat()

    def on_disconnect(self) -> None:
        """The client left: the turn is cancelled, unless it waits for the caller's results."""
        if not self.paused:
            self.turn.cancel()

    def _tool_calls(self, item: ToolCalls) -> bytes:
        """The end of a streamed answer at the caller's tool calls, as OpenAI streams them:
        per call its id and name, then its arguments; then `finish_reason: "tool_calls"`."""
        self.paused = True
        out = []
        for i, call in enumerate(item.calls):
            head = {"name": call.name, "arguments": ""}
            delta = {"index": i, "id": call.id, "type": "function", "function": head}
            out.append(sse(self._chunk({**self._first, "tool_calls": [delta]})))
            self._first = {}
            arguments = {"index": i, "function": {"arguments": call.arguments}}
            out.append(sse(self._chunk({"tool_calls": [arguments]})))
        out.append(sse(self._chunk({}, "tool_calls")))
        options = self.body.stream_options
        if options is not None and options.include_usage:
            chunk = self._chunk({})
            chunk["choices"], chunk["usage"] = [], self._usage(None)
            out.append(sse(chunk))
        return b"".join(out)

    async def stream(self) -> AsyncIterator[bytes]:
        try:
            async for batch in self.turn.batches():
                out = self._encode_texts(batch)
                if out is None:
                    out = b"".join([self._encode(item) for item in batch])
                if not isinstance(batch[-1], Step):  # the end: [DONE] goes out with it
                    out += b"data: [DONE]\n\n"
                if out:
                    yield out
        finally:
            if not self.paused:  # else the request with the results reads on
                self.turn.detach()

    def _encode_texts(self, batch: list[TurnItem]) -> bytes | None:
        """A batch of steps that are text alone (most batches) encoded with no Python
        call per step: each text by the encoder (`map`), every chunk joined around them;
        None for any other batch."""
        if self._first or self.body.x_acp:
            return None
        deltas = [item.delta for item in batch if type(item) is Step]
        texts = [d.text for d in deltas if d.text and not d.reasoning]
        if len(texts) != len(batch):
            return None
        return self._text_open + self._text_between.join(map(_encode, texts)) + self._text_close

    def _encode(self, item: Any) -> bytes:
        if isinstance(item, Step):
            d = item.delta
            if d.text and not d.reasoning and not self._first and not self.body.x_acp:
                # Most chunks: text alone, encoded without a dict.
                return self._text_open + _encode(d.text) + self._text_close
            delta = self._delta(item)
            if not delta:
                return b""
            if self._first:
                delta, self._first = {**self._first, **delta}, {}
            return self._head + _encode(delta) + self._tail
        if isinstance(item, TurnFailed):
            return sse(_error(item.message, item.code))
        if isinstance(item, ToolCalls):
            return self._tool_calls(item)
        head = sse(self._chunk({**self._first, "content": ""})) if self._first else b""
        return head + from_end(self, item)

    async def collect(self) -> dict[str, Any]:
        raw: list[Any] = []
        end: TurnEnd | ToolCalls | None = None
        async for item in self.turn.items():
            if isinstance(item, Step) and self.body.x_acp:
                raw.append(item.update.raw)
            elif isinstance(item, TurnFailed):
                raise AgentFailed(item.message, code=item.code)
            elif isinstance(item, TurnEnd | ToolCalls):
                end = item
                self.paused = isinstance(item, ToolCalls)
        assert end is not None
        finish = "tool_calls" if self.paused else chat_finish_reason(end.stop_reason)
        if finish is None:
            raise AgentFailed("the turn was cancelled before it finished", code="cancelled")
        mapper = self.turn.mapper
        message: dict[str, Any] = {
            "role": "assistant",
            "content": mapper.full_text[self.text_from :] or (None if self.paused else ""),
            "refusal": None,
        }
        if isinstance(end, ToolCalls):
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in end.calls
            ]
        if self.body.x_reasoning == "separate" and mapper.full_reasoning:
            message["reasoning_content"] = mapper.full_reasoning
        result: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.choice.name,
            "system_fingerprint": None,
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
            ],
            "usage": self._usage(end if isinstance(end, TurnEnd) else None),
        }
        if self.body.x_acp:
            result["x_acp"] = raw
        return result


def from_end(reply: _Reply, end: TurnEnd) -> bytes:
    """The closing chunk(s) of a streamed answer."""
    finish = chat_finish_reason(end.stop_reason)
    if finish is None:
        return sse(_error("the turn was cancelled before it finished", "cancelled"))
    out = sse(reply._chunk({}, finish))
    options = reply.body.stream_options
    if options is not None and options.include_usage:
        chunk = reply._chunk({})
        chunk["choices"] = []
        chunk["usage"] = reply._usage(end)
        out += sse(chunk)
    return out


def _error(message: str, code: str) -> dict[str, Any]:
    return error_body(message, "agent_error", code=code)


__all__ = ["ChatBody", "StartedTurn", "begin_chat_turn", "check_supported", "router"]
