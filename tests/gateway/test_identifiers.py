"""Malformed bodies, headers and identifiers: a 4xx naming the field, and nothing runs.

Each row is (method, path, body, headers) -> (status, param). Every prompt asks the
agent to write a file under the `all` policy, so a turn that ran would leave
hello.txt in the workspace: after the table, there is none, no conversation, and
no agent session.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.conftest import LiveGateway

WRITE = [{"role": "user", "content": "write the file"}]
CHAT = {"model": "agentao", "messages": WRITE}
RESPONSE = {"model": "agentao", "input": "write the file"}
TASK = {"agent": "agentao", "prompt": "write the file"}
DEEP_1K = "[" * 1_000 + "]" * 1_000
DEEP_100K = "[" * 100_000 + "]" * 100_000

ROWS: list[tuple[str, str, Any, dict[str, Any], int, str | None]] = [
    # Responses API `text.format` that is not an object (was a 500)
    ("POST", "/v1/responses", {**RESPONSE, "text": {"format": "json"}}, {}, 400, "text.format"),
    ("POST", "/v1/responses", {**RESPONSE, "text": "json"}, {}, 400, "text"),
    (
        "POST",
        "/v1/responses",
        {**RESPONSE, "text": {"format": {"type": 5}}},
        {},
        400,
        "text.format.type",
    ),
    # JSON nested 1,000 and 100,000 deep (was a 500)
    ("POST", "/v1/chat/completions", f'{{"model":"agentao","messages":{DEEP_1K}}}', {}, 400, None),
    (
        "POST",
        "/v1/responses",
        f'{{"model":"agentao","input":{DEEP_100K}}}',
        {},
        400,
        None,
    ),
    ("POST", "/v1/tasks", f'{{"agent":"agentao","prompt":"x","extra":{DEEP_100K}}}', {}, 400, None),
    # model names with `..`, `.`, control characters (`agentao/../x` was a 500)
    ("POST", "/v1/chat/completions", {**CHAT, "model": "agentao/../x"}, {}, 400, "model"),
    ("POST", "/v1/responses", {**RESPONSE, "model": "agentao/./x"}, {}, 400, "model"),
    ("POST", "/v1/chat/completions", {**CHAT, "model": "agentao/x\n"}, {}, 400, "model"),
    ("POST", "/v1/chat/completions", {**CHAT, "model": "agentao/"}, {}, 400, "model"),
    ("POST", "/v1/tasks", {**TASK, "agent": "agentao/../../etc"}, {}, 400, "agent"),
    # session keys: echoed as a header, so CR/LF/NUL/non-ASCII are refused first (CR/LF/NUL
    # in the body's key dropped the connection after the turn ran)
    ("POST", "/v1/chat/completions", {**CHAT, "x_session_id": "a\r\nb"}, {}, 400, "x_session_id"),
    ("POST", "/v1/chat/completions", {**CHAT, "x_session_id": "a\x00b"}, {}, 400, "x_session_id"),
    ("POST", "/v1/chat/completions", {**CHAT, "x_session_id": "a b"}, {}, 400, "x_session_id"),
    ("POST", "/v1/chat/completions", {**CHAT, "x_session_id": "é"}, {}, 400, "x_session_id"),
    ("POST", "/v1/chat/completions", {**CHAT, "x_session_id": "k" * 257}, {}, 400, "x_session_id"),
    ("POST", "/v1/chat/completions", {**CHAT, "x_session_id": ""}, {}, 400, "x_session_id"),
    ("POST", "/v1/chat/completions", CHAT, {"X-Session-Id": "é".encode()}, 400, "X-Session-Id"),
    # ids of ours
    (
        "POST",
        "/v1/responses",
        {**RESPONSE, "previous_response_id": "resp_\x00"},
        {},
        400,
        "previous_response_id",
    ),
    ("POST", "/v1/tasks", {**TASK, "conversation_id": "conv_\n"}, {}, 400, "conversation_id"),
    ("GET", "/v1/responses/a%0Ab", None, {}, 400, "response_id"),
    ("POST", "/v1/responses/a%00b/cancel", None, {}, 400, "response_id"),
    ("DELETE", "/v1/responses/a%20b", None, {}, 400, "response_id"),
    ("GET", "/v1/tasks/task%01", None, {}, 400, "task_id"),
    ("GET", "/v1/tasks/a%20b/events", None, {}, 400, "task_id"),
    ("GET", "/v1/conversations/%0A/tasks", None, {}, 400, "conversation_id"),
    ("POST", "/v1/permissions/%0D", {"optionId": None}, {}, 400, "request_id"),
    # content the agent would refuse, or that is not text where text is read
    (
        "POST",
        "/v1/chat/completions",
        {**CHAT, "messages": [{"role": "user", "content": [{"type": "text", "text": {"a": 1}}]}]},
        {},
        400,
        "messages[0].content[0].text",
    ),
    (
        "POST",
        "/v1/responses",
        {**RESPONSE, "input": [{"role": "user", "content": [{"type": "input_text", "text": 5}]}]},
        {},
        400,
        "input[0].content[0].text",
    ),
    (
        "POST",
        "/v1/tasks",
        {**TASK, "prompt": [{"type": "text", "text": 5}]},
        {},
        400,
        "prompt[0].text",
    ),
    ("POST", "/v1/tasks", {**TASK, "prompt": [{"type": "nope"}]}, {}, 400, "prompt[0].type"),
    (
        "POST",
        "/v1/tasks",
        {**TASK, "prompt": [{"type": "image", "data": "AA=="}]},
        {},
        400,
        "prompt[0].mimeType",
    ),
    ("POST", "/v1/tasks", {**TASK, "prompt": [5]}, {}, 400, "prompt[0]"),
]


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A gateway nobody has sent a valid request to (so any session or file is ours)."""
    from agentao.gateway.config import GatewayConfig
    from tests.gateway.conftest import scripted_spec

    tmp = tmp_path_factory.mktemp("identifiers")
    live = LiveGateway(GatewayConfig(agents=(scripted_spec(tmp),)), tmp / "gw.sqlite3").start()
    yield live
    live.stop()


