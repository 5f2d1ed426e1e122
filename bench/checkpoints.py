"""The cost of file checkpoints (agent/checkpoints.py): time and bytes per turn.

    python bench/checkpoints.py [--repo PATH] [--turns 20]

On a real repository: a copy of this checkout's tracked files (`git ls-files`) in a
temporary directory, and, for the shell scan, also `--repo` as it is (default: this
checkout, with its .venv and node_modules: the worst case a developer's tree gives).
Each "turn" is what the agent's tool calls cost it around the call, run through the
real module:

- edit turn: three source files edited by "tools" (their prior bytes kept the first
  time, their hash recorded after);
- shell turn: one command (a file changed, one made) between the two listings of
  the workspace.

Reported: milliseconds per turn (median and max of `--turns`) and bytes kept per turn
(new blobs plus the manifest). Not a test: numbers only.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from agentao.agent.checkpoints import CheckpointLimits, Checkpoints

ROOT = Path(__file__).resolve().parents[1]


def tracked_copy(repo: Path, into: Path) -> Path:
    names = subprocess.run(
        ["git", "ls-files", "-z"], cwd=repo, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, names):
        source, target = repo / name.decode(), into / name.decode()
        if source.is_file() and not source.is_symlink():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
    return into


def used_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


async def edit_turn(cp: Checkpoints, ws: Path, turn: int, files: list[Path]) -> None:
    watch = await cp.watch(turn, ws, "edit", files)
    assert watch is not None
    for path in files:
        path.write_bytes(path.read_bytes() + f"# turn {turn}\n".encode())
    await watch.after()


def run_command(ws: Path, turn: int, changed: Path) -> None:
    """What the shell command does: one file changed, one made."""
    changed.write_bytes(changed.read_bytes() + b"# shell\n")
    (ws / f"made-{turn}.txt").write_bytes(b"made by a command\n")


async def shell_turn(cp: Checkpoints, ws: Path, turn: int, changed: Path) -> None:
    watch = await cp.watch(turn, ws, "execute", [])
    assert watch is not None
    run_command(ws, turn, changed)
    await watch.after()
    (ws / f"made-{turn}.txt").unlink()


def three_sources(ws: Path) -> list[Path]:
    return sorted(ws.rglob("*.py"))[:3] or sorted(p for p in ws.rglob("*") if p.is_file())[:3]


async def measure(ws: Path, state: Path, kind: str, turns: int) -> tuple[list[float], list[int]]:
    cp = Checkpoints(state, f"bench-{kind}", CheckpointLimits())
    sources = three_sources(ws)
    times, sizes = [], []
    for turn in range(turns):
        before = used_bytes(cp.dir) if cp.dir.exists() else 0
        start = time.perf_counter()
        if kind == "edit":
            await edit_turn(cp, ws, turn, sources)
        else:
            await shell_turn(cp, ws, turn, sources[0])
        times.append((time.perf_counter() - start) * 1000)
        sizes.append(used_bytes(cp.dir) - before)
    return times, sizes


def report(label: str, times: list[float], sizes: list[int]) -> None:
    print(
        f"{label:<46} {statistics.median(times):8.2f} ms median {max(times):8.2f} ms max"
        f" {statistics.median(sizes):10.0f} bytes/turn"
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo", type=Path, default=ROOT)
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws = tracked_copy(args.repo, Path(tmp) / "ws")
        state = Path(tmp) / "state"
        count = sum(1 for p in ws.rglob("*") if p.is_file())
        report(
            f"edit turn, tracked copy ({count} files)",
            *await measure(ws, state, "edit", args.turns),
        )
        report(
            f"shell turn, tracked copy ({count} files)",
            *await measure(ws, state, "shell", args.turns),
        )
        whole = sum(1 for p in args.repo.rglob("*") if p.is_file() and ".git" not in p.parts)
        cp = Checkpoints(state, "bench-whole", CheckpointLimits())
        times, listed = [], 0
        for turn in range(max(3, args.turns // 4)):  # listings only: the checkout is not touched
            start = time.perf_counter()
            watch = await cp.watch(turn, args.repo, "execute", [])
            assert watch is not None
            await watch.after()
            times.append((time.perf_counter() - start) * 1000)
            listed = len(watch.scan or {})
        label = f"shell turn, checkout as is ({whole} files, {listed} listed)"
        report(label, times, [used_bytes(cp.dir)])


if __name__ == "__main__":
    asyncio.run(main())
