"""The synchronous initialize (server/handshake.py) over real OS pipes."""

from __future__ import annotations

import json
import os

from agentao.protocol.connection import Connection
from agentao.server.handshake import PrefixedReader, handshake


def run(lines: bytes) -> tuple[bytes, list[dict], Connection]:
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    os.write(in_w, lines)
    os.close(in_w)
    conn = Connection("agent")
    leftover = handshake(conn, lambda params: {"protocolVersion": 1}, in_r, out_w)
    os.close(out_w)
    replies = os.read(out_r, 1 << 20).decode().splitlines()
    os.close(in_r)
    os.close(out_r)
    return leftover, [json.loads(r) for r in replies], conn


def line(obj) -> bytes:
    return json.dumps(obj).encode() + b"\n"


INIT = line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
NEW = line(
    {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}}
)


def test_initialize_answered_and_the_rest_handed_on():
    leftover, replies, conn = run(INIT + NEW + b'{"partial')
    assert replies == [{"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1}}]
    assert leftover == NEW + b'{"partial'
    assert conn.state == "initialized"


def test_errors_before_initialize_are_answered_like_the_endpoint():
    bad_version = line({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                        "params": {"protocolVersion": True}})  # fmt: skip
    leftover, replies, _ = run(b"garbage\n" + NEW + bad_version + INIT)
    codes = [r.get("error", {}).get("code") for r in replies]
    assert codes == [-32700, -32002, -32602, None]
    assert leftover == b""


def test_eof_before_initialize():
    leftover, replies, conn = run(NEW)
    assert [r["error"]["code"] for r in replies] == [-32002]
    assert leftover == b"" and conn.state == "new"


async def test_prefixed_reader_then_eof_callback():
    class Empty:
        async def read(self, n=-1):
            return b""

    seen = []
    reader = PrefixedReader(b"ahead", Empty(), lambda: seen.append("eof"))
    assert await reader.read() == b"ahead"
    assert await reader.read() == b"" and await reader.read() == b""
    assert seen == ["eof"]
