"""An Anthropic Messages request, checked and put in Chat Completions' shape.

`POST /v1/messages` (anthropic_messages.py) runs the very conversation mechanics of
`/v1/chat/completions` (binding, the caller's tools, resuming a turn with tool results),
so this module's one job is to say the same request in the other API's words, refusing
with a 400 naming the field what the gateway cannot honour:

- `system` (a string or text blocks) -> one leading `system` message. That is the
  seam for instructions: whatever the chat face does with a system message (today
  user text beginning `[System]`; `systemPrompt` once `gateway/instructions.py` lands)
  the Anthropic face does too, through the same code.
- a user message's `text` and base64 `image` blocks -> its content parts (an image
  `url` source is refused: the gateway fetches nothing); its `tool_result` blocks ->
  `role: tool` messages (before the rest of the message, as Anthropic orders them);
  `is_error` results reach the agent's model prefixed `Error: `.
- an assistant message's `text` blocks -> its content (joined as they were streamed),
  its `tool_use` blocks -> `tool_calls`; `thinking` blocks are the agent's own
  reasoning, never part of the transcript (as chat's `reasoning_content`), and dropped.
- `tools` (custom tools: `name`, `description`, `input_schema`) -> function tools;
  server tools (`web_search_...`, `bash_...`) are refused naming `tools[i].type`.
- `tool_choice`: `auto` and `none` honoured; `any` and `tool` would force the agent's
  model to call a tool, which a gateway in front of an agent cannot do: a 400 naming
  `tool_choice`. `disable_parallel_tool_use` is accepted: the agent decides.
- `stop_sequences` cannot be applied to an agent turn, nor a prefill (the last message
  the assistant's): 400s; `max_tokens` is required as
  Anthropic requires it, and, like `temperature`, `top_p` and `top_k`, not applied.
- `thinking` (`enabled`, `adaptive` or `disabled`) decides whether the agent's reasoning
  (its thoughts, tool activity and plan) is answered as `thinking` blocks.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

from agentao.gateway.errors import BadRequest, unsupported
from agentao.gateway.openai_chat import ChatBody

# Anthropic's rule for a tool's name, as OpenAI's (caller_tools.py checks it again).
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_CUSTOM_TOOL_TYPES = (None, "custom")
_THINKING_ON = frozenset({"enabled", "adaptive"})
_THINKING_TYPES = _THINKING_ON | {"disabled"}


class MessagesBody(msgspec.Struct, kw_only=True):
    """The fields we read; sampling knobs (temperature, top_p, top_k) are the agent's."""

    model: str
    messages: list[Any]
    max_tokens: int
    system: str | list[Any] | None = None
    stream: bool = False
    tools: list[Any] | None = None
    tool_choice: dict[str, Any] | None = None
    stop_sequences: list[str] | None = None
    thinking: dict[str, Any] | None = None
    x_permission_policy: str | None = None


def thinking_enabled(body: MessagesBody) -> bool:
    """Whether the agent's reasoning is answered as `thinking` blocks (400 for a bad type)."""
    if body.thinking is None:
        return False
    kind = body.thinking.get("type")
    if kind not in _THINKING_TYPES:
        raise BadRequest(
            f"'thinking.type' {kind!r} is not one of {sorted(_THINKING_TYPES)}",
            param="thinking.type",
        )
    return kind in _THINKING_ON


def chat_body(body: MessagesBody) -> ChatBody:
    """The same request as a Chat Completions body (400 naming what cannot be honoured)."""
    if body.max_tokens < 1:
        raise BadRequest("'max_tokens' must be at least 1", param="max_tokens")
    if body.stop_sequences:
        raise unsupported("stop_sequences", "cannot be applied to an agent turn")
    if not body.messages:
        raise BadRequest("'messages' must not be empty", param="messages")
    last = body.messages[-1]
    if isinstance(last, dict) and last.get("role") == "assistant":
        raise unsupported(
            f"messages[{len(body.messages) - 1}]",
            "is an assistant message: a prefill cannot be honoured by an agent turn",
        )
    messages = _system(body.system)
    last = len(body.messages) - 1
    for i, raw in enumerate(body.messages):
        messages.extend(_message(raw, f"messages[{i}]", last=i == last))
    return ChatBody(
        model=body.model,
        messages=messages,
        stream=body.stream,
        tools=_tools(body.tools),
        tool_choice=_tool_choice(body.tool_choice),
        x_permission_policy=body.x_permission_policy,
    )


def _system(system: str | list[Any] | None) -> list[dict[str, Any]]:
    """`system` as the leading system message (see the module's note on instructions)."""
    if system is None or system == "" or system == []:
        return []
    if isinstance(system, str):
        return [{"role": "system", "content": system}]
    texts = [_text_block(block, f"system[{j}]") for j, block in enumerate(system)]
    return [{"role": "system", "content": "\n".join(texts)}]


def _text_block(block: Any, where: str) -> str:
    if not isinstance(block, dict) or block.get("type") != "text":
        raise BadRequest(f"{where} must be a text block", param=where)
    text = block.get("text")
    if not isinstance(text, str):
        raise BadRequest(f"{where}.text must be a string", param=f"{where}.text")
    return text


