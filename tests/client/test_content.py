"""Content as text (client/content.py): one table, for every reader that shows a block."""

from __future__ import annotations

from typing import Any

import pytest

from agentao.client.content import content_text, tool_output_text
from agentao.protocol import schema
from agentao.protocol.decode import decode_lenient

# (ContentBlock as the agent sends it, the text every reader shows)
BLOCKS: list[tuple[dict[str, Any], str]] = [
    ({"type": "text", "text": "hi **there**"}, "hi **there**"),
    ({"type": "text", "text": ""}, ""),
    (
        {"type": "resource_link", "name": "a.txt", "uri": "file:///w/a.txt"},
        "[a.txt](file:///w/a.txt)",
    ),
    (
        {"type": "resource", "resource": {"uri": "file:///w/b.txt", "text": "inside b"}},
        "inside b",
    ),
    (
        {"type": "resource", "resource": {"uri": "file:///w/c.bin", "blob": "AAEC"}},
        "[resource file:///w/c.bin]",
    ),
    ({"type": "image", "data": "iVBO", "mimeType": "image/png"}, "[image]"),
    ({"type": "audio", "data": "UklG", "mimeType": "audio/wav"}, "[audio]"),
    ({"type": "hologram", "frames": 3}, "[hologram]"),  # a newer agent's kind: named, kept
]


@pytest.mark.parametrize(("wire", "text"), BLOCKS, ids=[b["type"] for b, _ in BLOCKS])
def test_a_content_block_as_text(wire: dict[str, Any], text: str) -> None:
    assert content_text(decode_lenient(schema.ContentBlock, wire)) == text


def test_a_tool_call_s_output_is_its_content_items_text() -> None:
    """Diffs and terminals are shown their own way; only `content` items are output."""
    items = [
        {"type": "content", "content": {"type": "text", "text": "line 1\n"}},
        {"type": "diff", "path": "/w/a", "oldText": None, "newText": "new\n"},
        {"type": "terminal", "terminalId": "term-1"},
        {"type": "content", "content": {"type": "resource_link", "name": "r", "uri": "u"}},
    ]
    typed = [decode_lenient(schema.ToolCallContent, item) for item in items]
    assert tool_output_text(typed) == "line 1\n[r](u)"
    assert tool_output_text(None) == ""
