"""Replicas bench: one, two and three `agentao serve` replicas on one PostgreSQL store.

    python bench/replicas.py [--loads 100,300] [--processes 2] [--rounds 2] [--failovers 5]

A throwaway PostgreSQL cluster on 127.0.0.1 (tests/postgres.py: initdb + pg_ctl, fsync
off) holds the gateways' store and the agents' sessions. Every replica is a real
`agentao serve --store URL` process with `--processes` scripted agents of its own.

1. Load: N concurrent streaming chat completions, each a new conversation, spread
   round-robin over the replicas as a load balancer would: time to first token p50/p99
   (ms), errors and wall time, for 1, 2 and 3 replicas, the median of `--rounds`.
   (On a machine with few cores the replicas share them: more replicas add agent
   processes, not cores.)
2. Forwarding: conversations live on replica A, their next turn sent to A directly or
   to replica B, which passes it on to A and streams A's answer back: time to first
   token p50/p99 one at a time (alternating) and `--forwarded` at once.
3. Failover: a conversation with a completed turn on replica A; A is SIGKILLed; the
   time until its next turn is answered by replica B (retried every 20 ms): when B can
   see that A's process is gone (same machine), and when it cannot and waits for A's
   lease to expire (another machine, simulated by recording A's host under another name).

Not a test: numbers only, printed as Markdown tables.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from gateway import AUTH, BENCH_KEY, free_port, gateway_ttft, percentile

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.postgres import PostgresServer, find_bindir  # noqa: E402 (the repo's root first)

REPLY = {"text": ["Hello", " there", ",", " a", " scripted", " answer", "."]}
SLOW = {"match": "slow", "text": {"repeat": "tick ", "count": 500}, "delay": 0.01}
LEASE_SECONDS = 5.0


class Replica:
    def __init__(self, root: Path, url: str, processes: int, index: int) -> None:
        self.port = free_port()
        home = root / f"replica-{index}-{self.port}"
        (home / "agents").mkdir(parents=True)
        script = root / "script.json"
        config = home / "gateway.toml"
        config.write_text(
            f"""
[limits]
lease_seconds = {LEASE_SECONDS}
heartbeat_seconds = 1.0

[agents.agentao]
command = ["{sys.executable}", "-m", "agentao", "--acp"]
processes = {processes}
cwd = "{root}"

[agents.agentao.env]
LLM_PROVIDER = "SCRIPTED"
AGENTAO_SCRIPT = "{script}"
AGENTAO_HOME = "{home / "agents"}"
AGENTAO_STORE_URL = "{url}"

[[keys]]
name = "bench"
key = "{BENCH_KEY}"
ceiling = "all"
"""
        )
        command = [sys.executable, "-m", "agentao", "serve", "--config", str(config)]
        command += ["--store", url, "--port", str(self.port), "--log-level", "warning"]
        env = {**os.environ, "AGENTAO_HOME": str(home)}
        self.proc = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
        self._wait_ready()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/readyz").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError("a replica did not become ready")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(timeout=30)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=30)


# ---- load --------------------------------------------------------------------------------


async def load(replicas: list[Replica], n: int, tag: str) -> dict[str, float]:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    clients = [
        httpx.AsyncClient(
            base_url=r.url, timeout=120, limits=limits, follow_redirects=True, headers=AUTH
        )
        for r in replicas
    ]
    try:
        jobs = [gateway_ttft(clients[i % len(clients)], f"{tag}-{i}") for i in range(n)]
        start = time.perf_counter()
        outcomes = await asyncio.gather(*jobs, return_exceptions=True)
        wall = time.perf_counter() - start
    finally:
        for client in clients:
            await client.aclose()
    ok = [o * 1000 for o in outcomes if isinstance(o, float)]
    errors = [o for o in outcomes if not isinstance(o, float)]
    if errors:
        print(f"  {len(errors)} errors, e.g. {errors[0]!r}")
    nan = float("nan")
    return {
        "p50": percentile(ok, 50) if ok else nan,
        "p99": percentile(ok, 99) if ok else nan,
        "errors": len(errors),
        "wall": wall,
    }


def bench_load(root: Path, server: PostgresServer, args: argparse.Namespace) -> dict:
    results: dict[tuple[int, int], dict[str, float]] = {}
    for count in (1, 2, 3):
        url = server.create_database()
        replicas = [Replica(root, url, args.processes, i) for i in range(count)]
        try:
            for n in args.loads:
                runs = [
                    asyncio.run(load(replicas, n, f"{count}-{n}-{r}")) for r in range(args.rounds)
                ]
                results[(count, n)] = {
                    k: statistics.median(run[k] for run in runs) for k in runs[0]
                }
        finally:
            for replica in replicas:
                replica.stop()
    return results


# ---- forwarding --------------------------------------------------------------------------


async def _ttfts(client: httpx.AsyncClient, keys: list[str], at_once: bool) -> list[float]:
    if at_once:
        return [t * 1000 for t in await asyncio.gather(*(gateway_ttft(client, k) for k in keys))]
    return [await gateway_ttft(client, k) * 1000 for k in keys]


async def forwarding(a: Replica, b: Replica, n: int, at_once: bool, tag: str) -> dict:
    """TTFT of a conversation's second turn, its first having made it live on A."""
    # No connection kept between phases: one the server closed meanwhile fails the next use.
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
    async with (
        httpx.AsyncClient(base_url=a.url, timeout=120, limits=limits, headers=AUTH) as to_a,
        httpx.AsyncClient(base_url=b.url, timeout=120, limits=limits, headers=AUTH) as to_b,
    ):
        keys = [f"{tag}-{i}" for i in range(2 * n)]
        await _ttfts(to_a, keys, at_once=True)  # every conversation live on A
        if at_once:
            direct = await _ttfts(to_a, keys[:n], True)
            passed = await _ttfts(to_b, keys[n:], True)
        else:  # alternating, so that both paths see the same machine
            direct, passed = [], []
            for i in range(n):
                direct += await _ttfts(to_a, [keys[2 * i]], False)
                passed += await _ttfts(to_b, [keys[2 * i + 1]], False)
    return {
        "direct": (percentile(direct, 50), percentile(direct, 99)),
        "forwarded": (percentile(passed, 50), percentile(passed, 99)),
    }


