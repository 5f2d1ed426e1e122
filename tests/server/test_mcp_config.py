"""ACP mcpServers -> McpHub config (server/mcp_config.py), rule by rule (seed C.2)."""

from __future__ import annotations

import pytest

from agentao.agent.mcp import SseServer, StdioServer
from agentao.protocol.errors import InvalidParams
from agentao.server.mcp_config import fingerprint, parse_mcp_servers


def test_stdio_with_and_without_type_and_sse():
    raw = [
        {"name": "a", "command": "x", "args": ["-v"], "env": [{"name": "K", "value": "V"}]},
        {"type": "stdio", "name": "b", "command": "y", "args": [], "env": []},
        {
            "type": "sse",
            "name": "c",
            "url": "https://h/sse",
            "headers": [{"name": "A", "value": "1"}],
        },
    ]
    a, b, c = parse_mcp_servers(raw, "/w")
    assert a == StdioServer("a", "x", ("-v",), (("K", "V"),), "/w")
    assert b == StdioServer("b", "y", (), (), "/w")
    assert c == SseServer("c", "https://h/sse", (("A", "1"),))


def test_empty_and_absent():
    assert parse_mcp_servers([], "/w") == []
    assert parse_mcp_servers(None, "/w") == []


@pytest.mark.parametrize(
    "raw, field",
    [
        ("x", "mcpServers"),
        ([{"name": "a", "type": "websocket", "url": "http://h"}], "mcpServers[0].type"),
        ([{"name": "a", "type": "http", "url": "ftp://h", "headers": []}], "mcpServers[0].url"),
        ([{"name": "a", "command": "x", "env": {"K": "V"}}], "mcpServers[0].env"),
        ([{"name": "a", "command": "x", "args": [1]}], "mcpServers[0].args"),
        ([{"name": "a", "type": "sse", "url": "ftp://h"}], "mcpServers[0].url"),
        ([{"name": "a", "type": "sse", "url": "http://h", "headers": [{"name": 1}]}],
         "mcpServers[0].headers[0]"),
    ],
)  # fmt: skip
def test_each_rule_names_its_field(raw, field):
    with pytest.raises(InvalidParams) as caught:
        parse_mcp_servers(raw, "/w")
    assert caught.value.data == {"field": field}


def test_fingerprint_is_order_sensitive_and_stable():
    one = [{"name": "a", "command": "x"}, {"name": "b", "command": "y"}]
    assert fingerprint(one) == fingerprint([dict(reversed(list(d.items()))) for d in one])
    assert fingerprint(one) != fingerprint(list(reversed(one)))
    assert fingerprint(None) == fingerprint([])
