"""`agentao connect URL`: a remote ACP agent on this process's stdio, for editors.

Editors spawn their agents as commands and speak ACP on the command's stdin/stdout;
this command is such an agent, and passes every line on to an agent at a URL (our
gateway's `/acp`, or any server of ACP's remote transport) and every message back.
The remote transport's details (POSTs, SSE streams resumed with `Last-Event-ID`,
WebSocket frames, the connection id) are the client library's (`client/remote.py`).

Stdout carries only protocol messages; a failure to connect is a JSON-RPC error reply
to the editor's requests (so it sees why) and a line on stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys

from agentao import loops
from agentao.cli.remote_key import remote_agent
from agentao.client.remote import AgentUrl, RemoteStreams, connect, is_agent_url
from agentao.local_token import LocalTokenError

MAX_LINE_BYTES = 1 << 26  # what the remote transport reads as one message too


def main(url: str) -> int:
    if not is_agent_url(url):
        print(f"agentao connect: {url!r} is not an http(s):// or ws(s):// URL", file=sys.stderr)
        return 2
    try:
        agent = remote_agent(url)
    except LocalTokenError as exc:
        print(f"agentao connect: {exc}", file=sys.stderr)
        return 1
    try:
        return loops.run(_bridge(agent))
    except KeyboardInterrupt:
        return 130


async def _bridge(agent: AgentUrl) -> int:
    stdin, stdout = await _stdio()
    try:
        remote = await connect(agent)
    except Exception as exc:  # a WebSocket refused, DNS, TLS...: whatever it is, say it
        reason = f"cannot reach the agent at {agent.url}: {exc or type(exc).__name__}"
        print(f"agentao connect: {reason}", file=sys.stderr)
        await _refuse(stdin, stdout, reason)
        return 1
    upstream = asyncio.ensure_future(_pump_up(stdin, remote))
    downstream = asyncio.ensure_future(_pump_down(remote, stdout))
    try:
        await asyncio.wait((upstream, downstream), return_when=asyncio.FIRST_COMPLETED)
    finally:
        await remote.close()  # the editor left: the connection is closed (DELETE)
        for task in (upstream, downstream):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
    return 0


async def _pump_up(stdin: asyncio.StreamReader, remote: RemoteStreams) -> None:
    """The editor's lines, in order, to the agent; until the editor closes stdin."""
    while line := await stdin.readline():
        remote.write(line if line.endswith(b"\n") else line + b"\n")
        await remote.drain()


async def _pump_down(remote: RemoteStreams, stdout: asyncio.StreamWriter) -> None:
    """The agent's messages to the editor, one line each; until the connection ends."""
    while line := await remote.reader.readline():
        stdout.write(line)
        await stdout.drain()


async def _refuse(stdin: asyncio.StreamReader, stdout: asyncio.StreamWriter, reason: str) -> None:
    """Answer the editor's requests with the reason, until it gives up (closes stdin)."""
    while line := await stdin.readline():
        with contextlib.suppress(ValueError):
            message = json.loads(line)
            if isinstance(message, dict) and "id" in message and "method" in message:
                error = {"code": -32603, "message": reason, "data": {"reason": "transport"}}
                reply = {"jsonrpc": "2.0", "id": message["id"], "error": error}
                stdout.write(json.dumps(reply).encode() + b"\n")
                await stdout.drain()


async def _stdio() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, sys.stdout
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return reader, writer


__all__ = ["main"]