def bench_forwarding(root: Path, server: PostgresServer, args: argparse.Namespace) -> dict:
    url = server.create_database()
    a, b = Replica(root, url, args.processes, 0), Replica(root, url, args.processes, 1)
    try:
        return {
            "one at a time": asyncio.run(forwarding(a, b, args.forwarded, False, "seq")),
            f"{args.forwarded} at once": asyncio.run(forwarding(a, b, args.forwarded, True, "par")),
        }
    finally:
        a.stop()
        b.stop()


# ---- failover ----------------------------------------------------------------------------


def failover_once(root: Path, url: str, processes: int, elsewhere: bool) -> float:
    a, b = Replica(root, url, processes, 0), Replica(root, url, processes, 1)
    try:
        hi = {"model": "agentao", "input": "hi"}
        first = httpx.post(f"{a.url}/v1/responses", json=hi, headers=AUTH)
        previous = first.json()["id"]
        if elsewhere:
            _rename_hosts(url)
        killed = time.perf_counter()
        a.kill()
        body = {"model": "agentao", "input": "again", "previous_response_id": previous}
        while True:
            try:
                answer = httpx.post(f"{b.url}/v1/responses", json=body, timeout=30, headers=AUTH)
                if answer.status_code == 200 and answer.json()["status"] == "completed":
                    return time.perf_counter() - killed
            except httpx.HTTPError:
                pass
            time.sleep(0.02)
    finally:
        a.stop()
        b.stop()


def _rename_hosts(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE gw_boots SET host = 'another-machine'")


def bench_failover(root: Path, server: PostgresServer, args: argparse.Namespace) -> dict:
    times: dict[str, list[float]] = {"same machine": [], "another machine": []}
    for _ in range(args.failovers):
        for where in times:
            url = server.create_database()
            times[where].append(failover_once(root, url, 1, where == "another machine"))
    return times


# ---- report ------------------------------------------------------------------------------


def report(args: argparse.Namespace, load_results: dict, forwarded: dict, failovers: dict) -> None:
    print(
        f"\n### Concurrent streaming chats, round-robin over the replicas ({args.processes} "
        f"agent processes each, median of {args.rounds})\n"
    )
    print("| replicas | concurrent | TTFT p50 ms | TTFT p99 ms | errors | wall s |")
    print("|---:|---:|---:|---:|---:|---:|")
    for (count, n), row in sorted(load_results.items()):
        print(
            f"| {count} | {n} | {row['p50']:.0f} | {row['p99']:.0f} | {row['errors']:.0f} "
            f"| {row['wall']:.2f} |"
        )
    print(
        "\n### A conversation live on A, its next turn sent to A, or to B which passes it "
        "to A (streaming chat, TTFT ms)\n"
    )
    print("| load | direct p50 | direct p99 | via B p50 | via B p99 | p50 ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for load_name, row in forwarded.items():
        (d50, d99), (f50, f99) = row["direct"], row["forwarded"]
        print(f"| {load_name} | {d50:.1f} | {d99:.1f} | {f50:.1f} | {f99:.1f} | {f50 / d50:.2f}x |")
    print(
        f"\n### Failover: SIGKILL of the replica holding a conversation -> its next turn "
        f"answered by another ({args.failovers} runs each; lease {LEASE_SECONDS:g} s)\n"
    )
    print("| the survivor can see the dead process | median s | max s |")
    print("|---|---:|---:|")
    for where, values in failovers.items():
        label = "yes (same machine)" if where == "same machine" else "no (another machine)"
        print(f"| {label} | {statistics.median(values):.2f} | {max(values):.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loads", default="100,300", type=lambda s: [int(x) for x in s.split(",")])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--forwarded", type=int, default=100)
    parser.add_argument("--failovers", type=int, default=5)
    args = parser.parse_args()
    bindir = find_bindir()
    if bindir is None:
        sys.exit("PostgreSQL is not installed (initdb/pg_ctl): apt-get install postgresql")
    server = PostgresServer.start(bindir)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            os.chmod(root, 0o755)
            (root / "script.json").write_text(json.dumps({"responses": [SLOW, *[REPLY] * 50]}))
            load_results = bench_load(root, server, args)
            forwarded = bench_forwarding(root, server, args)
            failovers = bench_failover(root, server, args)
    finally:
        server.stop()
    report(args, load_results, forwarded, failovers)


if __name__ == "__main__":
    main()
