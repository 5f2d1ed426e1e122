"""Client throughput and ordering: agentao.client vs the official ACP Python SDK client.

    python bench/client.py [--updates 20000] [--runs 5]

Both clients drive the same agent, examples/echo_agent.py (agentao's protocol
core), in the same run: one prompt "chunks N" makes it stream N
`agent_message_chunk`s "0".."N-1" and end the turn. For each client we time
prompt-sent -> turn-complete (every update handled *and* the prompt answered),
and count:

  inversions     pairs of updates handed to the application out of order
  after result   updates handed over only after the `session/prompt` answer

The SDK's client is `acp.spawn_agent_process` + `ClientSideConnection`
(agent-client-protocol, the `bench` extra). Not a test: numbers vary by
machine; the ratio is what matters.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ECHO = ROOT / "examples" / "echo_agent.py"


@dataclass
class Run:
    seconds: float
    received: list[int]
    after_result: int


# ---- agentao.client -----------------------------------------------------------------


async def run_ours(n: int, runs: int, cwd: str) -> list[Run]:
    from agentao.client import AgentCommand, Client, TurnEnd

    results = []
    async with Client(AgentCommand((sys.executable, str(ECHO)))) as client:
        session = await client.new_session(cwd)
        for _ in range(runs):
            received: list[int] = []
            started = time.perf_counter()
            async for event in session.prompt(f"chunks {n}"):
                if isinstance(event, TurnEnd):
                    break
                received.append(int(event.text))
            results.append(Run(time.perf_counter() - started, received, 0))
    return results


# ---- the official SDK ---------------------------------------------------------------


class SdkCollector:
    """The SDK's Client interface: only session_update matters for the echo agent."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self.done = asyncio.Event()
        self.expected = 0
        self.answered = False
        self.after_result = 0

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.received.append(int(update.content.text))
        if self.answered:
            self.after_result += 1
        if len(self.received) >= self.expected:
            self.done.set()

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def on_connect(self, conn: Any) -> None:
        return None


async def run_sdk(n: int, runs: int, cwd: str) -> list[Run]:
    import acp

    collector = SdkCollector()
    results = []
    async with acp.spawn_agent_process(collector, sys.executable, str(ECHO)) as (conn, _proc):
        await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd=cwd, mcp_servers=[])
        for _ in range(runs):
            collector.received, collector.after_result, collector.answered = [], 0, False
            collector.expected, collector.done = n, asyncio.Event()
            started = time.perf_counter()
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block(f"chunks {n}")])
            collector.answered = True
            await asyncio.wait_for(collector.done.wait(), 60)
            results.append(
                Run(time.perf_counter() - started, collector.received, collector.after_result)
            )
    return results


# ---- report -------------------------------------------------------------------------


def inversions(values: list[int]) -> int:
    """Pairs (i < j) with values[i] > values[j], by merge sort: O(n log n)."""

    def sort(seq: list[int]) -> tuple[list[int], int]:
        if len(seq) <= 1:
            return seq, 0
        mid = len(seq) // 2
        left, a = sort(seq[:mid])
        right, b = sort(seq[mid:])
        merged, count, i, j = [], a + b, 0, 0
        while i < len(left) and j < len(right):
            if left[i] <= right[j]:
                merged.append(left[i])
                i += 1
            else:
                merged.append(right[j])
                count += len(left) - i
                j += 1
        return merged + left[i:] + right[j:], count

    return sort(values)[1]


def row(name: str, n: int, runs: list[Run]) -> dict[str, Any]:
    median = statistics.median(r.seconds for r in runs)
    return {
        "client": name,
        "updates": n,
        "seconds": median,
        "rate": n / median,
        "inversions": max(inversions(r.received) for r in runs),
        "missing": max(n - len(r.received) for r in runs),
        "after": max(r.after_result for r in runs),
    }


def table(rows: list[dict[str, Any]]) -> str:
    base = rows[-1]["rate"]
    lines = [
        "| client | updates/turn | median s | updates/s | vs SDK | inversions | after result | missing |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['client']} | {r['updates']} | {r['seconds']:.3f} | {r['rate']:,.0f} | "
            f"{r['rate'] / base:.2f}x | {r['inversions']} | {r['after']} | {r['missing']} |"
        )
    return "\n".join(lines)


async def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=20_000, help="updates per turn")
    parser.add_argument("--runs", type=int, default=5, help="turns per client (median reported)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as cwd:
        await run_ours(100, 1, cwd)  # warm caches (imports, pyc) for both
        await run_sdk(100, 1, cwd)
        ours = await run_ours(args.updates, args.runs, cwd)
        sdk = await run_sdk(args.updates, args.runs, cwd)
    print(f"echo agent: {ECHO.relative_to(ROOT)}, python {sys.version.split()[0]}")
    print(
        table([row("agentao.client", args.updates, ours), row("acp SDK (0.x)", args.updates, sdk)])
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
