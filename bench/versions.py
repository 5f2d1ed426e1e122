"""ACP v1 and v2 side by side: a turn's TTFT and a long relay, over stdio and through the gateway.

    python bench/versions.py [--turns 100] [--chunks 5000] [--relay-runs 5] [--schemes http,ws]

Issue 22's bench row, in one run. Every client is `agentao.client`, forced to one version
(`Client(protocol=1|2)`), against the same scripted agent (`agentao --acp`,
LLM_PROVIDER=SCRIPTED):

* stdio: the client drives the agent itself, over v1 or over v2 (our agent's own v2);
* through the gateway: a real `agentao serve` on 127.0.0.1, reached over remote ACP (`/acp`,
  HTTP/SSE and WebSocket). Its pool drives the agent over v1, so a v1 client is relayed as
  v1 and a v2 client goes through the v1 -> v2 bridge (`gateway/remote/bridge.py`).

Measured, every path alternating with the others run by run (machine drift hits all alike):

1. time to first token of a one-line answer on one session, `--turns` turns: p50 and p99;
2. one `--chunks`-chunk answer: message chunks per second from the prompt to the turn's
   end, the median of `--relay-runs` runs (a first run warms every path and is dropped).

Each row's ratio is to stdio over v1 (the direct path of issue 21's relay target), and each
v2 row's to the same path over v1. Not a test: numbers only, printed as Markdown tables.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
from pathlib import Path

from gateway import BENCH_KEY, Setup, direct_turn, percentile, start_gateway

from agentao.client import AgentUrl, Client

LABELS = {"stdio": "stdio", "http": "gateway, remote HTTP/SSE", "ws": "gateway, remote WebSocket"}


def paths(schemes: list[str]) -> list[tuple[str, int]]:
    """(transport, version) of every path, v1 and v2 of each transport side by side."""
    return [(transport, version) for transport in ["stdio", *schemes] for version in (1, 2)]


def client_for(setup: Setup, port: int, transport: str, version: int) -> Client:
    if transport == "stdio":
        return Client(setup.direct_command(setup.long_script), protocol=version)
    url = AgentUrl(f"{transport}://127.0.0.1:{port}/acp", api_key=BENCH_KEY)
    return Client(url, protocol=version)


async def measure(setup: Setup, port: int, args: argparse.Namespace) -> dict[tuple, dict]:
    every = paths(args.schemes)
    clients = {path: client_for(setup, port, *path) for path in every}
    results: dict[tuple, dict] = {path: {"ttft": [], "rate": []} for path in every}
    try:
        await asyncio.gather(*(c.start() for c in clients.values()))
        sessions = {p: await c.new_session(str(setup.work)) for p, c in clients.items()}
        for _ in range(3):  # warm every path: imports, first turns, caches
            for session in sessions.values():
                await direct_turn(session, "hi")
        for _ in range(args.turns):
            for path, session in sessions.items():
                results[path]["ttft"].append((await direct_turn(session, "hi"))[0])
        for run in range(args.relay_runs + 1):  # the first run warms the long path; dropped
            for path, session in sessions.items():
                _first, seconds, chunks = await direct_turn(session, "relay")
                if chunks != args.chunks:
                    raise RuntimeError(f"{path}: {chunks} chunks of {args.chunks}")
                if run:
                    results[path]["rate"].append(chunks / seconds)
    finally:
        await asyncio.gather(*(c.close() for c in clients.values()), return_exceptions=True)
    return results


def report(args: argparse.Namespace, results: dict[tuple, dict]) -> None:
    ttft = {p: (percentile(r["ttft"], 50), percentile(r["ttft"], 99)) for p, r in results.items()}
    rate = {p: statistics.median(r["rate"]) for p, r in results.items()}
    base = ("stdio", 1)
    print(f"\n### ACP v1 and v2, stdio and through the gateway ({args.turns} turns; "
          f"{args.chunks}-chunk relay, median of {args.relay_runs})\n")  # fmt: skip
    print("| path | version | TTFT p50 ms | p99 ms | p50 vs stdio v1 | relay chunks/s "
          "| relay vs stdio v1 | v2 vs v1 (TTFT p50, relay) |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for path in results:
        transport, version = path
        p50, p99 = ttft[path]
        versus = ""
        if version == 2:
            v1 = (transport, 1)
            versus = f"{p50 / ttft[v1][0]:.2f}x, {rate[path] / rate[v1]:.2f}x"
        print(
            f"| {LABELS[transport]} | v{version} | {p50 * 1000:.2f} | {p99 * 1000:.2f} "
            f"| {p50 / ttft[base][0]:.2f}x | {rate[path]:,.0f} | {rate[path] / rate[base]:.2f}x "
            f"| {versus} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--chunks", type=int, default=5000)
    parser.add_argument("--relay-runs", type=int, default=5)
    parser.add_argument("--schemes", type=lambda s: s.split(","), default=["http", "ws"])
    args = parser.parse_args()
    # The gateway bench's scripts: the relay answers first (taken only by "relay" prompts),
    # then one reply per turn; every session (each path's own) reads the whole script.
    setup_args = argparse.Namespace(
        chunks=args.chunks, relay_runs=args.relay_runs, turns=args.turns + 10
    )
    with tempfile.TemporaryDirectory() as tmp:
        setup = Setup(Path(tmp), setup_args)
        limits = {"remote_connections_per_key": 16}
        served = start_gateway(setup, 2, "after", script=setup.long_script, limits=limits)
        try:
            results = asyncio.run(measure(setup, served.port, args))
        finally:
            served.stop()
    report(args, results)


if __name__ == "__main__":
    main()
