"""Remote ACP bench: the same agent over stdio and through `agentao serve`'s /acp endpoint.

    python bench/remote.py [--turns 200] [--concurrency 100] [--processes 4] [--rounds 3]
                           [--protocol 1|2] [--before SRC] [--relay-chunks 5000]
                           [--relay-runs 5]

Everything drives the same scripted agent (`agentao --acp`, LLM_PROVIDER=SCRIPTED); the
gateway is a real `agentao serve` process on 127.0.0.1; every client is `agentao.client`
(over stdio to the agent itself, or over the remote transport to the gateway), so the
client's own cost is the same on every path.

1. Time to first token on one session, 200 turns, the three paths alternating turn by
   turn (machine drift hits all alike): stdio, remote HTTP/SSE, remote WebSocket; p50 and
   p99, and each remote path's ratio to stdio. With `--before SRC` a second gateway runs
   that checkout (its agents too) beside this one, its paths alternating with the rest.
   Beside it, the CPU each gateway and its agents spent per remote turn over those turns
   (and the stdio agent's per turn): what a turn costs, whatever the machine's load.
2. 100 concurrent remote sessions, each its own connection (initialize, session/new, one
   streamed prompt), over HTTP/SSE and over WebSocket, beside the same load on the
   gateway's OpenAI API (streaming chat completions, a new conversation each): time to
   first token p50/p99 from the client's start (for a remote client: connect,
   initialize, session/new, prompt; for the OpenAI API the request opens the session)
   and from the prompt, errors, and the gateway's memory; the median of `--rounds`.
3. Relay: on the sessions of 1, one `--relay-chunks` answer at a time, the paths
   alternating: chunks/s (the median of `--relay-runs`, after a run that warms each
   path) beside stdio's, and the CPU each gateway spent per chunk it streamed to a
   remote client (stdio's client reads the agent itself: the rate a remote client
   could reach at best).

Not a test: numbers only, printed as Markdown tables.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from gateway import (
    AUTH,
    BENCH_KEY,
    Served,
    Setup,
    cpu_seconds,
    descendants,
    descendants_now,
    direct_turn,
    gateway_ttft,
    percentile,
    rss_mb,
    start_gateway,
)

from agentao.client import AgentUrl, Client

SCHEMES = {"http": "HTTP/SSE", "ws": "WebSocket"}


def acp_url(served: Served, scheme: str) -> AgentUrl:
    return AgentUrl(f"{scheme}://127.0.0.1:{served.port}/acp", api_key=BENCH_KEY)


Ttft = tuple[dict[str, list[float]], dict[str, tuple[float, float]]]
Relay = dict[str, tuple[float, float]]


async def bench_sessions(
    setup: Setup, gateways: dict[str, Served], args: argparse.Namespace
) -> tuple[Ttft, Relay]:
    """One session per path -- stdio, then each remote scheme on each gateway (`after`,
    and `before` when it runs) -- driven turn by turn, the paths alternating: the TTFT
    turns, then the relay's long answers."""
    async with contextlib.AsyncExitStack() as stack:
        clients = {"stdio": Client(setup.direct_command(setup.long_script), protocol=args.protocol)}
        through = {"stdio": "stdio"}  # path -> the gateway it runs through
        for name, served in gateways.items():
            for scheme in SCHEMES:
                url = acp_url(served, scheme)
                clients[_path(scheme, name)] = Client(url, protocol=args.protocol)
                through[_path(scheme, name)] = name
        sessions = {}
        for path, client in clients.items():
            await stack.enter_async_context(client)
            sessions[path] = await client.new_session(str(setup.work))
        meters = {name: _processes(served.proc.pid) for name, served in gateways.items()}
        meters["stdio"] = (None, descendants_now())
        ttft = await bench_ttft(sessions, meters, args.turns)
        gateway_of = {path: meters[name] for path, name in through.items()}
        relay = await bench_relay(sessions, gateway_of, args.relay_runs)
    return ttft, relay


