"""Gateway bench: what `agentao serve` adds on top of talking ACP directly, and 100 streams.

    python bench/gateway.py [--before SRC] [--chunks 5000] [--concurrency 100]
                            [--processes 4] [--turns 200] [--targets-only]

Everything drives the same scripted agent (`agentao --acp`, LLM_PROVIDER=SCRIPTED),
and every gateway is a real `agentao serve` process on 127.0.0.1, read by a
one-write HTTP/1.1 client (raw sockets: the client's own cost stays out).

Targets, side by side in one run. With `--before SRC` (another checkout's `src`,
e.g. `git archive <commit> src | tar -x -C /tmp/before`) a second gateway runs that
code, and each measurement alternates between the two (and the direct client), so
machine drift hits all alike. `--before-env NAME=VALUE` (repeatable) runs the second
gateway with those variables, on that checkout or on this one (`--before-env
AGENTAO_EVENT_LOOP=asyncio`: the standard loop against uvloop; our agent gets every
`AGENTAO_*` variable of its gateway):

1. relay: one 5,000-chunk answer, chunks/s through the gateway (streaming chat
   completion, from the request's first byte to the stream's end) divided by
   chunks/s of `agentao.client` driving the same agent directly (prompt -> TurnEnd);
   the median of `--relay-runs` runs each. Target >= 0.8x (issue 21).
2. 100 concurrent streaming conversations, each opening its own (cold): time to
   first token p99 and errors, the median of `--rounds` rounds. Target <= 250 ms,
   0 errors (on 2 cores).

Then, for the current code only (skipped with --targets-only): time to first token
on one session (direct vs gateway, per percentile), 100 streams cold and warm vs the
same load straight over ACP, memory, and client disconnect -> `cancelled`.

Not a test: numbers only, printed as Markdown tables.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from agentao.client import AgentCommand, Client, Update

# Every bench gateway has this key (a keyless one needs its local token), so the same
# requests work on this code and on a `--before` checkout alike.
BENCH_KEY = "sk-bench"
AUTH = {"Authorization": f"Bearer {BENCH_KEY}"}
REPLY = {"text": ["Hello", " there", ",", " this", " is", " a", " scripted", " answer", "."]}
SLOW = {"match": "slow", "text": {"repeat": "tick ", "count": 500}, "delay": 0.01}


def relay_reply(chunks: int) -> dict[str, object]:
    return {"match": "relay", "text": {"repeat": "x", "count": chunks}}


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
    """Script files, agent state dirs, and the environment the agents run with.

    Two scripts: the scripted provider reads its whole file for every new session, so
    the targets' agents get a short one (what they use: the relay turns and a reply per
    conversation), and only the one-session TTFT run, 200 turns on one session, a long one.
    """

    def __init__(self, root: Path, args: argparse.Namespace) -> None:
        # `relay` turns first: a response with a `match` is taken only by prompts that
        # contain it, one without by any prompt, in order (see the scripted provider).
        relays = [relay_reply(args.chunks)] * (args.relay_runs + 4)
        short, long = root / "targets.json", root / "details.json"
        short.write_text(json.dumps({"responses": [*relays, SLOW, *[REPLY] * 5]}))
        long.write_text(json.dumps({"responses": [*relays, SLOW, *[REPLY] * (args.turns + 20)]}))
        self.work = root / "work"
        self.work.mkdir()
        self.env = {"LLM_PROVIDER": "SCRIPTED", "AGENTAO_SCRIPT": str(short)}
        self.long_script = str(long)
        self.root = root
        # Agents opening one fresh database at once would race to create it: create each.
        from agentao.store.paths import DATABASE_NAME
        from agentao.store.sessions import open_session_store

        for home in ("home-before", "home-after", "home-details", "direct-home"):
            (root / home).mkdir()
            open_session_store(root / home / DATABASE_NAME).db.close()

    def direct_command(self, script: str | None = None) -> AgentCommand:
        # Its own state directory: two agents committing to one SQLite file slow both.
        env = {**self.env, "AGENTAO_HOME": str(self.root / "direct-home")}
        if script is not None:
            env["AGENTAO_SCRIPT"] = script
        return AgentCommand.ours(env=env)


@dataclass
class Served:
    """One `agentao serve` process: `name` says which code it runs."""

    name: str
    proc: subprocess.Popen[bytes]
    port: int

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def start_gateway(
    setup: Setup,
    processes: int,
    name: str,
    src: str | None = None,
    script: str | None = None,
    limits: dict[str, int] | None = None,
    extra_env: dict[str, str] | None = None,
) -> Served:
    config = setup.root / f"gateway-{name}.toml"
    env = {**setup.env, "AGENTAO_HOME": str(setup.root / f"home-{name}")}  # its agents' own
    if script is not None:
        env["AGENTAO_SCRIPT"] = script
    if src is not None:  # the agents run in bubblewrap, which passes on only their `env`
        env["PYTHONPATH"] = src
    env_line = ", ".join(f'{k} = "{v}"' for k, v in env.items())
    limits_lines = "".join(f"{k} = {v}\n" for k, v in (limits or {}).items())
    config.write_text(
        f"""
