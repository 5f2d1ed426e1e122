"""The client's per-update cost: decode a `session/update` line, fold it into the session.

    python bench/fold.py [--before SRC] [--repeat 20] [--runs 5]

Every update of the recorded real-agent transcripts (tests/data/real-agent-transcripts:
claude-agent-acp, codex-acp, gemini-cli, qwen-code) is read as the client reads it: the
line parsed, its params decoded leniently into `schema.SessionNotification` (once, at
the edge), then `SessionState.apply` (the fold, with tool calls merged by id). Reported:
microseconds per update, the best of `--runs` runs of `--repeat` passes (the machine
is shared: the best run is the one least disturbed).

With `--before SRC` (another checkout's `src`, e.g. /work/main/src), the same is timed
there, each run in a process of its own, alternating with this checkout's, and the
ratio printed. Before the typed fold, every
`tool_call_update` merged the raw dicts and decoded the merged call a second time.
Not a test: numbers only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPTS = sorted((ROOT / "tests" / "data" / "real-agent-transcripts").glob("*.jsonl"))


def update_lines() -> list[bytes]:
    lines = []
    for path in TRANSCRIPTS:
        for line in path.read_text().splitlines():
            entry = json.loads(line) if line.strip() else {}
            msg = entry.get("msg") or {}
            if entry.get("dir") == "recv" and msg.get("method") == "session/update":
                lines.append(json.dumps(msg).encode())
    return lines


def time_fold(lines: list[bytes], repeat: int) -> float:
    """Seconds per update over `repeat` passes, each pass a fresh session per transcript."""
    import msgspec

    from agentao.client.state import SessionState
    from agentao.protocol import schema
    from agentao.protocol.decode import decode_lenient

    parse = msgspec.json.Decoder().decode
    start = time.perf_counter()
    for _ in range(repeat):
        state = SessionState("s", max_backlog=1_000_000)
        for line in lines:
            message = parse(line)
            params = decode_lenient(schema.SessionNotification, message["params"])
            value = params.update
            value = None if isinstance(value, schema.UnknownVariant) else value
            raw = message["params"]["update"]
            state.apply(raw["sessionUpdate"], value, raw)
    return (time.perf_counter() - start) / (repeat * len(lines))


def worker(repeat: int) -> None:
    lines = update_lines()
    time_fold(lines, 1)  # warm: the decoders' caches, the first-use imports
    print(json.dumps({"updates": len(lines), "seconds": time_fold(lines, repeat)}))


def measure(src: str, repeat: int) -> dict[str, float]:
    code = f"import sys; sys.path.insert(0, {src!r}); sys.path.insert(1, {str(ROOT)!r}); " + (
        f"from bench.fold import worker; worker({repeat})"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def best(runs: list[dict[str, float]]) -> dict[str, float]:
    return min(runs, key=lambda r: r["seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="another checkout's src directory")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    afters: list[dict[str, float]] = []
    befores: list[dict[str, float]] = []
    for _ in range(args.runs):
        afters.append(measure(str(ROOT / "src"), args.repeat))
        if args.before:
            befores.append(measure(args.before, args.repeat))
    after = best(afters)
    print("| code | updates | µs per update (best) | median |\n|---|---|---|---|")
    median = statistics.median(r["seconds"] for r in afters)
    print(
        f"| this checkout | {after['updates']} | {after['seconds'] * 1e6:.1f} | {median * 1e6:.1f} |"
    )
    if befores:
        before = best(befores)
        median = statistics.median(r["seconds"] for r in befores)
        print(
            f"| before ({args.before}) | {before['updates']} | {before['seconds'] * 1e6:.1f}"
            f" | {median * 1e6:.1f} |"
        )
        print(f"\nratio after/before (best runs): {after['seconds'] / before['seconds']:.2f}")


if __name__ == "__main__":
    main()
