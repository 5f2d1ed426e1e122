"""Per-connection protocol version (protocol/versions.py, Connection.version): `initialize`
settles it, and the settled version's method table decodes everything after."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentao.protocol import methods as v1_methods
from agentao.protocol import schema as v1
from agentao.protocol.connection import Connection, Reject, Request
from agentao.protocol.v2 import schema as v2
from agentao.protocol.versions import SUPPORTED, negotiate

V2_INFO = {"name": "test-client", "version": "1"}


def line(method: str, params: Any, msg_id: int = 1) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()


def initialize(conn: Connection, params: Any) -> Request | Reject:
    event = conn.receive(line("initialize", params))
    assert isinstance(event, Request | Reject)
    return event


def initialized(version: int) -> Connection:
    conn = Connection("agent", speaks=SUPPORTED)
    params = (
        {"protocolVersion": version, "info": V2_INFO} if version > 1 else {"protocolVersion": 1}
    )
    request = initialize(conn, params)
    assert isinstance(request, Request)
    conn.reply(request, {})
    return conn


@pytest.mark.parametrize(("requested", "settled"), [(1, 1), (2, 2), (7, 2), (65535, 2)])
def test_initialize_settles_the_highest_version_at_or_below_the_one_asked(
    requested: int, settled: int
) -> None:
    conn = Connection("agent", speaks=SUPPORTED)
    request = initialize(conn, {"protocolVersion": requested, "info": V2_INFO})
    assert isinstance(request, Request) and conn.version == settled
    expected = v1.InitializeRequest if settled == 1 else v2.InitializeRequest
    assert type(request.params) is expected


def test_a_v1_client_is_read_with_v1_types_exactly() -> None:
    conn = Connection("agent", speaks=SUPPORTED)
    caps = {"fs": {"readTextFile": True, "writeTextFile": False}, "terminal": True}
    request = initialize(conn, {"protocolVersion": 1, "clientCapabilities": caps})
    assert isinstance(request, Request)
    assert request.params.client_capabilities.fs.read_text_file is True
    assert conn.methods is v1_methods.METHODS


def test_a_version_below_every_one_we_speak_is_32022_with_the_schema_data() -> None:
    conn = Connection("agent", speaks=SUPPORTED)
    reject = initialize(conn, {"protocolVersion": 0, "info": V2_INFO})
    assert isinstance(reject, Reject) and conn.version is None
    reply = json.loads(reject.reply)
    assert reply["id"] == 1 and reply["error"]["code"] == -32022
    assert reply["error"]["data"] == {"requested": 0, "supported": [1, 2]}


@pytest.mark.parametrize(
    ("version", "message"),
    [
        (True, "Expected `int`, got `bool` - at `$.protocolVersion`"),
        ("2", "Expected `int`, got `str` - at `$.protocolVersion`"),
        (2.0, "Expected `int`, got `float` - at `$.protocolVersion`"),
        (70000, "Expected `int` <= 65535 - at `$.protocolVersion`"),
        (-1, "Expected `int` >= 0 - at `$.protocolVersion`"),
    ],
)
def test_an_odd_version_is_32602_as_on_a_v1_only_connection(version: Any, message: str) -> None:
    replies = []
    for conn in (Connection("agent", speaks=SUPPORTED), Connection("agent")):
        reject = initialize(conn, {"protocolVersion": version, "info": V2_INFO})
        assert isinstance(reject, Reject) and conn.version is None
        replies.append(json.loads(reject.reply)["error"])
    assert replies[0] == replies[1]
    assert replies[0]["code"] == -32602 and message in replies[0]["message"]


def test_a_missing_version_is_32602() -> None:
    reject = initialize(Connection("agent", speaks=SUPPORTED), {"info": V2_INFO})
    assert isinstance(reject, Reject)
    assert json.loads(reject.reply)["error"]["code"] == -32602
    reject = initialize(Connection("agent", speaks=SUPPORTED), [2])
    assert (
        json.loads(reject.reply)["error"]["message"] == 'Invalid params: "params" must be an object'
    )


def test_a_v2_initialize_without_info_is_32602() -> None:
    reject = initialize(Connection("agent", speaks=SUPPORTED), {"protocolVersion": 2})
    assert isinstance(reject, Reject)
    error = json.loads(reject.reply)["error"]
    assert error["code"] == -32602 and "`info`" in error["message"]


def test_after_a_v2_initialize_v1_only_methods_are_32601() -> None:
    conn = initialized(2)
    for method in ("session/load", "session/set_mode", "authenticate"):
        reject = conn.receive(line(method, {"sessionId": "s", "cwd": "/w"}, 2))
        assert isinstance(reject, Reject), method
        assert json.loads(reject.reply)["error"] == {
            "code": -32601,
            "message": f"Method not found: {method}",
            "data": {"method": method},
        }


def test_after_a_v2_initialize_params_are_v2_types() -> None:
    conn = initialized(2)
    request = conn.receive(line("session/resume", {"sessionId": "s", "cwd": "/w"}, 2))
    assert isinstance(request, Request) and type(request.params) is v2.ResumeSessionRequest
    request = conn.receive(line("session/new", {"cwd": "/w"}, 3))  # v2: mcpServers optional
    assert isinstance(request, Request) and type(request.params) is v2.NewSessionRequest


def test_after_a_v1_initialize_v1_methods_stay() -> None:
    conn = initialized(1)
    request = conn.receive(line("session/load", {"sessionId": "s", "cwd": "/w", "mcpServers": []}))
    assert isinstance(request, Request) and type(request.params) is v1.LoadSessionRequest


def test_a_v1_only_connection_answers_any_version_with_v1_as_before() -> None:
    conn = Connection("agent")
    for requested in (0, 2, 7):
        request = initialize(conn, {"protocolVersion": requested})
        assert isinstance(request, Request) and type(request.params) is v1.InitializeRequest
    assert conn.version is None and conn.methods is v1_methods.METHODS


def test_negotiate() -> None:
    assert negotiate(3, (1, 2)) == 2
    assert negotiate(1, (1, 2)) == 1
    assert negotiate(2, (1,)) == 1