[limits]
{limits_lines}
[agents.agentao]
command = ["{sys.executable}", "-m", "agentao", "--acp"]
processes = {processes}
cwd = "{setup.work}"
env = {{ {env_line} }}

[[keys]]
name = "bench"
key = "{BENCH_KEY}"
ceiling = "all"
"""
    )
    port = free_port()
    proc_env = {**os.environ, "AGENTAO_HOME": str(setup.root / f"gateway-home-{name}")}
    if src is not None:  # that checkout's gateway (its agents inherit it too)
        proc_env["PYTHONPATH"] = src
    proc_env.update(extra_env or {})
    command = [sys.executable, "-m", "agentao", "serve", "--config", str(config)]
    command += ["--port", str(port), "--log-level", "warning"]
    proc = subprocess.Popen(command, env=proc_env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            health = httpx.get(f"http://127.0.0.1:{port}/healthz").json()
            if health["agents"]["agentao"]["live"] == processes:
                return Served(name, proc, port)
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"the {name} gateway did not start")


# ---- clients ----------------------------------------------------------------------------


class RawHttp:
    """One keep-alive HTTP/1.1 connection, each request in a single write: the server's own
    latency, without an HTTP client library's overhead on top."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def chat(self, session_key: str, prompt: str) -> tuple[float, float, int]:
        """(seconds to the first content, seconds to the end, content chunks) of one
        streaming chat completion."""
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        body = json.dumps(
            {"model": "agentao", "stream": True, "messages": [{"role": "user", "content": prompt}]}
        ).encode()
        head = (
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
            f"Authorization: Bearer {BENCH_KEY}\r\n"
            f"Content-Type: application/json\r\nX-Session-Id: {session_key}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        start = time.perf_counter()
        self.writer.write(head + body)
        reader, first, chunks = self.reader, None, 0
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
            found = data.count(b'"content":"') - data.count(b'"content":""')
            if first is None and found:
                first = time.perf_counter() - start
            chunks += found
        assert first is not None
        return first, time.perf_counter() - start, chunks

    async def ttft(self, session_key: str) -> float:
        return (await self.chat(session_key, "hi"))[0]

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def direct_turn(session, prompt: str) -> tuple[float, float, int]:
    """(seconds to the first message chunk, seconds to TurnEnd, message chunks)."""
    start = time.perf_counter()
    first, chunks = None, 0
    async for event in session.prompt(prompt):
        if isinstance(event, Update) and event.kind == "agent_message_chunk":
            chunks += 1
            if first is None:
                first = time.perf_counter() - start
    assert first is not None
    return first, time.perf_counter() - start, chunks


async def gateway_ttft(http: httpx.AsyncClient, session_key: str) -> float:
    body = {"model": "agentao", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    start = time.perf_counter()
    first = None
    async with http.stream(
        "POST", "/v1/chat/completions", json=body, headers={**AUTH, "X-Session-Id": session_key}
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


# ---- the targets ------------------------------------------------------------------------


class CpuMeter:
    """CPU seconds (user + system) that each process of one path spent during its runs:
    what bounds a pipeline on a shared 2-core machine is the CPU each process spends per
    chunk, which the load of other processes does not change as it changes chunks/s."""

    def __init__(self, pids: dict[str, list[int]]) -> None:
        self.pids = pids  # role -> its processes (the bench itself is os.getpid())
        self.spent: dict[str, float] = dict.fromkeys(pids, 0.0)
        self.chunks = 0
        self._start: dict[str, float] = {}

    def __enter__(self) -> CpuMeter:
        self._start = self._now()
        return self

    def __exit__(self, *exc: object) -> None:
        for role, seconds in self._now().items():
            self.spent[role] += seconds - self._start[role]

    def _now(self) -> dict[str, float]:
        return {role: sum(cpu_seconds(pid) for pid in pids) for role, pids in self.pids.items()}

    def per_chunk_us(self) -> dict[str, float]:
        return {role: spent / max(self.chunks, 1) * 1e6 for role, spent in self.spent.items()}


def cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:  # an idle pool's process that exited meanwhile
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def bench_relay(
    setup: Setup, gateways: list[Served], runs: int
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Median chunks/s of one long answer: direct, then through each gateway, alternating;
    and each path's CPU per chunk, by process, over all its measured runs."""
    rates: dict[str, list[float]] = {"direct": [], **{g.name: [] for g in gateways}}
    # v1, as the gateway's pool drives the agent: the same agent work on both paths.
    async with Client(setup.direct_command(), protocol=1) as client:
        session = await client.new_session(str(setup.work))
        conns = {g.name: RawHttp(g.port) for g in gateways}
        meters = {"direct": CpuMeter({"client": [os.getpid()], "agent": descendants_now()})}
        for g in gateways:
            roles = {"gateway": [g.proc.pid], "agent": descendants(g.proc.pid)}
            meters[g.name] = CpuMeter({**roles, "client": [os.getpid()]})
        for run in range(runs + 1):  # the first round warms every path, and is dropped
            results = {}
            for name in rates:
                meter = meters[name] if run else CpuMeter({})
                with meter:
                    if name == "direct":
                        _, seconds, chunks = await direct_turn(session, "relay")
                    else:
                        _, seconds, chunks = await conns[name].chat("relay", "relay")
                meter.chunks += chunks
                results[name] = chunks / seconds
            for name, rate in results.items():
                if run:
                    rates[name].append(rate)
        for conn in conns.values():
            conn.close()
    medians = {name: statistics.median(values) for name, values in rates.items()}
    return medians, {name: meter.per_chunk_us() for name, meter in meters.items()}


def descendants_now() -> list[int]:
    """The agents this process started itself: the direct client's (the gateways' agents
    are their children, measured with them)."""
    me = os.getpid()
    children = Path(f"/proc/{me}/task/{me}/children").read_text().split()
    return [int(pid) for pid in children if _is_agent(int(pid))]


def _is_agent(pid: int) -> bool:
    try:
        return b"--acp" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return False


async def bench_concurrent(port: int, n: int, prefix: str) -> dict[str, float]:
    # One raw connection per stream: the client's own cost stays out of the numbers.
    clients = [RawHttp(port) for _ in range(n)]
    start = time.perf_counter()
    outcomes = await asyncio.gather(
        *(c.ttft(f"{prefix}-{i}") for i, c in enumerate(clients)), return_exceptions=True
    )
    wall = time.perf_counter() - start
    for c in clients:
        c.close()
    for error in [o for o in outcomes if not isinstance(o, float)][:3]:
        print(f"  {prefix} error: {error!r}", file=sys.stderr)
    return _summary(outcomes, wall)


def concurrent_rounds(gateways: list[Served], n: int, rounds: int) -> dict[str, dict[str, float]]:
    """Cold rounds (each stream opens its conversation), alternating between gateways; the
    round with the median p99 is kept for each."""
    seen: dict[str, list[dict[str, float]]] = {g.name: [] for g in gateways}
    for r in range(rounds):
        for g in gateways if r % 2 else gateways[::-1]:  # who goes first alternates
            time.sleep(1.0)  # the last round's agents have stored their sessions
            seen[g.name].append(asyncio.run(bench_concurrent(g.port, n, f"cold{r}")))
    return {
        name: sorted(runs, key=lambda x: x["p99"])[len(runs) // 2] for name, runs in seen.items()
    }


def report_targets(args, relay: tuple, streams: dict[str, dict[str, float]]) -> None:
    relay, cpu = relay
    names = [n for n in ("before", "after") if n in streams]
    print(f"\n## Gateway targets ({os.cpu_count()} cores; {args.chunks}-chunk relay, median of "
          f"{args.relay_runs}; {args.concurrency} concurrent cold streams, median of "
          f"{args.rounds} rounds)\n")  # fmt: skip
    print("| | " + " | ".join(names) + " | target |")
    print("|---|" + "---:|" * len(names) + "---|")
    ratios = " | ".join(
        f"**{relay[n] / relay['direct']:.2f}x** ({relay[n]:,.0f} / {relay['direct']:,.0f} chunks/s)"
        for n in names
    )
    print(f"| relay: chunks/s through the gateway / direct agentao.client | {ratios} | >= 0.8x |")
    d = cpu["direct"]
    per_chunk = " | ".join(
        f"gateway {cpu[n]['gateway']:.1f}, its agent {cpu[n]['agent']:.1f}, "
        f"HTTP client {cpu[n]['client']:.1f}"
        for n in names
    )
    print(f"| relay: CPU us per chunk by process (direct: agentao.client {d['client']:.1f}, "
          f"its agent {d['agent']:.1f}) | {per_chunk} | |")  # fmt: skip
    ttft = " | ".join(
        f"**{streams[n]['p99']:.0f} ms** p99 (p50 {streams[n]['p50']:.0f}), "
        f"{streams[n]['errors']:.0f} errors"
        for n in names
    )
    print(f"| {args.concurrency} concurrent streaming conversations: time to first token | "
          f"{ttft} | <= 250 ms, 0 errors |")  # fmt: skip


# ---- the rest: current code only ----------------------------------------------------------


async def bench_ttft(setup: Setup, port: int, turns: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {"direct": [], "raw": [], "httpx": []}
    async with (
        Client(setup.direct_command(setup.long_script), protocol=1) as client,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60, headers=AUTH) as http,
    ):
        session = await client.new_session(str(setup.work))
        raw = RawHttp(port)
        for _ in range(5):  # warm every path (imports, first session, caches)
            await direct_turn(session, "hi")
            await raw.ttft("ttft")
            await gateway_ttft(http, "ttft")
        for _ in range(turns):
            results["direct"].append((await direct_turn(session, "hi"))[0])
            results["raw"].append(await raw.ttft("ttft"))
            results["httpx"].append(await gateway_ttft(http, "ttft"))
        raw.close()
    return results


async def direct_concurrent(setup: Setup, n: int, processes: int) -> tuple[dict, dict]:
    """The same load straight over ACP: `processes` agents, n sessions spread across them;
    cold (each opens its session, timed) then warm (the sessions exist)."""
    clients = [Client(setup.direct_command(), protocol=1) for _ in range(processes)]
    await asyncio.gather(*(c.start() for c in clients))
    for c in clients:  # warm each process the way the gateway's were (a first session, a turn)
        await direct_turn(await c.new_session(str(setup.work)), "hi")
    sessions: list = [None] * n

    async def cold(i: int) -> float:
        start = time.perf_counter()
        sessions[i] = await clients[i % processes].new_session(str(setup.work))
        return time.perf_counter() - start + (await direct_turn(sessions[i], "hi"))[0]

    async def warm(i: int) -> float:
        return (await direct_turn(sessions[i], "hi"))[0]

    try:
        rounds = []
        for run in (cold, warm):
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
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers=AUTH) as http:
        for i in range(n):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(
                f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                f"Authorization: Bearer {BENCH_KEY}\r\n"
                f"X-Session-Id: cancel-{i}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n".encode()
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


def report_details(args, ttft, rounds, rss_before, gateway_rss, agents_rss, cancels) -> None:
    cold, warm, direct_cold, direct_warm = rounds
    d = ttft["direct"]
    ms = lambda values, p: percentile(values, p) * 1000  # noqa: E731
    print(f"\n## Current code ({args.turns} turns; {args.concurrency} concurrent streams, "
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
    print(
        f"\nclient disconnect -> agent answered `cancelled` ({len(cancels)} streams): "
        f"p50 {percentile(cancels, 50) * 1000:.1f} ms, max {max(cancels) * 1000:.1f} ms"
    )


def details(args, setup: Setup) -> None:
    after = start_gateway(setup, args.processes, "details", script=setup.long_script)
    try:
        measure_details(args, setup, after)
    finally:
        after.stop()


def measure_details(args, setup: Setup, after: Served) -> None:
    ttft = asyncio.run(bench_ttft(setup, after.port, args.turns))
    cancels = asyncio.run(cancel_latency(after.port, 20))
    rss_before = rss_mb(after.proc.pid)
    cold = asyncio.run(bench_concurrent(after.port, args.concurrency, "details"))
    warm = asyncio.run(bench_concurrent(after.port, args.concurrency, "details"))
    gateway_rss = rss_mb(after.proc.pid)
    agents_rss = sum(rss_mb(pid) for pid in descendants(after.proc.pid))
    direct = asyncio.run(direct_concurrent(setup, args.concurrency, args.processes))
    report_details(args, ttft, (cold, warm, *direct), rss_before, gateway_rss, agents_rss, cancels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="another checkout's src directory, run side by side")
    parser.add_argument(
        "--before-env", action="append", default=[], help="NAME=VALUE for the second gateway"
    )
    parser.add_argument("--chunks", type=int, default=5000)
    parser.add_argument("--relay-runs", type=int, default=7)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--targets-only", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        setup = Setup(Path(tmp), args)
        gateways = []
        try:
            if args.before or args.before_env:
                env = dict(v.split("=", 1) for v in args.before_env)
                before = start_gateway(setup, args.processes, "before", args.before, extra_env=env)
                gateways.append(before)
            gateways.append(start_gateway(setup, args.processes, "after"))
            relay = asyncio.run(bench_relay(setup, gateways, args.relay_runs))
            streams = concurrent_rounds(gateways, args.concurrency, args.rounds)
        finally:
            for g in gateways:
                g.stop()
        if not args.targets_only:
            details(args, setup)
    report_targets(args, relay, streams)


if __name__ == "__main__":
    main()
