"""Protocol core bench: our echo agent vs the official SDK's, side by side, in one run.

    python bench/protocol.py [--runs 5] [--chunks 20000]

Both agents (examples/echo_agent.py and tests/fakes/sdk_agent.py) are spawned
fresh for every measurement and driven by the same neutral raw-JSON client
below, which checks that every chunk arrives, in order, before the result.
Measured: spawn -> `initialize` reply (cold start), a 1000-chunk turn, update
throughput over a long turn, and the agent's peak RSS. Not a test: numbers only.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import json
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AGENTS = {
    "agentao": [sys.executable, str(ROOT / "examples" / "echo_agent.py")],
    "acp-sdk": [sys.executable, str(ROOT / "tests" / "fakes" / "sdk_agent.py")],
}


@dataclass
class TurnStats:
    seconds: float
    updates: int
    inversions: int
    missing: int


class RawClient:
    """Speaks JSON lines to a subprocess; no ACP library involved."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0

    @classmethod
    async def spawn(cls, argv: list[str]) -> RawClient:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=1 << 24,
        )
        return cls(proc)

    async def send(self, method: str, params: dict) -> int:
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        await self.proc.stdin.drain()
        return self.next_id

    async def call(self, method: str, params: dict) -> dict:
        rid = await self.send(method, params)
        while True:
            msg = json.loads(await self.proc.stdout.readline())
            if msg.get("id") == rid and "method" not in msg:
                return msg

    async def turn(self, session_id: str, chunks: int) -> TurnStats:
        start = time.perf_counter()
        rid = await self.send(
            "session/prompt",
            {"sessionId": session_id, "prompt": [{"type": "text", "text": f"chunks {chunks}"}]},
        )
        expected, updates, inversions = 0, 0, 0
        while True:
            msg = json.loads(await self.proc.stdout.readline())
            if msg.get("method") == "session/update":
                value = int(msg["params"]["update"]["content"]["text"])
                inversions += value < expected
                expected = max(expected, value + 1)
                updates += 1
            elif msg.get("id") == rid:
                break
        return TurnStats(time.perf_counter() - start, updates, inversions, chunks - updates)

    def peak_rss_mib(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    async def close(self) -> None:
        self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 5)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


async def cold_start(argv: list[str]) -> float:
    start = time.perf_counter()
    client = await RawClient.spawn(argv)
    await client.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    elapsed = time.perf_counter() - start
    await client.close()
    return elapsed


async def one_turn(argv: list[str], chunks: int) -> tuple[TurnStats, float]:
    client = await RawClient.spawn(argv)
    await client.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    new = await client.call("session/new", {"cwd": str(ROOT), "mcpServers": []})
    stats = await client.turn(new["result"]["sessionId"], chunks)
    rss = client.peak_rss_mib()
    await client.close()
    return stats, rss


async def measure(name: str, argv: list[str], runs: int, chunks: int) -> dict[str, float]:
    starts = [await cold_start(argv) for _ in range(runs)]
    small = [(await one_turn(argv, 1000))[0] for _ in range(runs)]
    big = [await one_turn(argv, chunks) for _ in range(max(1, runs // 2))]
    for stats, _ in big:
        if stats.missing or stats.inversions:
            print(
                f"  ! {name}: {stats.missing} missing, {stats.inversions} reordered",
                file=sys.stderr,
            )
    return {
        "cold start (s)": statistics.median(starts),
        "1000-chunk turn (s)": statistics.median(s.seconds for s in small),
        "updates/s": statistics.median(s.updates / s.seconds for s, _ in big),
        "reordered": sum(s.inversions for s, _ in big) + sum(s.inversions for s in small),
        "missing": sum(s.missing for s, _ in big) + sum(s.missing for s in small),
        "peak RSS (MiB)": statistics.median(rss for _, rss in big),
    }


def print_table(results: dict[str, dict[str, float]]) -> None:
    ours, theirs = results["agentao"], results["acp-sdk"]
    print(f"{'metric':<22}{'agentao':>12}{'acp-sdk':>12}{'agentao/sdk':>14}")
    for metric in ours:
        a, b = ours[metric], theirs[metric]
        ratio = f"{a / b:.2f}x" if b else "-"
        print(f"{metric:<22}{a:>12.4g}{b:>12.4g}{ratio:>14}")


def compile_sources() -> None:
    """Byte-compile our sources as `pip install` would, so cold starts compare like for like."""
    for folder in ("src", "examples", "bench"):
        compileall.compile_dir(ROOT / folder, quiet=1)


async def main() -> None:
    compile_sources()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--chunks", type=int, default=20_000)
    args = parser.parse_args()
    results = {}
    for name, argv in AGENTS.items():
        results[name] = await measure(name, argv, args.runs, args.chunks)
    print_table(results)


if __name__ == "__main__":
    asyncio.run(main())