async def bench_ttft(sessions: dict[str, Any], meters: dict[str, Pids], turns: int) -> Ttft:
    """Each path's TTFT per turn; and the CPU each gateway and its agents spent per
    remote turn of theirs (ms), the stdio agent's per turn."""
    for _ in range(5):  # warm every path (imports, first turn, caches)
        for session in sessions.values():
            await direct_turn(session, "hi")
    results: dict[str, list[float]] = {path: [] for path in sessions}
    spent = {name: _cpu(pids) for name, pids in meters.items()}
    for _ in range(turns):
        for path, session in sessions.items():
            results[path].append((await direct_turn(session, "hi"))[0])
    ended = {name: _cpu(pids) for name, pids in meters.items()}
    cpu = {}
    for name, after in ended.items():
        per_turn = turns * (1 if name == "stdio" else len(SCHEMES))
        cpu[name] = tuple(
            (a - b) / per_turn * 1000 for b, a in zip(spent[name], after, strict=True)
        )
    return results, cpu


async def bench_relay(sessions: dict[str, Any], gateway_of: dict[str, Pids], runs: int) -> Relay:
    """Each path's chunks/s for one long answer (the median of `runs`, after one run
    that warms it), and the CPU per chunk (us) its gateway spent over those runs: what
    a remote client costs per streamed token, beside the stdio client's own rate."""
    rates: dict[str, list[float]] = {path: [] for path in sessions}
    spent = dict.fromkeys(sessions, 0.0)
    chunks = dict.fromkeys(sessions, 0)
    for run in range(runs + 1):
        for path, session in sessions.items():
            gateway = (gateway_of[path][0], [])  # the gateway alone, not its agents
            before = _cpu(gateway)[0]
            _, seconds, count = await direct_turn(session, "relay")
            if run:
                rates[path].append(count / seconds)
                spent[path] += _cpu(gateway)[0] - before
                chunks[path] += count
    return {
        path: (statistics.median(rates[path]), spent[path] / max(chunks[path], 1) * 1e6)
        for path in sessions
    }


Pids = tuple[int | None, list[int]]  # a gateway (None: stdio) and its agents


def _processes(pid: int) -> tuple[int, list[int]]:
    """A gateway and its agents (pool processes it has started so far)."""
    return pid, descendants(pid)


def _cpu(pids: Pids) -> tuple[float, float]:
    """CPU seconds so far: (the gateway's, or 0 for stdio; its agents', summed)."""
    gateway, agents = pids
    return (cpu_seconds(gateway) if gateway else 0.0, sum(map(cpu_seconds, agents)))


def _path(scheme: str, gateway: str) -> str:
    return scheme if gateway == "after" else f"{scheme} ({gateway})"


async def remote_session_ttft(
    served: Served, scheme: str, work: str, protocol: int
) -> tuple[float, float]:
    """One whole remote client: (first token from its start -- connect, initialize,
    session/new, prompt --, first token from the prompt)."""
    start = time.perf_counter()
    async with Client(acp_url(served, scheme), protocol=protocol) as client:
        session = await client.new_session(work)
        prompted = time.perf_counter()
        from_prompt = (await direct_turn(session, "hi"))[0]
    return prompted - start + from_prompt, from_prompt


async def openai_session_ttft(http: httpx.AsyncClient, key: str) -> tuple[float, float]:
    """A new conversation per request: its start and its prompt are the same moment."""
    first = await gateway_ttft(http, key)
    return first, first


