"""The floor under remote ACP's TTFT: the same one-line echo agent over stdio and behind
the least an HTTP/SSE server on our stack can be (uvicorn with httptools, asyncio, a bare
ASGI app: no routing, no auth, no log, no store), side by side in one run.

Why: bench/remote.py's target is a remote turn's TTFT within 1.5x of stdio's. What a
remote turn adds is two hops (the POST in, the SSE event out) through a server process
that relays to the agent's pipes; this measures what those hops cost with nothing of
ours on them, so the gap between this and bench/remote.py is the gateway's own work, and
this, set against stdio's TTFT there, is how close any Python gateway on this stack
could come.

    python bench/remote_floor.py [--turns 500] [--think-ms 0 --think-ms 1 ...]

The client is ours (`agentao.http1`: one keep-alive connection for the POSTs, one for the
event stream), as `agentao.client`'s remote transport uses it; the agent answers each
line it reads with one line, at once.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import subprocess
import sys
import time
from typing import Any

ECHO_AGENT = (
    "import sys, time\n"
    "think = float(sys.argv[1])\n"
    "r, w = sys.stdin.buffer, sys.stdout.buffer\n"
    "for line in r:\n"
    "    if think: time.sleep(think)\n"
    "    w.write(line); w.flush()\n"
)


async def start_agent(think: float) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-c", ECHO_AGENT, str(think), stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )


# ---- the server: a bare ASGI app relaying POSTed lines to the agent, its lines to SSE ----


class Relay:
    def __init__(self, think: float) -> None:
        self.think = think
        self.agent: asyncio.subprocess.Process | None = None
        self.events: asyncio.Queue[bytes] = asyncio.Queue()

    async def start(self) -> None:
        self.agent = await start_agent(self.think)
        asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        assert self.agent and self.agent.stdout
        while line := await self.agent.stdout.readline():
            self.events.put_nowait(b"data: " + line.rstrip(b"\n") + b"\n\n")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await receive()
            await self.start()
            await send({"type": "lifespan.startup.complete"})
            await receive()
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["method"] == "GET":
            await self._stream(send)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        assert self.agent and self.agent.stdin
        self.agent.stdin.write(body + b"\n")
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def _stream(self, send: Any) -> None:
        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-store")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        while True:
            event = await self.events.get()
            await send({"type": "http.response.body", "body": event, "more_body": True})


def serve(port: int, think: float) -> None:
    import uvicorn

    config = uvicorn.Config(
        Relay(think),
        host="127.0.0.1",
        port=port,
        http="httptools",
        loop="asyncio",
        log_level="error",
    )
    uvicorn.Server(config).run()


# ---- the client --------------------------------------------------------------------------


async def stdio_turns(turns: int, think: float) -> list[float]:
    agent = await start_agent(think)
    assert agent.stdin and agent.stdout
    line = b'{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}\n'
    times = []
    for _ in range(turns + 20):
        start = time.perf_counter()
        agent.stdin.write(line)
        await agent.stdout.readline()
        times.append(time.perf_counter() - start)
    agent.stdin.close()
    await agent.wait()
    return times[20:]


async def http_turns(port: int, turns: int) -> list[float]:
    from agentao.http1 import Http1Client

    base = f"http://127.0.0.1:{port}/acp"
    posts, events = Http1Client(10.0, 5.0, {}), Http1Client(10.0, 5.0, {})
    received: asyncio.Queue[float] = asyncio.Queue()

    async def read_events() -> None:
        async with events.request("GET", base, None, {"accept": "text/event-stream"}, None) as r:
            async for chunk in r.aiter_bytes():
                for _ in range(chunk.count(b"\n\n")):
                    received.put_nowait(time.perf_counter())

    reader = asyncio.get_running_loop().create_task(read_events())
    body = b'{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}'
    times = []
    for _ in range(turns + 20):
        start = time.perf_counter()
        async with posts.post(base, body, headers={"content-type": "application/json"}) as r:
            await r.aread()
        times.append(await received.get() - start)
    reader.cancel()
    await posts.aclose()
    await events.aclose()
    return times[20:]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def wait_listening(port: int) -> None:
    for _ in range(500):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.02)
            continue
        writer.close()
        return
    raise RuntimeError("the floor server did not listen")


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] * 1000


async def floor(turns: int, think: float) -> tuple[list[float], list[float]]:
    """One think time: stdio's turns, then the relay's (its own server process)."""
    port = free_port()
    server = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--serve", str(port), "--think-ms", str(think * 1000)
    )
    try:
        await wait_listening(port)
        return await stdio_turns(turns, think), await http_turns(port, turns)
    finally:
        server.kill()  # uvicorn's graceful stop would wait on the open event stream
        await server.wait()


async def main(turns: int, thinks: list[float]) -> None:
    print(
        f"\n## The floor: an echo agent over stdio and behind a bare HTTP/SSE relay ({turns} turns)\n"
    )
    print(
        "| the agent answers after | stdio p50 / p99 ms | HTTP/SSE p50 / p99 ms | added p50 ms | p50 ratio |"
    )
    print("|---:|---:|---:|---:|---:|")
    for think in thinks:
        stdio, http = await floor(turns, think / 1000)
        a, b = statistics.median(stdio) * 1000, statistics.median(http) * 1000
        print(
            f"| {think:g} ms | {a:.3f} / {p99(stdio):.3f} | {b:.3f} / {p99(http):.3f}"
            f" | {b - a:+.3f} | {b / a:.2f}x |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument(
        "--think-ms",
        type=float,
        action="append",
        help="the agent's pause before each answer (repeatable; default: 0, 1 and 3 ms)",
    )
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.think_ms[0] / 1000)
    else:
        asyncio.run(main(args.turns, args.think_ms or [0.0, 1.0, 3.0]))
