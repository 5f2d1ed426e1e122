"""`POST /v1/messages/count_tokens`: how many input tokens a Messages request would be.

The request is Anthropic's (`model`, `messages`, `system`, `tools`, `tool_choice`,
`thinking`; no `max_tokens`), checked as `POST /v1/messages` checks it
(anthropic_inputs.py: the same 400s naming a field, a 404 for an unknown model, a 403
for an agent the key may not use). Nothing reaches the agent and no budget is charged.

The count is an estimate: ACP gives a client no way to ask an agent what a request
would cost in its model's tokens, so it is the same about-four-characters-a-token the
answers' `usage` uses when an agent reports none (mapping.py), over every text the
agent's model would read (system, messages, tool calls and results, the tools'
schemas), plus `IMAGE_TOKENS` an image. The answer says so: `{"input_tokens": N,
"x_estimated": true}` (the SDK keeps the extra field: `count.x_estimated`) and the
header `X-Token-Count: estimate`.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from agentao.gateway.anthropic_inputs import MessagesBody, chat_body, thinking_enabled
from agentao.gateway.anthropic_messages import error_response
from agentao.gateway.errors import ApiError
from agentao.gateway.service import Gateway

router = APIRouter()

CHARS_PER_TOKEN = 4  # mapping.estimate_usage's rule
IMAGE_TOKENS = 1_600  # about what Anthropic counts for an image of about a megapixel
COUNT_HEADER = "X-Token-Count"


class CountBody(msgspec.Struct, kw_only=True):
    """What count_tokens reads: a Messages request without `max_tokens` and `stream`."""

    model: str
    messages: list[Any]
    system: str | list[Any] | None = None
    tools: list[Any] | None = None
    tool_choice: dict[str, Any] | None = None
    thinking: dict[str, Any] | None = None


@router.post("/v1/messages/count_tokens")
async def count_tokens(request: Request) -> Response:
    try:
        return await _count(request)
    except ApiError as exc:
        return error_response(exc)


async def _count(request: Request) -> Response:
    gw: Gateway = request.app.state.gateway
    principal = gw.principal(request)
    body = await gw.decode(request, CountBody)
    messages = MessagesBody(
        model=body.model,
        messages=body.messages,
        max_tokens=1,  # not part of a count; chat_body requires one
        system=body.system,
        tools=body.tools,
        tool_choice=body.tool_choice,
        thinking=body.thinking,
    )
    thinking_enabled(messages)  # a bad `thinking.type` is a 400, as on /v1/messages
    chat = chat_body(messages)
    gw.resolve_model(principal, body.model)
    tokens = estimate_input_tokens(chat.messages, chat.tools)
    return JSONResponse(
        {"input_tokens": tokens, "x_estimated": True}, headers={COUNT_HEADER: "estimate"}
    )


def estimate_input_tokens(messages: list[dict[str, Any]], tools: list[Any] | None) -> int:
    """About four characters a token over what the model would read; images at a flat rate."""
    chars, images = 0, 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            chars += len(content)
        for part in content if isinstance(content, list) else ():
            if part.get("type") == "text":
                chars += len(part.get("text", ""))
            else:
                images += 1
        for call in message.get("tool_calls", ()):
            chars += len(call["function"]["name"]) + len(call["function"]["arguments"])
    if tools:
        chars += len(json.dumps(tools, ensure_ascii=False))
    return max(1, chars // CHARS_PER_TOKEN) + images * IMAGE_TOKENS


__all__ = ["COUNT_HEADER", "IMAGE_TOKENS", "CountBody", "count_tokens", "estimate_input_tokens"]