async def concurrent(
    served: Served, path: str, n: int, work: str, tag: str, protocol: int
) -> dict[str, float]:
    # The OpenAI path shares one httpx client (an OpenAI SDK user's habit, and a new one
    # costs ~35 ms of TLS setup on this loop); each remote client is its own connection.
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    base = f"http://127.0.0.1:{served.port}"
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits, headers=AUTH) as http:
        if path == "openai":
            jobs = [openai_session_ttft(http, f"{tag}-{i}") for i in range(n)]
        else:
            jobs = [remote_session_ttft(served, path, work, protocol) for _ in range(n)]
        pid = served.proc.pid
        start, client_cpu, gateway_cpu = time.perf_counter(), time.process_time(), cpu_seconds(pid)
        outcomes = await asyncio.gather(*jobs, return_exceptions=True)
        wall = time.perf_counter() - start
        client_cpu, gateway_cpu = time.process_time() - client_cpu, cpu_seconds(pid) - gateway_cpu
    ok = [o for o in outcomes if isinstance(o, tuple)]
    errors = [o for o in outcomes if not isinstance(o, tuple)]
    if errors:
        print(f"  {path}: {len(errors)} errors, e.g. {errors[0]!r}")
    nan = float("nan")
    starts, prompts = [o[0] for o in ok], [o[1] for o in ok]
    return {
        "start50": percentile(starts, 50) * 1000 if ok else nan,
        "start99": percentile(starts, 99) * 1000 if ok else nan,
        "prompt50": percentile(prompts, 50) * 1000 if ok else nan,
        "prompt99": percentile(prompts, 99) * 1000 if ok else nan,
        "errors": len(errors),
        "wall": wall,
        "client_cpu": client_cpu,
        "gateway_cpu": gateway_cpu,
        "rss": rss_mb(served.proc.pid),
    }


def concurrent_rounds(
    served: Served, n: int, rounds: int, work: str, protocol: int
) -> dict[str, dict[str, float]]:
    runs: dict[str, list[dict[str, float]]] = {"openai": [], "http": [], "ws": []}
    for r in range(rounds):
        for path in runs:  # alternating, so drift hits every path alike
            run = concurrent(served, path, n, work, f"r{r}", protocol)
            runs[path].append(asyncio.run(run))
    return {
        path: {k: statistics.median(run[k] for run in results) for k in results[0]}
        for path, results in runs.items()
    }


