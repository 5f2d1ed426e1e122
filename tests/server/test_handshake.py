"""The synchronous initialize (server/handshake.py) over real OS pipes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

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


def test_answering_initialize_loads_only_what_it_needs() -> None:
    """Cold start: what `agentao --acp` imports up to its `initialize` reply leaves out the
    event loop, logging, argument parsing, json, and every SDK (they load after it)."""
    code = (
        "import os, sys\n"
        "import agentao.cli, agentao.server.main\n"
        "from agentao.protocol.connection import Connection\n"
        "from agentao.server.capabilities import initialize_response\n"
        "from agentao.server.handshake import handshake\n"
        "r, w = os.pipe(); out_r, out_w = os.pipe()\n"
        'os.write(w, b\'{"jsonrpc":"2.0","id":1,"method":"initialize",'
        '"params":{"protocolVersion":1}}\\n\'); os.close(w)\n'
        "handshake(Connection('agent'), lambda p: initialize_response(), r, out_w)\n"
        "assert b'protocolVersion' in os.read(out_r, 1 << 16)\n"
        "heavy = ('asyncio', 'logging', 'argparse', 'json', 'openai', 'anthropic', 'httpx',\n"
        "         'mcp', 'rich', 'fastapi', 'uvicorn', 'sqlite3', 'pathlib', 'tomllib')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "print(sorted(m for m in sys.modules if m.startswith('agentao.agent')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    heavy, runtime = out.stdout.strip().splitlines()
    assert heavy == "[]"
    # Of the runtime, only the catalog (promptCapabilities.image), which imports nothing
    # heavy and reads its TOML file only when there is one.
    assert runtime == "['agentao.agent', 'agentao.agent.catalog']"
