"""Caller's-tools bench: a tool round trip through the gateway vs the agent's own MCP tool.

    python bench/tools.py [--calls 200] [--concurrency 100] [--processes 2]

The same scripted agent (`agentao --acp`, LLM_PROVIDER=SCRIPTED, no delay) on both sides:

* direct: `agentao.client` drives it over stdio, each session given a local stdio MCP
  server (tests/fakes/mcp_server.py); a turn is the model's call of its `echo` tool, the
  server's answer, then the model's text (prompt -> TurnEnd).
* gateway: the real `agentao serve` on 127.0.0.1, the caller's own `echo` tool in the
  request (issue 24, gateway/tool_bridge.py); a round trip is the request that ends with
  `tool_calls`, then the request that carries the result and reads the rest of the
  same turn (the caller's tool itself takes no time).

1. Per call, one conversation at a time, the two alternating (`--calls` each, warm: the
   session exists and has made a call): p50/p99 ms, and the latency the gateway adds
   per call (gateway - direct at each percentile) and the ratio.
2. `--concurrency` conversations at once, each one round trip: through the gateway cold
   (each request opens its conversation) and warm (the second round trip of each), and
   direct warm (sessions open, each one call): p50/p99 ms, errors, wall time; ratios.
   Each conversation is its own caller with its own HTTP client, as `--concurrency`
   programs would be. One shared `httpx` pool of 100 connections (what this bench used
   first) costs its own process about 20 ms of CPU per round trip: httpcore looks at
   every connection of the pool for each request and each response (a readability
   system call each), so the cost grows with the square of the callers, and on a busy
   machine the bench's client was most of the 9x it reported (`--shared-pool` measures
   that way again).

Not a test: numbers only, printed as Markdown tables.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from gateway import AUTH, Served, Setup, cpu_seconds, descendants, percentile, start_gateway

from agentao.client import AgentCommand, Client, ClientPolicy, Update

ROOT = Path(__file__).resolve().parents[1]
MCP_SERVER = ROOT / "tests" / "fakes" / "mcp_server.py"
ROUNDS = 400  # script entries per session: more than one session ever plays
ECHO = {
    "type": "function",
    "function": {
        "name": "echo",
        "description": "Return text unchanged.",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
    },
}


def script() -> list[dict[str, Any]]:
    """Per session, each model request takes the next unused entry whose `match` is in the
    last user message (scripted provider): 'local' prompts call the session's MCP server,
    'caller' prompts the caller's tool, each call followed by its text."""

    def call(word: str, tool: str) -> list[dict[str, Any]]:
        asked = {"name": tool, "arguments": {"text": "x"}}
        return [{"match": word, "tool_calls": [asked]}, {"match": word, "text": ["Done", "."]}]

    rounds = call("local", "mcp__fake__echo") + call("caller", "mcp__caller__echo")
    return rounds * ROUNDS


def mcp_server() -> dict[str, Any]:
    return {"name": "fake", "command": sys.executable, "args": [str(MCP_SERVER)], "env": []}


# ---- direct: agentao.client and a local MCP server -------------------------------------------


async def direct_call(session: Any) -> float:
    """Seconds for one turn that calls the local MCP tool (prompt -> TurnEnd)."""
    start = time.perf_counter()
    done = []
    async for event in session.prompt("call the local tool"):
        if isinstance(event, Update) and event.kind == "tool_call_update":
            done.append(getattr(event.value, "status", None))
    took = time.perf_counter() - start
    if "completed" not in done:  # the tool was refused or failed: not a call to time
        raise RuntimeError(f"the local MCP tool did not complete: {done}")
    return took


async def open_direct(setup: Setup, n: int, processes: int) -> tuple[list[Client], list[Any]]:
    """`processes` agents, `n` sessions spread across them, each warm (one call made)."""
    command = AgentCommand.ours(env={**setup.env, "AGENTAO_HOME": str(setup.root / "direct-home")})
    clients = [
        Client(command, protocol=1, policy=ClientPolicy(approve="all")) for _ in range(processes)
    ]
    await asyncio.gather(*(c.start() for c in clients))
    sessions = []
    for i in range(n):  # one at a time: each starts an MCP server process
        session = await clients[i % processes].new_session(
            str(setup.work), mcp_servers=[mcp_server()]
        )
        await direct_call(session)
        sessions.append(session)
    return clients, sessions


# ---- through the gateway: the caller's own tool -----------------------------------------------