def report(
    args: argparse.Namespace,
    ttft: dict[str, list[float]],
    cpu: dict[str, tuple[float, float]],
    load: dict,
    mem: dict,
) -> None:
    print(
        f"\n### Time to first token, one session, {args.turns} turns each, "
        f"ACP v{args.protocol} (ms)\n"
    )
    print("| path | p50 | p99 | p50 vs stdio | p99 vs stdio |")
    print("|---|---:|---:|---:|---:|")
    base50, base99 = percentile(ttft["stdio"], 50), percentile(ttft["stdio"], 99)
    labels = {"stdio": "stdio (agentao.client)"}
    for scheme, label in SCHEMES.items():
        labels[scheme] = label
        labels[_path(scheme, "before")] = f"{label}, the `--before` gateway"
    for name, values in ttft.items():
        p50, p99 = percentile(values, 50), percentile(values, 99)
        print(
            f"| {labels[name]} | {p50 * 1000:.2f} | {p99 * 1000:.2f} "
            f"| {p50 / base50:.2f}x | {p99 / base99:.2f}x |"
        )
    print("\nCPU per turn over those turns (ms; a gateway's: per remote turn, both schemes):\n")
    print("| | the gateway | its agents |")
    print("|---|---:|---:|")
    names = {"stdio": "stdio", "after": "this gateway", "before": "the `--before` gateway"}
    for name, (gateway, agents) in cpu.items():
        shown = "-" if name == "stdio" else f"{gateway:.2f}"
        print(f"| {names[name]} | {shown} | {agents:.2f} |")
    print(
        f"\n### {args.concurrency} concurrent sessions, each its own client, "
        f"{args.processes} agent processes (median of {args.rounds} rounds)\n"
    )
    print(
        "| path | TTFT from the client's start p50 / p99 ms | TTFT from the prompt p50 / p99 ms "
        "| errors | wall s | CPU s: clients / gateway | gateway RSS MB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    labels = {"openai": "OpenAI API (chat, streamed)", **SCHEMES}
    for path, row in load.items():
        print(
            f"| {labels[path]} | {row['start50']:.0f} / {row['start99']:.0f} "
            f"| {row['prompt50']:.0f} / {row['prompt99']:.0f} | {row['errors']:.0f} "
            f"| {row['wall']:.2f} | {row['client_cpu']:.2f} / {row['gateway_cpu']:.2f} "
            f"| {row['rss']:.0f} |"
        )
    print(
        f"\nMemory: gateway {mem['gateway_before']:.0f} MB before the load, "
        f"{mem['gateway_after']:.0f} MB after; its agent processes {mem['agents']:.0f} MB."
    )


def report_relay(args: argparse.Namespace, relay: Relay) -> None:
    print(
        f"\n### Relay: one {args.relay_chunks:,}-chunk answer per path, ACP v{args.protocol} "
        f"(median of {args.relay_runs} runs, paths alternating)\n"
    )
    print("| path | chunks/s | vs stdio | gateway CPU us/chunk |")
    print("|---|---:|---:|---:|")
    base = relay["stdio"][0]
    for path, (rate, cpu) in relay.items():
        shown = "-" if path == "stdio" else f"{cpu:.1f}"
        print(f"| {_label(path)} | {rate:,.0f} | {rate / base:.2f}x | {shown} |")


def _label(path: str) -> str:
    if path == "stdio":
        return "stdio (agentao.client)"
    scheme, _, rest = path.partition(" ")
    return SCHEMES[scheme] + (", the `--before` gateway" if rest else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    # Every client speaks this ACP version: 1, issue 21's targets; 2, our agent's v2 on
    # stdio beside the gateway's v2 bridge (its pool drives the agent over v1).
    parser.add_argument("--protocol", type=int, choices=(1, 2), default=1)
    # Another checkout's `src` (`git archive <commit> src | tar -x -C /tmp/before`): its
    # gateway, and that gateway's agents, beside this one's in the TTFT table (turns
    # alternating). The client is this checkout's on every path.
    parser.add_argument("--before", help="another checkout's src directory, run side by side")
    parser.add_argument("--relay-chunks", type=int, default=5000)
    parser.add_argument("--relay-runs", type=int, default=5)
    args = parser.parse_args()
    # The gateway bench's setup, with room for every turn this bench runs: its long
    # script (every session's here) has a long answer for each relay run.
    setup_args = argparse.Namespace(
        chunks=args.relay_chunks, relay_runs=args.relay_runs + 1, turns=args.turns * 3 + 20
    )
    with tempfile.TemporaryDirectory() as tmp:
        setup = Setup(Path(tmp), setup_args)
        # One script for the gateway's agents too: every turn here is a "hi".
        limits = {"remote_connections_per_key": args.concurrency * 2}
        served = start_gateway(
            setup, args.processes, "after", script=setup.long_script, limits=limits
        )
        gateways = {"after": served}
        try:
            if args.before:  # its agents run that checkout too (start_gateway)
                gateways["before"] = start_gateway(
                    setup, args.processes, "before", args.before, setup.long_script, limits
                )
            (ttft, cpu), relay = asyncio.run(bench_sessions(setup, gateways, args))
            if "before" in gateways:
                gateways.pop("before").stop()  # the load below runs on this checkout only
            before = rss_mb(served.proc.pid)
            load = concurrent_rounds(
                served, args.concurrency, args.rounds, str(setup.work), args.protocol
            )
            agents = sum(rss_mb(pid) for pid in descendants(served.proc.pid))
            mem = {
                "gateway_before": before,
                "gateway_after": rss_mb(served.proc.pid),
                "agents": agents,
            }
        finally:
            for gateway in gateways.values():
                gateway.stop()
    report(args, ttft, cpu, load, mem)
    report_relay(args, relay)


if __name__ == "__main__":
    main()