def _message(raw: Any, where: str, *, last: bool) -> list[dict[str, Any]]:
    if not isinstance(raw, dict):
        raise BadRequest(f"{where} must be an object", param=where)
    role = raw.get("role")
    if role not in ("user", "assistant"):
        raise BadRequest(
            f"{where}.role {role!r} is not 'user' or 'assistant' (instructions go in 'system')",
            param=f"{where}.role",
        )
    content = raw.get("content")
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    if not isinstance(content, list):
        raise BadRequest(
            f"{where}.content must be a string or a list of blocks", param=f"{where}.content"
        )
    if role == "assistant":
        return [_assistant(content, f"{where}.content")]
    return _user(content, f"{where}.content", last=last)


def _assistant(blocks: list[Any], where: str) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for j, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(_text_block(block, f"{where}[{j}]"))
        elif kind == "tool_use":
            calls.append(_tool_use(block, f"{where}[{j}]"))
        elif kind not in ("thinking", "redacted_thinking"):
            raise unsupported(f"{where}[{j}].type", f"{kind!r} is not supported")
    # Joined as streamed: the text of one answer split around thinking blocks is one text.
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
    if calls:
        message["tool_calls"] = calls
    return message


def _tool_use(block: dict[str, Any], where: str) -> dict[str, Any]:
    call_id, name, given = block.get("id"), block.get("name"), block.get("input", {})
    if not isinstance(call_id, str) or not call_id:
        raise BadRequest(f"{where}.id must be a string", param=f"{where}.id")
    if not isinstance(name, str) or not name:
        raise BadRequest(f"{where}.name must be a string", param=f"{where}.name")
    if not isinstance(given, dict):
        raise BadRequest(f"{where}.input must be an object", param=f"{where}.input")
    arguments = json.dumps(given, ensure_ascii=False)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _user(blocks: list[Any], where: str, *, last: bool) -> list[dict[str, Any]]:
    """Tool results as `role: tool` messages, then the rest as one user message."""
    results: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for j, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        at = f"{where}[{j}]"
        if kind == "tool_result":
            results.append(_tool_result(block, at))
        elif kind == "text":
            parts.append({"type": "text", "text": _text_block(block, at)})
        elif kind == "image":
            parts.append(_image(block, at))
        else:
            raise unsupported(f"{at}.type", f"{kind!r} is not supported")
    if results and parts and last:
        # The answer to the agent's waiting calls resumes its turn: new text has no place
        # in it, and would be lost.
        raise BadRequest(
            f"{where}: a message answering tool calls must carry tool_result blocks only; "
            "send the rest in the next message",
            param=where,
            code="tool_result_with_text",
        )
    return results + ([{"role": "user", "content": parts}] if parts or not results else [])


def _tool_result(block: dict[str, Any], where: str) -> dict[str, Any]:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise BadRequest(
            f"{where}.tool_use_id must name the call this answers", param=f"{where}.tool_use_id"
        )
    content = block.get("content", "")
    if isinstance(content, list):
        content = "\n".join(
            _text_block(part, f"{where}.content[{k}]") for k, part in enumerate(content)
        )
    elif not isinstance(content, str):
        raise BadRequest(
            f"{where}.content must be a string or text blocks", param=f"{where}.content"
        )
    if block.get("is_error") is True:
        content = "Error: " + content
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def _image(block: dict[str, Any], where: str) -> dict[str, Any]:
    source = block.get("source")
    if not isinstance(source, dict) or source.get("type") != "base64":
        raise unsupported(
            f"{where}.source", "must be a base64 source (the gateway fetches nothing)"
        )
    media, data = source.get("media_type"), source.get("data")
    if not isinstance(media, str) or not isinstance(data, str):
        raise BadRequest(
            f"{where}.source needs 'media_type' and 'data' strings", param=f"{where}.source"
        )
    return {"type": "image_url", "image_url": {"url": f"data:{media};base64,{data}"}}


def _tools(raw: list[Any] | None) -> list[Any] | None:
    """Custom tools as function tools (caller_tools.py checks the rest: duplicates, limits)."""
    if not raw:
        return raw
    return [_tool(item, f"tools[{i}]") for i, item in enumerate(raw)]


def _tool(item: Any, where: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise BadRequest(f"{where} must be an object", param=where)
    if item.get("type") not in _CUSTOM_TOOL_TYPES:
        raise unsupported(
            f"{where}.type", f"{item.get('type')!r}: only custom tools can be offered to an agent"
        )
    name, schema = item.get("name"), item.get("input_schema")
    if not isinstance(name, str) or not _TOOL_NAME.match(name):
        raise BadRequest(f"{where}.name must be 1 to 64 of [A-Za-z0-9_-]", param=f"{where}.name")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise BadRequest(
            f"{where}.input_schema must be a JSON Schema of type 'object'",
            param=f"{where}.input_schema",
            code="invalid_tool_schema",
        )
    function = {"name": name, "description": item.get("description") or "", "parameters": schema}
    return {"type": "function", "function": function}


def _tool_choice(choice: dict[str, Any] | None) -> str | None:
    if choice is None:
        return None
    kind = choice.get("type")
    if kind in ("auto", "none"):
        return kind
    if kind in ("any", "tool"):
        raise unsupported(
            "tool_choice",
            f"{kind!r} would force the agent's model to call a tool, which the gateway "
            "cannot do: use 'auto' or 'none'",
        )
    raise BadRequest(
        f"'tool_choice.type' {kind!r} is not 'auto', 'any', 'tool' or 'none'",
        param="tool_choice.type",
    )


__all__ = ["MessagesBody", "chat_body", "thinking_enabled"]
