"""Gateway bench: what `agentao serve` adds on top of talking ACP directly, and 100 streams.

    python bench/gateway.py [--turns 200] [--concurrency 100] [--processes 4]

Both sides drive the same scripted agent (`agentao --acp`, LLM_PROVIDER=SCRIPTED):

1. Time to first token, one turn at a time on one session:
   * direct: `agentao.client` -> agent process, time to the first agent_message_chunk;
   * gateway: a streaming `POST /v1/chat/completions` (httpx, raw SSE) to a real
     `agentao serve` process on 127.0.0.1, time to the first `delta.content`.
   Turns alternate between the two so drift hits both alike; "added" is gateway
   minus direct, per percentile.
2. `--concurrency` streaming requests at once, each on its own session: time to
   first token p50/p99, errors, and the RSS of the gateway and of its agent processes.
   Run twice: "cold" (each request opens its session) and "warm" (sessions exist).

Not a test: numbers only, printed as a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from agentao.client import AgentCommand, Client, Update

REPLY = {"text": ["Hello", " there", ",", " this", " is", " a", " scripted", " answer", "."]}
SLOW = {"match": "slow", "text": {"repeat": "tick ", "count": 500}, "delay": 0.01}


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def descendants(pid: int) -> list[int]:
    out = []
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        out.append(int(child))
        out.extend(descendants(int(child)))
    return out


class Setup:
    """A script file, an agent state dir, and the environment the agent runs with."""

    def __init__(self, root: Path, turns: int) -> None:
        script = root / "script.json"
        script.write_text(json.dumps({"responses": [SLOW, *[REPLY] * (turns + 10)]}))
        self.work = root / "work"
        self.work.mkdir()
        self.env = {
            "AGENTAO_HOME": str(root / "home"),
            "LLM_PROVIDER": "SCRIPTED",
            "AGENTAO_SCRIPT": str(script),
        }
        self.root = root
        # Several agent processes open one fresh database at once: create it first
        # (store/sqlite.py migrates outside its write lock; they would race).
        from agentao.store.paths import DATABASE_NAME
        from agentao.store.sessions import open_session_store

        for home in ("home", "direct-home"):
            (root / home).mkdir()
            open_session_store(root / home / DATABASE_NAME).db.close()


async def direct_ttft(session) -> float:
    start = time.perf_counter()
    first = None
    async for event in session.prompt("hi"):
        if first is None and isinstance(event, Update) and event.kind == "agent_message_chunk":
            first = time.perf_counter() - start
    assert first is not None
    return first


async def gateway_ttft(http: httpx.AsyncClient, session_key: str) -> float:
    body = {"model": "agentao", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    start = time.perf_counter()
    first = None
    async with http.stream(
        "POST", "/v1/chat/completions", json=body, headers={"X-Session-Id": session_key}
    ) as reply:
        if reply.status_code != 200:
            raise RuntimeError(f"HTTP {reply.status_code}: {await reply.aread()!r}")
        async for line in reply.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if "error" in chunk:
                raise RuntimeError(chunk["error"]["message"])
            delta = chunk["choices"][0]["delta"] if chunk["choices"] else {}
            if first is None and delta.get("content"):
                first = time.perf_counter() - start
    assert first is not None
    return first


class RawHttp:
    """One keep-alive HTTP/1.1 connection, each request in a single write: the server's own
    latency, without an HTTP client library's overhead on top."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def ttft(self, session_key: str) -> float:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        body = json.dumps(
            {"model": "agentao", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        ).encode()
        head = (
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nX-Session-Id: {session_key}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        start = time.perf_counter()
        self.writer.write(head + body)
        reader, first = self.reader, None
        assert reader is not None
        status = await reader.readline()
        if b" 200 " not in status:
            raise RuntimeError(status.decode())
        while (await reader.readline()) != b"\r\n":
            pass
        while True:  # chunked body
            size = int((await reader.readline()).strip(), 16)
            data = await reader.readexactly(size + 2)
            if size == 0:
                break
            if first is None and b'"content":"' in data:
                first = time.perf_counter() - start
        assert first is not None
        return first


def start_gateway(setup: Setup, processes: int) -> tuple[subprocess.Popen[bytes], int]:
    config = setup.root / "gateway.toml"
    env_line = ", ".join(f'{k} = "{v}"' for k, v in setup.env.items())
    config.write_text(
        f"""
[agents.agentao]
command = ["{sys.executable}", "-m", "agentao", "--acp"]
processes = {processes}
cwd = "{setup.work}"
env = {{ {env_line} }}
"""
    )
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentao",
            "serve",
            "--config",
            str(config),
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        env={**os.environ, "AGENTAO_HOME": str(setup.root / "gateway-home")},
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            health = httpx.get(f"http://127.0.0.1:{port}/healthz").json()
            if health["agents"]["agentao"]["live"] == processes:
                return proc, port
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the gateway did not start")


async def bench_ttft(setup: Setup, port: int, turns: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {"direct": [], "raw": [], "httpx": []}
    # Its own state directory: two agents committing to one SQLite file would slow both.
    command = AgentCommand.ours(env={**setup.env, "AGENTAO_HOME": str(setup.root / "direct-home")})
    async with (
        Client(command) as client,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http,
    ):
        session = await client.new_session(str(setup.work))
        raw = RawHttp(port)
        for _ in range(5):  # warm every path (imports, first session, caches)
            await direct_ttft(session)
            await raw.ttft("ttft")
            await gateway_ttft(http, "ttft")
        for _ in range(turns):
            results["direct"].append(await direct_ttft(session))
            results["raw"].append(await raw.ttft("ttft"))
            results["httpx"].append(await gateway_ttft(http, "ttft"))
    return results


async def bench_concurrent(port: int, n: int, round_name: str) -> dict[str, float]:
    # One raw connection per stream: the client's own cost stays out of the numbers.
    clients = [RawHttp(port) for _ in range(n)]
    start = time.perf_counter()
    outcomes = await asyncio.gather(
        *(c.ttft(f"concurrent-{i}") for i, c in enumerate(clients)), return_exceptions=True
    )
    wall = time.perf_counter() - start
    for c in clients:
        if c.writer is not None:
            c.writer.close()
    for error in [o for o in outcomes if not isinstance(o, float)][:3]:
        print(f"  {round_name} error: {error!r}", file=sys.stderr)
    return _summary(outcomes, wall)


async def direct_concurrent(setup: Setup, n: int, processes: int) -> tuple[dict, dict]:
    """The same load straight over ACP: `processes` agents, n sessions spread across them;
    cold (each opens its session, timed) then warm (the sessions exist)."""
    env = {**setup.env, "AGENTAO_HOME": str(setup.root / "direct-home")}
    clients = [Client(AgentCommand.ours(env=env)) for _ in range(processes)]
    await asyncio.gather(*(c.start() for c in clients))
    for c in clients:  # warm each process the way the gateway's were (a first session, a turn)
        await direct_ttft(await c.new_session(str(setup.work)))
    sessions: list = [None] * n

    async def cold(i: int) -> float:
        start = time.perf_counter()
        sessions[i] = await clients[i % processes].new_session(str(setup.work))
        return time.perf_counter() - start + await direct_ttft(sessions[i])

    try:
        rounds = []
        for run in (cold, lambda i: direct_ttft(sessions[i])):
            start = time.perf_counter()
            outcomes = await asyncio.gather(*(run(i) for i in range(n)), return_exceptions=True)
            rounds.append(_summary(outcomes, time.perf_counter() - start))
    finally:
        await asyncio.gather(*(c.close() for c in clients))
    return rounds[0], rounds[1]


def _summary(outcomes: list, wall: float) -> dict[str, float]:
    ttfts = [o for o in outcomes if isinstance(o, float)]
    return {
        "p50": percentile(ttfts, 50) * 1000 if ttfts else float("nan"),
        "p99": percentile(ttfts, 99) * 1000 if ttfts else float("nan"),
        "errors": len(outcomes) - len(ttfts),
        "wall": wall,
    }


async def cancel_latency(port: int, n: int) -> list[float]:
    """Client disconnect mid-stream -> the agent's `cancelled` answer, as the gateway logged it."""
    body = json.dumps(
        {"model": "agentao", "stream": True, "messages": [{"role": "user", "content": "slow"}]}
    ).encode()
    out = []
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
        for i in range(n):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(
                f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Session-Id: cancel-{i}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            head = (await reader.readuntil(b"\r\n\r\n")).decode().lower()
            task_id = head.split("x-task-id: ", 1)[1].split("\r\n", 1)[0]
            while b"tick" not in await reader.readline():
                pass
            left = time.time()
            writer.close()
            while True:
                frames = (await http.get(f"/v1/tasks/{task_id}/events")).json()["data"]
                if frames and frames[-1]["type"] == "task-ended":
                    assert frames[-1]["stopReason"] == "cancelled"
                    out.append(frames[-1]["at"] - left)
                    break
                await asyncio.sleep(0.005)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--processes", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        setup = Setup(Path(tmp), args.turns + 20)
        proc, port = start_gateway(setup, args.processes)
        try:
            ttft = asyncio.run(bench_ttft(setup, port, args.turns))
            cancels = asyncio.run(cancel_latency(port, 20))
            rss_before = rss_mb(proc.pid)
            cold = asyncio.run(bench_concurrent(port, args.concurrency, "cold"))
            warm = asyncio.run(bench_concurrent(port, args.concurrency, "warm"))
            gateway_rss = rss_mb(proc.pid)
            agents_rss = sum(rss_mb(pid) for pid in descendants(proc.pid))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        direct = asyncio.run(direct_concurrent(setup, args.concurrency, args.processes))
    report(args, ttft, (cold, warm, *direct), rss_before, gateway_rss, agents_rss)
    print(
        f"\nclient disconnect -> agent answered `cancelled` (20 streams): "
        f"p50 {percentile(cancels, 50) * 1000:.1f} ms, max {max(cancels) * 1000:.1f} ms"
    )


def report(args, ttft, rounds, rss_before, gateway_rss, agents_rss) -> None:
    cold, warm, direct_cold, direct_warm = rounds
    d = ttft["direct"]
    ms = lambda values, p: percentile(values, p) * 1000  # noqa: E731
    print(f"\n## Gateway bench ({args.turns} turns; {args.concurrency} concurrent streams, "
          f"{args.processes} agent processes)\n")  # fmt: skip
    print("| time to first token, one session | p50 ms | p99 ms | added p50 ms | added p99 ms |")
    print("|---|---:|---:|---:|---:|")
    print(f"| direct ACP (agentao.client) | {ms(d, 50):.2f} | {ms(d, 99):.2f} | | |")
    for name, key in (
        ("gateway, one-write HTTP/1.1 client (the server's own latency)", "raw"),
        ("gateway, httpx.AsyncClient (what the openai SDK uses)", "httpx"),
    ):
        g = ttft[key]
        added = [b - a for a, b in zip(d, g, strict=True)]
        print(
            f"| {name} | {ms(g, 50):.2f} | {ms(g, 99):.2f} | **{ms(added, 50):.2f}** | "
            f"{ms(added, 99):.2f} |"
        )
    print()
    print(f"| {args.concurrency} concurrent streams, one session each | TTFT p50 ms | TTFT p99 ms "
          "| errors | wall s |")  # fmt: skip
    print("|---|---:|---:|---:|---:|")
    for name, r in (
        ("cold (each opens its session): direct ACP", direct_cold),
        ("cold: through the gateway", cold),
        ("warm (sessions exist): direct ACP", direct_warm),
        ("warm: through the gateway", warm),
    ):
        print(f"| {name} | {r['p50']:.1f} | {r['p99']:.1f} | {r['errors']} | {r['wall']:.2f} |")
    print()
    print(f"memory (RSS): gateway {rss_before:.0f} MB before the streams, {gateway_rss:.0f} MB "
          f"after; its {args.processes} agent processes {agents_rss:.0f} MB in all")  # fmt: skip


if __name__ == "__main__":
    main()