async def round_trip(http: httpx.AsyncClient, key: str) -> float:
    """Seconds for a caller's-tool round trip: tool_calls out, the result in, the turn's end."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "call the caller tool"}]
    headers = {**AUTH, "X-Session-Id": key}
    body = {"model": "agentao", "messages": messages, "tools": [ECHO]}
    start = time.perf_counter()
    first = (await http.post("/v1/chat/completions", json=body, headers=headers)).json()
    choice = first["choices"][0]
    if choice["finish_reason"] != "tool_calls":
        raise RuntimeError(f"no tool call: {json.dumps(first)[:300]}")
    message = choice["message"]
    messages.append(message)
    messages += [
        {"role": "tool", "tool_call_id": c["id"], "content": "x"} for c in message["tool_calls"]
    ]
    second = (await http.post("/v1/chat/completions", json=body, headers=headers)).json()
    if second["choices"][0]["finish_reason"] != "stop":
        raise RuntimeError(f"the turn did not end: {json.dumps(second)[:300]}")
    return time.perf_counter() - start


# ---- the two measurements ----------------------------------------------------------------------


async def per_call(setup: Setup, port: int, calls: int, processes: int) -> dict[str, list[float]]:
    """One conversation each side, `calls` calls each, alternating."""
    clients, (session,) = await open_direct(setup, 1, processes)
    times: dict[str, list[float]] = {"direct": [], "gateway": []}
    try:
        async with gateway_http(port, 1) as http:
            await round_trip(http, "per-call")  # warm, as the direct session is
            for _ in range(calls):
                times["direct"].append(await direct_call(session))
                times["gateway"].append(await round_trip(http, "per-call"))
    finally:
        await asyncio.gather(*(c.close() for c in clients))
    return times


async def concurrent(
    setup: Setup, served: Served, n: int, processes: int, shared_pool: bool = False
) -> dict[str, dict[str, float]]:
    """`n` conversations at once, each one round trip: gateway cold, gateway warm, direct
    warm; for the gateway, its process's CPU time per round trip too, and the callers'
    (this process's)."""
    out = {}
    async with contextlib.AsyncExitStack() as stack:
        if shared_pool:
            shared = await stack.enter_async_context(gateway_http(served.port, n))
            callers = [shared] * n
        else:
            callers = [
                await stack.enter_async_context(gateway_http(served.port, 1)) for _ in range(n)
            ]
        for name in ("gateway cold", "gateway warm"):
            start, cpu, agents = (
                time.perf_counter(),
                cpu_seconds(served.proc.pid),
                agents_cpu(served),
            )
            mine = resource.getrusage(resource.RUSAGE_SELF)
            outcomes = await asyncio.gather(
                *(round_trip(http, f"conc-{i}") for i, http in enumerate(callers)),
                return_exceptions=True,
            )
            out[name] = summary(outcomes, time.perf_counter() - start)
            out[name]["cpu"] = (cpu_seconds(served.proc.pid) - cpu) / n * 1000
            out[name]["agents"] = (agents_cpu(served) - agents) / n * 1000
            out[name]["callers"] = own_cpu_since(mine) / n * 1000
    clients, sessions = await open_direct(setup, n, processes)
    try:
        start = time.perf_counter()
        outcomes = await asyncio.gather(*(direct_call(s) for s in sessions), return_exceptions=True)
        out["direct warm"] = summary(outcomes, time.perf_counter() - start)
    finally:
        await asyncio.gather(*(c.close() for c in clients))
    return out


def own_cpu_since(before: resource.struct_rusage) -> float:
    """CPU seconds this process (the callers) used since `before`."""
    now = resource.getrusage(resource.RUSAGE_SELF)
    return now.ru_utime - before.ru_utime + now.ru_stime - before.ru_stime


def agents_cpu(served: Served) -> float:
    """CPU seconds of the gateway's agent processes (and their children) so far."""
    return sum(cpu_seconds(pid) for pid in descendants(served.proc.pid))


def gateway_http(port: int, connections: int) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=120, limits=limits)


def summary(outcomes: list[Any], wall: float) -> dict[str, float]:
    ok = [o for o in outcomes if isinstance(o, float)]
    errors = [o for o in outcomes if not isinstance(o, float)]
    if errors:
        print(f"  first error: {errors[0]!r}", file=sys.stderr)
    return {
        "p50": percentile(ok, 50) * 1000 if ok else float("nan"),
        "p99": percentile(ok, 99) * 1000 if ok else float("nan"),
        "errors": len(errors),
        "wall": wall,
    }


def report(
    args: argparse.Namespace, times: dict[str, list[float]], conc: dict[str, dict[str, float]]
) -> None:
    print(f"\n### One call at a time ({args.calls} calls each side, warm, alternating)\n")
    print("| | direct (local MCP tool) | gateway (caller's tool) | added per call | ratio |")
    print("|---|---:|---:|---:|---:|")
    for p in (50, 99):
        d, g = percentile(times["direct"], p) * 1000, percentile(times["gateway"], p) * 1000
        print(f"| p{p} | {d:.1f} ms | {g:.1f} ms | {g - d:+.1f} ms | {g / d:.2f}x |")
    print(
        f"\n### {args.concurrency} conversations at once, one call each ({args.processes} agent "
        f"processes, {'one shared HTTP pool' if args.shared_pool else 'a client per caller'})\n"
    )
    print("| | p50 | p99 | errors | wall | CPU per round trip: gateway, its agents, callers |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, row in conc.items():
        cpu = (
            f"{row['cpu']:.1f} ms, {row['agents']:.1f} ms, {row['callers']:.1f} ms"
            if "cpu" in row
            else ""
        )
        print(
            f"| {name} | {row['p50']:.0f} ms | {row['p99']:.0f} ms | {row['errors']:.0f} "
            f"| {row['wall']:.2f} s | {cpu} |"
        )
    d, g = conc["direct warm"], conc["gateway warm"]
    print(
        f"\nratios, gateway warm / direct warm: p50 {g['p50'] / d['p50']:.2f}x, p99 {g['p99'] / d['p99']:.2f}x"
    )


async def measure(args: argparse.Namespace, setup: Setup, served: Served) -> tuple[dict, dict]:
    """Both measurements on one event loop (the agents' pipes close on the loop they opened)."""
    times = await per_call(setup, served.port, args.calls, args.processes)
    conc = await concurrent(setup, served, args.concurrency, args.processes, args.shared_pool)
    return times, conc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument(
        "--shared-pool", action="store_true", help="all callers share one HTTP client (the old way)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        setup = Setup(root, argparse.Namespace(chunks=1, relay_runs=0, turns=0))
        path = root / "tools.json"
        path.write_text(json.dumps({"responses": script()}))
        setup.env["AGENTAO_SCRIPT"] = str(path)
        served = start_gateway(setup, args.processes, "after")
        try:
            times, conc = asyncio.run(measure(args, setup, served))
        finally:
            served.stop()
    report(args, times, conc)


if __name__ == "__main__":
    main()
