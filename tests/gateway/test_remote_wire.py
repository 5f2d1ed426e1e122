"""Remote ACP obeys the wire rules of stdio: conformance as data, over the real gateway.

Each row of `ROWS` is (frames in -> replies expected), the remote twin of
tests/protocol/test_conformance.py: a WebSocket to a live gateway sends the frames,
then a marker request, and the replies before the marker's must match (a partial
match: every key given must be equal; `message` is a part of the error's message).
`INIT` in a row is the `initialize` request; rows that start without it speak to a
connection not yet open. The HTTP transport gets the same rules in its own tests
(a connection is opened by a POST, so what comes before `initialize` is the body of a
400), and `$/cancel_request` cancels a running prompt over both transports.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
import websockets

from tests.gateway.acp_peers import RawPeer, chunk_text, reply_to, until
from tests.gateway.conftest import LiveGateway

pytestmark = pytest.mark.timeout(60)

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
V2_INFO = {"name": "wire-test", "version": "1"}  # v2's initialize requires `info`
END = {"jsonrpc": "2.0", "id": "end", "method": "session/list", "params": {}}


def init(**params: Any) -> dict[str, Any]:
    return {**INIT, "params": params}


def call(request_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    return message if params is None else {**message, "params": params}


def err(code: int, request_id: Any = None, message: str | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code}
    if message is not None:
        error["message"] = message
    return {"id": request_id, "error": error}


def ok(request_id: Any, **result: Any) -> dict[str, Any]:
    return {"id": request_id, "result": result}


PROMPT_BAD = '{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":%s}]}}'

Frame = dict[str, Any] | str
ROWS: list[tuple[str, list[Frame], list[dict[str, Any]]]] = [
    # -- before initialize: a new connection, refused as stdio refuses (and it lives on) --
    ("protocolVersion bool", [init(protocolVersion=True), INIT], [err(-32602, 1), ok(1)]),
    ("protocolVersion string", [init(protocolVersion="1")], [err(-32602, 1, "protocolVersion")]),
    ("protocolVersion missing", [init()], [err(-32602, 1, "protocolVersion")]),
    ("protocolVersion not a uint16", [init(protocolVersion=70000)], [err(-32602, 1)]),
    ("protocolVersion negative", [init(protocolVersion=-1)], [err(-32602, 1)]),
    (
        "protocolVersion 2 is served",
        [init(protocolVersion=2, info=V2_INFO)],
        [ok(1, protocolVersion=2)],
    ),
    (
        "protocolVersion 7 negotiates to 2",
        [init(protocolVersion=7, info=V2_INFO)],
        [ok(1, protocolVersion=2)],
    ),
    ("protocolVersion 1 stays 1", [init(protocolVersion=1)], [ok(1, protocolVersion=1)]),
    (
        "clientCapabilities not an object",
        [init(protocolVersion=1, clientCapabilities=3)],
        [err(-32602, 1, "clientCapabilities")],
    ),
    (
        "session/new before initialize",
        [call(2, "session/new", {"cwd": "/tmp", "mcpServers": []}), INIT],
        [err(-32002, 2, "Server not initialized"), ok(1)],
    ),
    ("unknown method before initialize", [call(5, "nope")], [err(-32601, 5)]),
    ("bad json before initialize", ["{not json", INIT], [err(-32700), ok(1)]),
    ("notification before initialize ignored", [{"jsonrpc": "2.0", "method": "x"}, INIT], [ok(1)]),
    ("null id initialize", [{**INIT, "id": None}], [ok(None)]),
    # -- ids: null is a request with a null id; a bool or a float is no id at all ---------
    ("null id request", [INIT, call(None, "session/list", {})], [ok(1), ok(None)]),
    ("bool id", [INIT, call(True, "session/list", {})], [ok(1), err(-32600, None)]),
    ("float id", [INIT, call(1.5, "session/list", {})], [ok(1), err(-32600, None)]),
    # -- methods ------------------------------------------------------------------------
    ("unknown method", [INIT, call(5, "nope/nothing")], [ok(1), err(-32601, 5)]),
    (
        "client-side method sent to the gateway",
        [INIT, call(5, "fs/read_text_file", {"sessionId": "s", "path": "/etc/passwd"})],
        [ok(1), err(-32601, 5)],
    ),
    ("bad json", [INIT, "{not json"], [ok(1), err(-32700)]),
    ("json array", [INIT, "[1,2]"], [ok(1), err(-32600)]),
    (
        "cancel_request for an unknown id ignored",
        [INIT, {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 42}}],
        [ok(1)],
    ),
    (
        "session/cancel as request gets {}",
        [INIT, call(8, "session/cancel", {"sessionId": "s"})],
        [ok(1), ok(8)],
    ),
    # -- params checked against the schema, -32602 naming the field --------------------
    (
        "session/new without cwd",
        [INIT, call(2, "session/new", {"mcpServers": []})],
        [ok(1), err(-32602, 2, "cwd")],
    ),
    (
        "session/new with an mcpServers item of no known shape",
        [INIT, call(2, "session/new", {"cwd": "/tmp", "mcpServers": [{"name": "x"}]})],
        [ok(1), err(-32602, 2, "mcpServers")],
    ),
    (
        "session/load without cwd",
        [INIT, call(2, "session/load", {"sessionId": "s", "mcpServers": []})],
        [ok(1), err(-32602, 2, "cwd")],
    ),
    (
        "session/resume without cwd",
        [INIT, call(2, "session/resume", {"sessionId": "s"})],
        [ok(1), err(-32602, 2, "cwd")],
    ),
    (
        "session/prompt with a prompt not a list",
        [INIT, call(3, "session/prompt", {"sessionId": "s", "prompt": "hi"})],
        [ok(1), err(-32602, 3, "prompt")],
    ),
    (
        "session/prompt with a block of no text",
        [INIT, call(3, "session/prompt", {"sessionId": "s", "prompt": [{"type": "text"}]})],
        [ok(1), err(-32602, 3, "text")],
    ),
    (
        "session/list with a cursor not a string",
        [INIT, call(4, "session/list", {"cursor": 5})],
        [ok(1), err(-32602, 4, "cursor")],
    ),
    (
        "session/close without sessionId",
        [INIT, call(6, "session/close", {})],
        [ok(1), err(-32602, 6, "sessionId")],
    ),
    (
        "session/cancel request without sessionId",
        [INIT, call(8, "session/cancel", {})],
        [ok(1), err(-32602, 8, "sessionId")],
    ),
    ("params not an object", [INIT, call(4, "session/list", [1])], [ok(1), err(-32602, 4)]),
    # -- valid JSON the fast decoder refuses: salvaged, answered with the request's id --
    (
        "lone surrogate in params",
        [INIT, PROMPT_BAD % '"\\ud800"'],
        [ok(1), err(-32602, 3, "prompt[0].text")],
    ),
    ("number out of range in params", [INIT, PROMPT_BAD % "1e400"], [ok(1), err(-32602, 3)]),
    ("deeply nested", [INIT, "[" * 100_000 + "]" * 100_000], [ok(1), err(-32700)]),
]


def matches(actual: Any, expected: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and matches(actual[key], value) for key, value in expected.items()
        )
    if isinstance(expected, str) and isinstance(actual, str):
        return expected in actual  # a message names the field: a part of it is enough
    return actual == expected and type(actual) is type(expected)


async def exchange(gw: LiveGateway, frames: list[Frame], wanted: int) -> list[dict[str, Any]]:
    """Send `frames` (then the marker, once initialized) over a new WebSocket; the replies
    until the marker's and at least `wanted` others have come."""
    socket = await websockets.connect(gw.ws_url("/acp"), max_size=None)
    try:
        for frame in frames:
            await socket.send(frame if isinstance(frame, str) else json.dumps(frame))
        replies: list[dict[str, Any]] = []
        initialized = marked = False
        while True:
            reply = json.loads(await socket.recv())
            if reply.get("id") == "end" and "method" not in reply:
                marked = True  # requests run side by side: a reply may still come after it
            elif "method" not in reply:  # (the gateway's own notifications: none expected)
                replies.append(reply)
            if marked and len(replies) >= wanted:
                return replies
            if "method" in reply or reply.get("id") == "end":
                continue
            if not initialized and "result" in reply and "agentCapabilities" in reply["result"]:
                initialized = True
                await socket.send(json.dumps(END))  # in line behind every frame of the row
            if not initialized and len(replies) == wanted:
                return replies  # nothing opened it: no marker can be answered
    finally:
        await socket.close()


