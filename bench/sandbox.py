"""The cost of confinement: a shell command's wall time with and without bubblewrap.

    python bench/sandbox.py [--runs 200] [--command "true"]

Both columns run through agentao's own `LocalEnv.run_command` (what
`run_shell_command` calls), in the same run and interleaved, so machine load hits
both alike: "bare" is `bash -c COMMAND` in its own process group, "sandboxed" the
same command inside bwrap with the confinement an approved command gets under
workspace-write (workspace writable, no network, own PID namespace, empty home).
A third column times `bwrap` alone (spawn + namespace setup + exit) outside our code,
to show what is bwrap's and what is ours. Not a test: the added milliseconds are
what matters (the aim is at most 20 ms at p50).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from agentao.agent.local_env import LocalEnv  # noqa: E402
from agentao.agent.sandbox import Confinement, Sandbox  # noqa: E402
from agentao.agent.settings import ShellLimits  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(runs: int, command: str, ws: Path) -> dict[str, list[float]]:
    sandbox = Sandbox()
    status = sandbox.status()
    if not status.available:
        sys.exit(f"no sandbox here: {status.reason}")
    # No drain wait: both columns end when the command does (what the model waits for).
    env = LocalEnv(ShellLimits(drain_after_exit=0.0), sandbox=sandbox)
    confined = Confinement(writable=(ws,))
    bwrap_only = sandbox.argv(command, ws, confined)
    times: dict[str, list[float]] = {"bare": [], "sandboxed": [], "bwrap alone": []}
    for _ in range(runs):
        for name, confinement in (("bare", None), ("sandboxed", confined)):
            start = time.perf_counter()
            result = await env.run_command(command, ws, 30.0, 1 << 16, None, confinement)
            times[name].append(time.perf_counter() - start)
            assert result.exit_code == 0, result.output
        start = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            *bwrap_only, env={}, stdout=asyncio.subprocess.DEVNULL
        )
        assert await proc.wait() == 0
        times["bwrap alone"].append(time.perf_counter() - start)
    return times


def report(times: dict[str, list[float]], command: str) -> None:
    print(f"command: {command!r}, {len(times['bare'])} runs each, interleaved")
    print(f"{'':14}{'p50 ms':>10}{'p90 ms':>10}{'p99 ms':>10}")
    for name, values in times.items():
        row = [percentile(values, q) * 1000 for q in (0.5, 0.9, 0.99)]
        print(f"{name:14}" + "".join(f"{v:10.2f}" for v in row))
    added = statistics.median(times["sandboxed"]) - statistics.median(times["bare"])
    ratio = statistics.median(times["sandboxed"]) / statistics.median(times["bare"])
    print(f"added by the sandbox at p50: {added * 1000:.2f} ms ({ratio:.2f}x bare)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--command", default="true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        times = asyncio.run(measure(args.runs, args.command, Path(tmp).resolve()))
    report(times, args.command)


if __name__ == "__main__":
    main()
