"""ACP content as text: the one translation every reader shares.

A leaf of `client/` (it imports only the schema), so the gateway's OpenAI mapping, the
session view (`view.py`) and whatever else shows a content block to a person read it the
same way: text as is, a link as a Markdown link, an embedded text resource as its text,
anything else as a short marker naming its kind (`prompt_text`: a prompt's blocks). A block a newer agent invented (an
`UnknownVariant`, kept whole by the lenient decoder) is named by its `type` too.
"""

from __future__ import annotations

from typing import Any

import msgspec

from agentao.protocol import schema
from agentao.protocol.decode import decode_lenient
from agentao.protocol.schema import UnknownVariant

_TEXT_BLOCK = schema.TextContentBlock
_TAGS: dict[type, str] = {}  # schema class -> its tag (`type`), looked up once per class


def block_type(block: Any) -> str:
    """The `type` tag of a content block (a schema struct or an UnknownVariant)."""
    cls = type(block)
    tag = _TAGS.get(cls)
    if tag is not None:
        return tag
    if isinstance(block, UnknownVariant):
        return str(block.raw.get("type") or "")
    tag = getattr(getattr(cls, "__struct_config__", None), "tag", None)
    if tag is None:
        return str(getattr(block, "type", ""))
    tag = _TAGS[cls] = str(tag)
    return tag


def content_text(block: Any) -> str:
    """A ContentBlock as text: text as is, anything else as a short marker ('' for none)."""
    if type(block) is _TEXT_BLOCK:  # nearly every block streamed: asked before its tag
        return block.text  # type: ignore[no-any-return]
    kind = block_type(block)
    if kind == "text":
        return block.text
    if kind == "resource_link":
        return f"[{block.name}]({block.uri})"
    if kind == "resource":
        resource = block.resource
        return getattr(resource, "text", None) or f"[resource {getattr(resource, 'uri', '')}]"
    return f"[{kind}]" if kind else ""


def tool_output_text(content: Any) -> str:
    """The text of a tool call's `content` items (`content` kind only; diffs and
    terminals are shown their own way), joined."""
    return "".join(content_text(item.content) for item in content or () if _is_content(item))


def prompt_text(blocks: Any) -> str:
    """A prompt's content blocks (wire dicts or schema structs) as one text."""
    return "".join(content_text(typed_block(b)) for b in blocks or ())


def typed_block(block: Any) -> Any:
    """A content block as a schema struct (a wire dict is decoded once, here; one this
    schema cannot read stays whole, as an UnknownVariant)."""
    if not isinstance(block, dict):
        return block
    try:
        return decode_lenient(schema.ContentBlock, block)
    except (msgspec.ValidationError, TypeError):
        return UnknownVariant(block, "type")


def _is_content(item: Any) -> bool:
    return block_type(item) == "content"


__all__ = ["block_type", "content_text", "prompt_text", "tool_output_text", "typed_block"]