@pytest.mark.parametrize(("frames", "expect"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
async def test_remote_conformance(
    shared_gateway: LiveGateway, frames: list[Frame], expect: list[dict[str, Any]]
) -> None:
    replies = await asyncio.wait_for(exchange(shared_gateway, frames, len(expect)), 30)
    assert len(replies) == len(expect), replies
    for reply, expected in zip(replies, expect, strict=True):
        assert reply["jsonrpc"] == "2.0"
        assert matches(reply, expected), (reply, expected)


# ---- HTTP: the POST that opens a connection -------------------------------------------------


async def test_http_refuses_before_initialize_as_stdio_does(shared_gateway: LiveGateway) -> None:
    """No connection yet: a bad `initialize` or any other request is answered with the
    stdio agent's error (status 400, no connection opened); an `initialize` with a null
    id is a request like any other (the control: it opens one)."""
    gw = shared_gateway
    async with httpx.AsyncClient(timeout=30) as http:
        for version in (True, "1", None, 70000):
            body = {**INIT, "id": 0, "params": {"protocolVersion": version}}
            if version is None:
                body["params"] = {}
            refused = await http.post(f"{gw.url}/acp", json=body)
            assert refused.status_code == 400, refused.text
            assert refused.json()["id"] == 0 and refused.json()["error"]["code"] == -32602
            assert "protocolVersion" in refused.json()["error"]["message"]
            assert "acp-connection-id" not in refused.headers
        early = await http.post(f"{gw.url}/acp", json=call(2, "session/list", {}))
        assert early.status_code == 400
        assert early.json() == {
            "jsonrpc": "2.0",
            "id": 2,
            "error": {"code": -32002, "message": "Server not initialized"},
        }
        opened = await http.post(f"{gw.url}/acp", json={**INIT, "id": None})
        assert opened.status_code == 200, opened.text
        assert opened.json()["id"] is None and "agentCapabilities" in opened.json()["result"]
        connection = {"Acp-Connection-Id": opened.headers["acp-connection-id"]}
        assert (await http.delete(f"{gw.url}/acp", headers=connection)).status_code == 202


async def test_http_reads_an_open_connections_messages_as_stdio_does(
    shared_gateway: LiveGateway,
) -> None:
    peer = RawPeer(f"{shared_gateway.url}/acp")
    try:
        assert (await peer.initialize()).status_code == 200
        async with peer.stream() as events:
            await peer.send(call(None, "session/list", {}))
            listed = (await until(events, lambda e: "id" in e.message))[-1].message
            assert listed["id"] is None and "sessions" in listed["result"]
            await peer.send(call(True, "session/list", {}))
            bad_id = (await until(events, lambda e: "id" in e.message))[-1].message
            assert bad_id["id"] is None and bad_id["error"]["code"] == -32600
            await peer.send(call(4, "session/list", {"cursor": 5}))
            bad = (await until(events, reply_to(4)))[-1].message
            assert bad["error"]["code"] == -32602 and "cursor" in bad["error"]["message"]
    finally:
        await peer.close()


# ---- $/cancel_request ------------------------------------------------------------------------


SLOW = [{"type": "text", "text": "slow please"}]


async def test_cancel_request_cancels_a_running_prompt_over_http(
    shared_gateway: LiveGateway,
) -> None:
    gw = shared_gateway
    peer = RawPeer(f"{gw.url}/acp")
    try:
        await peer.initialize()
        async with peer.stream() as events:
            new_id, _ = await peer.post("session/new", {"cwd": _work(gw), "mcpServers": []})
            sid = (await until(events, reply_to(new_id)))[-1].message["result"]["sessionId"]
        async with peer.stream(sid) as events:
            prompt_id, _ = await peer.post(
                "session/prompt", {"sessionId": sid, "prompt": SLOW}, session=sid
            )
            seen = await until(events, lambda e: "tick" in chunk_text([e]))
            cancel = {"requestId": prompt_id}
            await peer.post("$/cancel_request", cancel, notify=True)
            rest = await until(events, reply_to(prompt_id))
            assert rest[-1].message["error"] == {"code": -32800, "message": "Request cancelled"}
            assert len(chunk_text(seen + rest)) < len("tick " * 150)
            # A finished request's id is ignored; the session goes on (the control).
            await peer.post("$/cancel_request", cancel, notify=True)
            brief_id, _ = await peer.post(
                "session/prompt",
                {"sessionId": sid, "prompt": [{"type": "text", "text": "brief"}]},
                session=sid,
            )
            done = (await until(events, reply_to(brief_id)))[-1].message
            assert done["result"]["stopReason"] == "end_turn"
    finally:
        await peer.close()
    assert await _first_task_ending(gw, sid) == "cancelled"


async def test_cancel_request_cancels_a_running_prompt_over_a_websocket(
    shared_gateway: LiveGateway,
) -> None:
    gw = shared_gateway
    async with websockets.connect(gw.ws_url("/acp")) as socket:
        await socket.send(json.dumps(INIT))
        new = call(2, "session/new", {"cwd": _work(gw), "mcpServers": []})
        await socket.send(json.dumps(new))
        sid = (await _reply(socket, 2))["result"]["sessionId"]
        await socket.send(json.dumps(call(3, "session/prompt", {"sessionId": sid, "prompt": SLOW})))
        text = ""
        while "tick" not in text:
            frame = json.loads(await socket.recv())
            update = (frame.get("params") or {}).get("update") or {}
            text += (update.get("content") or {}).get("text", "")
        cancel = {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 3}}
        await socket.send(json.dumps(cancel))
        assert (await _reply(socket, 3))["error"]["code"] == -32800
    assert await _first_task_ending(gw, sid) == "cancelled"


def _work(gw: LiveGateway) -> str:
    return gw.config.agents[0].cwd


async def _reply(socket: Any, request_id: Any) -> dict[str, Any]:
    while True:
        frame = json.loads(await socket.recv())
        if frame.get("id") == request_id and "method" not in frame:
            return frame


async def _first_task_ending(gw: LiveGateway, sid: str) -> str:
    """How the session's first turn ended, read from its task stream (the last frame)."""
    conv = gw.run(gw.gateway.conversations.by_session("agentao", sid))
    with gw.http() as http:
        tasks = http.get(f"/v1/conversations/{conv.id}/tasks").json()["data"]
    first = min(tasks, key=lambda t: t["created_at"])
    async with websockets.connect(gw.ws_url(f"/v1/tasks/{first['id']}/stream")) as stream:
        frames = [json.loads(f) async for f in stream]
    ended = [f for f in frames if f["type"] == "task-ended"]
    assert len(ended) == 1, frames
    return ended[0]["stopReason"]


def test_one_connection_class_in_the_codebase() -> None:
    """The protocol's `Connection` is the only one; a remote client is a `RemoteClient`."""
    import ast
    from pathlib import Path

    import agentao

    named = [
        str(path.relative_to(Path(agentao.__file__).parent))
        for path in Path(agentao.__file__).parent.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef) and node.name == "Connection"
    ]
    assert named == ["protocol/connection.py"]
