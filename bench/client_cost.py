"""The client's cost per session/update, in instructions: repeatable whatever the load.

    python bench/client_cost.py [--baseline OTHER_CHECKOUT/src]

Wall-clock benches (`bench/client.py`) swing by tens of percent on a busy machine. This
one runs the client's whole receive path in one process -- `agentao.client.Client` on
in-memory pipes, fed by a minimal raw-JSON agent -- under valgrind's callgrind, for two
sizes, and prints (instructions at N2 - instructions at N1) / (N2 - N1): the cost of
one more update (framing, decoding, ordering, the session view, the turn iterator),
start-up excluded. With --baseline, the same for another checkout's `src`, side by
side. Needs valgrind (Debian `valgrind`). The fake agent's own JSON encoding is in
both columns alike.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = (2000, 12000)


class _Pipe:
    def __init__(self) -> None:
        self.reader = asyncio.StreamReader()

    def write(self, data: bytes) -> None:
        self.reader.feed_data(data)

    async def drain(self) -> None:
        await asyncio.sleep(0)

    def close(self) -> None:
        self.reader.feed_eof()


def _line(obj: dict) -> bytes:
    return json.dumps(obj).encode() + b"\n"


async def _agent(inbox: asyncio.StreamReader, out: _Pipe, n: int) -> None:
    """Answers initialize and session/new; a prompt gets n chunks, then its result."""
    while line := await inbox.readline():
        msg = json.loads(line)
        method, mid = msg.get("method"), msg.get("id")
        if method == "initialize":
            out.write(_line({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": 1}}))
        elif method == "session/new":
            out.write(_line({"jsonrpc": "2.0", "id": mid, "result": {"sessionId": "s1"}}))
        elif method == "session/prompt":
            for i in range(n):
                update = {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": str(i)},
                }
                params = {"sessionId": "s1", "update": update}
                out.write(_line({"jsonrpc": "2.0", "method": "session/update", "params": params}))
            out.write(_line({"jsonrpc": "2.0", "id": mid, "result": {"stopReason": "end_turn"}}))


async def _drive(n: int) -> int:
    from agentao.client import Client

    to_agent, to_client = _Pipe(), _Pipe()
    agent = asyncio.ensure_future(_agent(to_agent.reader, to_client, n))
    client = Client()
    await client.start(streams=(to_client.reader, to_agent))  # type: ignore[arg-type]
    session = await client.new_session("/tmp")
    count = sum([1 async for _ in session.prompt("go")])
    to_client.close()
    to_agent.close()
    await client.close()
    agent.cancel()
    return count


def instructions(src: Path, n: int) -> int:
    """Instructions callgrind counts for one run of this file's driver with `n` updates."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    argv += [sys.executable, __file__, "--drive", str(n)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    match = re.search(r"Collected : (\d+)", done.stderr)
    assert match, done.stderr[-2000:]
    return int(match.group(1))


def per_update(src: Path) -> float:
    low, high = (instructions(src, n) for n in SIZES)
    return (high - low) / (SIZES[1] - SIZES[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another checkout's src directory")
    parser.add_argument("--drive", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.drive is not None:
        print(asyncio.run(_drive(args.drive)), file=sys.stderr)
        return
    ours = per_update(ROOT / "src")
    print(f"{'checkout':10} instructions per update")
    print(f"{'this':10} {ours:,.0f}")
    if args.baseline is not None:
        base = per_update(args.baseline)
        print(f"{'baseline':10} {base:,.0f}")
        print(f"this / baseline: {ours / base:.3f}")


if __name__ == "__main__":
    main()
