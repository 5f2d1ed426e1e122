"""OpenAI message content -> `ChatMessage`s -> ACP prompt blocks.

Text goes through as is. Images are accepted only as `data:` URLs (the gateway
fetches nothing) and only when the agent advertises the `image` prompt
capability; anything else the agent cannot take (audio, files, legacy `function`
messages) is a 400 that names the offending field. The caller's own tools' calls
and results (an assistant message's `tool_calls`, `role: tool`) are kept as text of
the transcript here; caller_tools.py and tool_bridge.py do the rest.
"""

from __future__ import annotations

from typing import Any

from agentao.gateway.errors import BadRequest, unsupported
from agentao.gateway.transcript import ChatMessage

ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
_TEXT_PARTS = frozenset({"text", "input_text", "output_text", "refusal"})
_IMAGE_PARTS = frozenset({"image_url", "input_image"})


def parse_chat_messages(raw: list[Any], *, images: bool) -> list[ChatMessage]:
    """Chat Completions `messages`."""
    if not raw:
        raise BadRequest("'messages' must not be empty", param="messages")
    return [_message(m, f"messages[{i}]", images=images) for i, m in enumerate(raw)]


def parse_response_input(raw: Any, *, images: bool) -> list[ChatMessage]:
    """Responses API `input`: a string, or a list of message items."""
    if isinstance(raw, str):
        return [ChatMessage("user", raw)]
    if not isinstance(raw, list) or not raw:
        raise BadRequest("'input' must be a string or a non-empty list of items", param="input")
    out = []
    for i, item in enumerate(raw):
        where = f"input[{i}]"
        kind = item.get("type", "message") if isinstance(item, dict) else None
        if kind != "message":
            raise unsupported(
                f"{where}.type",
                f"is {kind!r}: only message items are supported (agent tools run in the agent)",
            )
        out.append(_message(item, where, images=images))
    return out


def prompt_blocks(messages: list[ChatMessage], text: str) -> list[dict[str, Any]]:
    """ACP content blocks: the rendered text, then every image of the messages sent."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for m in messages:
        blocks.extend({"type": "image", "mimeType": mime, "data": data} for mime, data in m.images)
    return blocks


def _message(m: Any, where: str, *, images: bool) -> ChatMessage:
    if not isinstance(m, dict):
        raise BadRequest(f"{where} must be an object", param=where)
    role = m.get("role")
    if role == "function":
        raise unsupported(f"{where}.role", "'function' is the legacy form: use 'tool'")
    if role not in ROLES:
        raise BadRequest(
            f"{where}.role {role!r} is not one of {sorted(ROLES)}", param=f"{where}.role"
        )
    if role == "assistant" and m.get("function_call"):
        raise unsupported(f"{where}.function_call", "is the legacy form: use 'tool_calls'")
    text, found = _content(m.get("content"), f"{where}.content", images=images)
    if role == "assistant" and m.get("tool_calls"):
        text = "\n".join([text, *_calls(m["tool_calls"], f"{where}.tool_calls")]).strip()
    return ChatMessage(role, text, tuple(found))


def _calls(calls: Any, where: str) -> list[str]:
    """An assistant message's tool calls as transcript text (name and arguments)."""
    if not isinstance(calls, list):
        raise BadRequest(f"{where} must be a list", param=where)
    out = []
    for j, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise BadRequest(f"{where}[{j}].function.name must be a string", param=where)
        out.append(f"[tool call {function['name']}] {function.get('arguments') or ''}")
    return out


def _content(content: Any, where: str, *, images: bool) -> tuple[str, list[tuple[str, str]]]:
    if content is None:
        return "", []
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        raise BadRequest(f"{where} must be a string or a list of parts", param=where)
    texts, found = [], []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in _TEXT_PARTS:
            texts.append(_text(part, kind, f"{where}[{j}]"))
        elif kind in _IMAGE_PARTS:
            if not images:
                raise unsupported(f"{where}[{j}]", "is an image, and this agent takes no images")
            found.append(_data_url(part, f"{where}[{j}]"))
        else:
            raise unsupported(f"{where}[{j}].type", f"{kind!r} is not supported")
    return "\n".join(texts), found


def _text(part: dict[str, Any], kind: str, where: str) -> str:
    field = "refusal" if kind == "refusal" else "text"
    text = part.get(field, "")
    if not isinstance(text, str):
        raise BadRequest(f"{where}.{field} must be a string", param=f"{where}.{field}")
    return text


def _data_url(part: dict[str, Any], where: str) -> tuple[str, str]:
    url = part.get("image_url")
    if isinstance(url, dict):
        url = url.get("url")
    if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url:
        raise unsupported(where, "must be a base64 data: URL (the gateway fetches nothing)")
    head, data = url[5:].split(";base64,", 1)
    return head or "application/octet-stream", data


__all__ = ["ROLES", "parse_chat_messages", "parse_response_input", "prompt_blocks"]
