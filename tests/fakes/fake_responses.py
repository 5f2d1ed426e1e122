"""The fake LLM's OpenAI Responses API (`POST /v1/responses`): the same queued replies as
Chat Completions, rendered as Responses stream events.

codex (and so codex-acp 2.x) speaks only this API: its `wire_api = "chat"` is gone. Each
event is an SSE `event:`/`data:` pair, in the order the real API sends them: the response
created, each reasoning summary and text delta, then every output item done (reasoning,
message, one `function_call` per tool call) and `response.completed` with the usage.
A call with a `namespace` names it in its item: codex offers an MCP server's tools as the
functions of a `namespace` tool (`mcp__caller`), and refuses a call of one without it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.fakes.fake_llm import FakeReply

__all__ = ["responses_events"]

_RESPONSE_ID = "resp_fake"
_MESSAGE_ID = "msg_fake"
_REASONING_ID = "rs_fake"


def responses_events(reply: FakeReply, model: str, body: dict[str, Any]) -> list[bytes]:
    """`reply` as the SSE events of one streamed Responses API answer."""
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": _RESPONSE_ID, "model": model}}
    ]
    events += [_reasoning_delta(r) for r in reply.reasoning]
    events += [_text_delta(t) for t in reply.text]
    if not reply.hang:
        events += [_item_done(item) for item in _output_items(reply)]
        events.append(_completed(reply, model))
    return [_sse(event) for event in events]


def _reasoning_delta(text: str) -> dict[str, Any]:
    return {"type": "response.reasoning_summary_text.delta", "item_id": _REASONING_ID,
            "output_index": 0, "summary_index": 0, "delta": text}  # fmt: skip


def _text_delta(text: str) -> dict[str, Any]:
    return {"type": "response.output_text.delta", "item_id": _MESSAGE_ID,
            "output_index": 0, "content_index": 0, "delta": text}  # fmt: skip


def _output_items(reply: FakeReply) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.reasoning:
        summary = [{"type": "summary_text", "text": "".join(reply.reasoning)}]
        items.append({"type": "reasoning", "id": _REASONING_ID, "summary": summary})
    if reply.text:
        content = [{"type": "output_text", "text": "".join(reply.text), "annotations": []}]
        items.append({"type": "message", "id": _MESSAGE_ID, "role": "assistant",
                      "status": "completed", "content": content})  # fmt: skip
    for i, call in enumerate(reply.tool_calls):
        arguments = (
            call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
        )
        item = {"type": "function_call", "id": f"fc_fake_{i}", "call_id": call.id or
                f"call_fake_{i}", "name": call.name, "arguments": arguments}  # fmt: skip
        if call.namespace is not None:  # a tool of a `namespace` tool (codex: an MCP server's)
            item["namespace"] = call.namespace
        items.append(item)
    return items


def _item_done(item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.done", "item": item}


def _completed(reply: FakeReply, model: str) -> dict[str, Any]:
    response: dict[str, Any] = {"id": _RESPONSE_ID, "model": model, "status": "completed"}
    if reply.usage is not None:
        prompt, completion = reply.usage["prompt_tokens"], reply.usage["completion_tokens"]
        response["usage"] = {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion,
        }
    return {"type": "response.completed", "response": response}


def _sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
