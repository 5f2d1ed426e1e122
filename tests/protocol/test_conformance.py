"""Wire conformance as data: each row is (lines in -> replies expected), one test runs them all.

A row's `expect` lists, in order, the replies the agent side must write; each is
a partial match (every key given must be equal; `"code"` compares the error
code). `None` in `expect` means: this input gets no reply at all. Rows run on
an in-memory agent endpoint with a small handler (see `RowAgent`) and a line
cap of 4 KiB so the oversize rows stay small.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import msgspec
import pytest

from agentao.protocol.endpoint import Endpoint, Limits
from agentao.protocol.errors import InvalidParams
from tests.protocol.memory import pipe

INIT = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}'
NEW = '{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}'
CAP = 1024 * 1024
PROMPT = '{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":%s}]}}'
BIG = (  # a session/prompt three times the cap, its id placed by the row
    '{"jsonrpc":"2.0",%s"method":"session/prompt","params":{"sessionId":"s","prompt":'
    '[{"type":"text","text":"' + "x" * (CAP * 3) + '"}]}%s}'
)


def err(code: int, id: Any = None, **more: Any) -> dict[str, Any]:
    return {"id": id, "error": {"code": code, **more}}


def ok(id: Any, **result: Any) -> dict[str, Any]:
    return {"id": id, "result": result}


ROWS: list[tuple[str, list[str | bytes], list[dict[str, Any] | None]]] = [
    # -- framing and JSON ------------------------------------------------------------
    ("bad json", ["{not json"], [err(-32700)]),
    ("truncated json", ['{"jsonrpc":"2.0","id":1,'], [err(-32700)]),
    ("invalid utf-8 is a bad line", [b'{"jsonrpc":"2.0","id":1,"method":"x\xff"}'], [err(-32700)]),
    ("invalid utf-8 then life goes on", [b"\xff\xfe\n" + INIT.encode()], [err(-32700), ok(1)]),
    ("deeply nested", ["[" * 100_000 + "]" * 100_000], [err(-32700)]),
    ("deeply nested object", ['{"a":' * 100_000 + "1" + "}" * 100_000], [err(-32700)]),
    ("oversize line then next answered", ['"' + "x" * (CAP * 3) + '"', INIT], [err(-32600), ok(1)]),
    ("blank lines ignored", ["", "   ", INIT], [ok(1)]),
    ("CRLF accepted", [INIT + "\r"], [ok(1)]),
    ("NaN is not JSON", ['{"jsonrpc":"2.0","id":1,"method":"initialize","x":NaN}'], [err(-32700)]),
    (
        "valid surrogate pair",
        [INIT.replace("{}}", '{},"clientInfo":{"name":"\\ud83d\\ude00","version":"1"}}')],
        [ok(1)],
    ),
    # -- valid JSON our decoder refuses: answered with the request's own id ----------------
    (
        "lone surrogate in params",
        [INIT, PROMPT % '"\\ud800"'],
        [ok(1), err(-32602, 3, data={"field": "prompt[0].text", "reason": "lone surrogate"})],
    ),
    (
        "lone low surrogate in params",
        [INIT, PROMPT % '"a\\udc00b"'],
        [ok(1), err(-32602, 3, data={"field": "prompt[0].text"})],
    ),
    (
        "lone surrogate in a params key",
        [
            INIT,
            '{"jsonrpc":"2.0","id":3,"method":"session/cancel","params":{"sessionId":"s","\\ud800":1}}',
        ],
        [ok(1), err(-32602, 3, data={"reason": "lone surrogate"})],
    ),
    (
        "number out of range in params",
        [INIT, PROMPT % "1e400"],
        [ok(1), err(-32602, 3, data={"field": "prompt[0].text", "reason": "number out of range"})],
    ),
    (
        "5,000-digit integer in params",
        [INIT, PROMPT % ("9" * 5000)],
        [ok(1), err(-32602, 3, data={"reason": "number out of range"})],
    ),
    ("damaged params before initialize", [PROMPT % '"\\ud800"'], [err(-32002, 3)]),
    (
        "damaged params of an unknown method",
        [INIT, '{"jsonrpc":"2.0","id":3,"method":"no/such","params":{"a":1e400}}'],
        [ok(1), err(-32601, 3)],
    ),
    (
        "lone surrogate in method",
        [INIT, '{"jsonrpc":"2.0","id":3,"method":"session/\\ud800"}'],
        [ok(1), err(-32601, 3)],
    ),
    (
        "lone surrogate in jsonrpc",
        ['{"jsonrpc":"2.0\\ud800","id":3,"method":"initialize"}'],
        [err(-32600, 3)],
    ),
    (
        "lone surrogate in id",
        ['{"jsonrpc":"2.0","id":"\\ud800","method":"initialize"}'],
        [err(-32600)],
    ),
    ("huge number id", ['{"jsonrpc":"2.0","id":1e999,"method":"initialize"}'], [err(-32600)]),
    (
        "damaged notification dropped",
        ['{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"\\ud800"}}', INIT],
        [ok(1)],
    ),
    (
        "deeply nested params, id answered",
        [
            '{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"a":'
            + "[" * 100_000
            + "]" * 100_000
            + "}}"
        ],
        [err(-32600, 9)],
    ),
    # -- oversize lines: the id is read from the ends that framing keeps --------------------
    (
        "oversize request, id first",
        [BIG % ('"id":7,', ""), INIT],
        [err(-32600, 7, data={"maxLineBytes": CAP}), ok(1)],
    ),
    ("oversize request, id last", [BIG % ("", ',"id":"last"'), INIT], [err(-32600, "last"), ok(1)]),
    ("oversize request, ids disagree", [BIG % ('"id":7,', ',"id":8')], [err(-32600)]),
    ("oversize request, no id", [BIG % ("", "")], [err(-32600)]),
    (
        "oversize request, id only nested",
        [BIG.replace('"text":"', '"id":4,"text":"') % ("", "")],
        [err(-32600)],
    ),
    # -- envelope --------------------------------------------------------------------
    ("json array", ["[1,2]"], [err(-32600)]),
    ("empty array (batch)", ["[]"], [err(-32600)]),
    ("array of requests (batch)", ["[" + INIT + "]"], [err(-32600)]),
    ("string", ['"hello"'], [err(-32600)]),
    ("number", ["42"], [err(-32600)]),
    ("null", ["null"], [err(-32600)]),
    (
        "missing jsonrpc",
        ['{"id":1,"method":"initialize","params":{"protocolVersion":1}}'],
        [err(-32600, 1)],
    ),
    ("wrong jsonrpc", ['{"jsonrpc":"1.0","id":1,"method":"initialize"}'], [err(-32600, 1)]),
    ("jsonrpc as number", ['{"jsonrpc":2.0,"id":7,"method":"initialize"}'], [err(-32600, 7)]),
    ("no method, not a response", ['{"jsonrpc":"2.0","id":3}'], [err(-32600, 3)]),
    ("method not a string", ['{"jsonrpc":"2.0","id":3,"method":5}'], [err(-32600, 3)]),
    ("empty method", ['{"jsonrpc":"2.0","id":3,"method":""}'], [err(-32600, 3)]),
    ("float id", ['{"jsonrpc":"2.0","id":1.5,"method":"initialize"}'], [err(-32600)]),
    ("bool id", ['{"jsonrpc":"2.0","id":true,"method":"initialize"}'], [err(-32600)]),
    ("object id", ['{"jsonrpc":"2.0","id":{},"method":"initialize"}'], [err(-32600)]),
    (
        "result and error both",
        ['{"jsonrpc":"2.0","id":9,"result":{},"error":{}}'],
        [err(-32600, 9)],
    ),
    ("response to unknown id is dropped", ['{"jsonrpc":"2.0","id":99,"result":{}}', INIT], [ok(1)]),
    (
        "params not an object",
        ['{"jsonrpc":"2.0","id":1,"method":"initialize","params":[1]}'],
        [err(-32602, 1)],
    ),
    # -- ids -------------------------------------------------------------------------
    ("id 0", [INIT.replace('"id":1', '"id":0')], [ok(0)]),
    ("negative id", [INIT.replace('"id":1', '"id":-5')], [ok(-5)]),
    ("string id", [INIT.replace('"id":1', '"id":"abc"')], [ok("abc")]),
    ("null id", [INIT.replace('"id":1', '"id":null')], [ok(None)]),
    # -- methods and lifecycle -------------------------------------------------------
    (
        "unknown method",
        [INIT, '{"jsonrpc":"2.0","id":5,"method":"nope/nothing"}'],
        [ok(1), err(-32601, 5)],
    ),
    (
        "unknown method before initialize",
        ['{"jsonrpc":"2.0","id":5,"method":"nope"}'],
        [err(-32601, 5)],
    ),
    (
        "unknown extension request",
        [INIT, '{"jsonrpc":"2.0","id":5,"method":"_x.io/thing"}'],
        [ok(1), err(-32601, 5)],
    ),
    (
        "known extension request",
        [INIT, '{"jsonrpc":"2.0","id":5,"method":"_test/echo","params":{"a":1}}'],
        [ok(1), ok(5, a=1)],
    ),
    ("unknown notification ignored", ['{"jsonrpc":"2.0","method":"nope/nothing"}', INIT], [ok(1)]),
    (
        "unknown ext notification ignored",
        ['{"jsonrpc":"2.0","method":"_x/y","params":{}}', INIT],
        [ok(1)],
    ),
    (
        "client-side method sent to agent",
        [INIT, '{"jsonrpc":"2.0","id":5,"method":"fs/read_text_file","params":{}}'],
        [ok(1), err(-32601, 5)],
    ),
    ("session/new before initialize", [NEW], [err(-32002, 2, message="Server not initialized")]),
    (
        "session/prompt before initialize",
        [
            '{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}'
        ],
        [err(-32002, 4)],
    ),
    ("session/new after initialize", [INIT, NEW], [ok(1), ok(2, sessionId="s-1")]),
    (
        "failed initialize does not initialize",
        ['{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":true}}', NEW],
        [err(-32602, 1), err(-32002, 2)],
    ),
    (
        "notification before initialize ignored",
        ['{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}', INIT],
        [ok(1)],
    ),
    # -- params ----------------------------------------------------------------------
    (
        "protocolVersion bool",
        ['{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":true}}'],
        [err(-32602, 1)],
    ),
    (
        "protocolVersion string",
        ['{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1"}}'],
        [err(-32602, 1)],
    ),
    (
        "protocolVersion missing",
        ['{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'],
        [err(-32602, 1)],
    ),
    (
        "clientCapabilities missing is fine",
        ['{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'],
        [ok(1)],
    ),
    (
        "clientCapabilities not an object",
        [
            '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":3}}'
        ],
        [err(-32602, 1)],
    ),
    (
        "unknown fields tolerated",
        [
            '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"future":{"x":1}},"extra":1}'
        ],
        [ok(1)],
    ),
    (
        "session/new missing cwd",
        [INIT, '{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"mcpServers":[]}}'],
        [ok(1), err(-32602, 2)],
    ),
    # -- handler outcomes ------------------------------------------------------------
    (
        "handler raises AcpError",
        [
            INIT,
            '{"jsonrpc":"2.0","id":6,"method":"session/set_mode","params":{"sessionId":"s","modeId":""}}',
        ],
        [ok(1), err(-32602, 6, message="modeId must not be empty")],
    ),
    (
        "handler crashes",
        [
            INIT,
            '{"jsonrpc":"2.0","id":6,"method":"session/set_mode","params":{"sessionId":"s","modeId":"crash"}}',
        ],
        [ok(1), err(-32603, 6)],
    ),
    (
        "cancel_request for unknown id",
        ['{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":42}}', INIT],
        [ok(1)],
    ),
    (
        "session/cancel as request gets {}",
        [INIT, '{"jsonrpc":"2.0","id":8,"method":"session/cancel","params":{"sessionId":"s"}}'],
        [ok(1), ok(8)],
    ),
]


class RowAgent:
    """Just enough of an agent for the conformance rows."""

    def __init__(self) -> None:
        self.extensions = {"_test/echo": self._echo}

    async def initialize(self, params: Any) -> dict[str, Any]:
        return {"protocolVersion": 1}

    async def session_new(self, params: Any) -> dict[str, Any]:
        return {"sessionId": "s-1"}

    async def session_set_mode(self, params: Any) -> dict[str, Any]:
        if params.mode_id == "":
            raise InvalidParams("modeId must not be empty")
        if params.mode_id == "crash":
            raise RuntimeError("secret detail that must not reach the wire")
        return {}

    async def session_cancel(self, params: Any) -> None:
        return None

    async def _echo(self, params: dict[str, Any]) -> dict[str, Any]:
        return params


def matches(actual: dict[str, Any], expected: dict[str, Any]) -> bool:
    for key, value in expected.items():
        if isinstance(value, dict):
            if not isinstance(actual.get(key), dict) or not matches(actual[key], value):
                return False
        elif key not in actual or actual[key] != value:
            return False
    return True


async def run_rows(lines: list[str | bytes]) -> list[dict[str, Any]]:
    in_reader, in_writer = pipe()
    _, out_writer = pipe()
    endpoint = Endpoint(RowAgent(), role="agent", limits=Limits(max_line_bytes=CAP))
    for line in lines:
        in_writer.write((line.encode() if isinstance(line, str) else line) + b"\n")
    in_writer.close()
    await asyncio.wait_for(endpoint.run(in_reader, out_writer), 10)
    return [json.loads(line) for line in b"".join(out_writer.log).splitlines()]


@pytest.mark.parametrize(("lines", "expect"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
async def test_conformance(lines: list[str | bytes], expect: list[dict[str, Any] | None]) -> None:
    replies = await run_rows(lines)
    wanted = [e for e in expect if e is not None]
    assert len(replies) == len(wanted), replies
    for reply, expected in zip(replies, wanted, strict=True):
        assert reply["jsonrpc"] == "2.0"
        assert matches(reply, expected), (reply, expected)
        assert "Traceback" not in json.dumps(reply)
        assert "secret detail" not in json.dumps(reply)


def test_every_reply_is_one_line() -> None:
    replies = asyncio.run(run_rows([INIT, "[" * 100_000]))
    assert len(replies) == 2
    assert msgspec.json.encode(replies[0]).count(b"\n") == 0