def send(gw: LiveGateway, method: str, path: str, body: Any, headers: dict[str, Any]) -> Any:
    content = body if isinstance(body, str) or body is None else json.dumps(body)
    sent = {"Content-Type": "application/json", "X-Permission-Policy": "all", **headers}
    with gw.http() as http:
        return http.request(method, path, content=content, headers=sent)


@pytest.mark.parametrize(("method", "path", "body", "headers", "status", "param"), ROWS)
def test_a_malformed_request_is_a_4xx_naming_the_field(
    fresh: LiveGateway,
    method: str,
    path: str,
    body: Any,
    headers: dict[str, Any],
    status: int,
    param: str | None,
) -> None:
    reply = send(fresh, method, path, body, headers)
    assert reply.status_code == status, reply.text
    error = reply.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    if param is None:
        assert error["code"] == "json_too_deep"


def raw_request(gw: LiveGateway, session_header: bytes) -> bytes:
    body = json.dumps(CHAT).encode()
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
        b"Content-Type: application/json\r\nX-Permission-Policy: all\r\n"
        b"X-Session-Id: %s\r\nContent-Length: %d\r\n\r\n"
    ) % (gw.port, session_header, len(body))
    with socket.create_connection(("127.0.0.1", gw.port)) as sock:
        sock.sendall(head + body)
        reply = b""
        while chunk := sock.recv(65536):  # the server closes the connection after the 400
            reply += chunk
    return reply


@pytest.mark.parametrize("value", [b"a\rb", b"a\nb", b"a\x00b", b"\x00", b"a\x01b", b"a\x7fb"])
def test_control_characters_in_the_session_header_are_a_400_over_a_raw_socket(
    fresh: LiveGateway, value: bytes
) -> None:
    # The HTTP parser refuses these before any route runs (a field value holds no control
    # character but HTAB); the answer is ours, in the usual shape.
    head, _, body = raw_request(fresh, value).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert b"content-type: application/json" in head.lower()
    assert json.loads(body)["error"]["code"] == "invalid_http_request"


def test_nothing_ran_for_any_of_them(fresh: LiveGateway) -> None:
    for method, path, body, headers, _status, _param in ROWS:
        send(fresh, method, path, body, headers)
    for value in (b"a\rb", b"a\nb", b"a\x00b", b"a\x01b", b"a\x7fb"):
        raw_request(fresh, value)
    work = Path(fresh.config.agents[0].cwd)
    assert not (work / "hello.txt").exists()
    assert fresh.gateway.pools["agentao"].workers[0].sessions == set()
    with fresh.http() as http:
        assert http.get("/v1/conversations").json()["data"] == []
