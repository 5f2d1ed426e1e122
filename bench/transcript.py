"""A huge Chat Completions transcript, and what it costs every other caller meanwhile.

    python bench/transcript.py [--before SRC] [--messages 100000] [--runs 3]

A client without a session key sends a 100k-message transcript (half of it assistant
messages, none of them ours): the gateway parses it, hashes its prefixes and looks
them up in the store. Meanwhile another caller sends small chat requests, one after
another, each on a conversation of its own. Reported per gateway: how long the big
request took, and the small requests' latency while it ran (p50 and max), next to
their latency on an idle gateway.

With `--before SRC` (another checkout's `src`), that gateway runs side by side and
the runs alternate. Every gateway is a real `agentao serve` on 127.0.0.1 in front
of two processes of our scripted agent. Not a test: numbers only, a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gateway import REPLY, Served, start_gateway


class Setup:
    """The bits of `gateway.Setup` that `start_gateway` reads."""

    def __init__(self, root: Path) -> None:
        script = root / "script.json"
        script.write_text(json.dumps({"responses": [REPLY] * 5}))
        self.root = root
        self.work = root / "work"
        self.work.mkdir()
        self.env = {"LLM_PROVIDER": "SCRIPTED", "AGENTAO_SCRIPT": str(script)}
        from agentao.store.paths import DATABASE_NAME
        from agentao.store.sessions import open_session_store

        for home in ("home-before", "home-after"):
            (root / home).mkdir()
            open_session_store(root / home / DATABASE_NAME).db.close()


async def post(port: int, body: bytes, key: str | None = None) -> float:
    """Seconds for one non-streaming chat completion (raw HTTP/1.1, one connection)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        + (f"X-Session-Id: {key}\r\n" if key else "")
        + "Connection: close\r\n\r\n"
    ).encode()
    start = time.perf_counter()
    writer.write(head + body)
    status = await reader.readline()
    await reader.read()  # until the server closes
    took = time.perf_counter() - start
    writer.close()
    if b" 200 " not in status:
        raise RuntimeError(status.decode())
    return took


def small_body() -> bytes:
    return json.dumps(
        {"model": "agentao", "messages": [{"role": "user", "content": "hi"}]}
    ).encode()


def big_body(n: int) -> bytes:
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"} for i in range(n)
    ]
    messages.append({"role": "user", "content": "and now?"})
    return json.dumps({"model": "agentao", "messages": messages}).encode()


async def one_run(gw: Served, big: bytes, run: int) -> tuple[float, list[float], list[float]]:
    """(big request's seconds, small latencies meanwhile, small latencies when idle)."""
    idle = [await post(gw.port, small_body(), f"idle-{run}-{i}") for i in range(10)]
    big_task = asyncio.ensure_future(post(gw.port, big))
    meanwhile: list[float] = []
    i = 0
    while not big_task.done():
        meanwhile.append(await post(gw.port, small_body(), f"busy-{run}-{i}"))
        i += 1
    return await big_task, meanwhile, idle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="another checkout's src directory, run side by side")
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    big = big_body(args.messages)
    results: dict[str, list[tuple[float, list[float], list[float]]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        setup = Setup(Path(tmp))
        gateways = []
        try:
            if args.before:
                gateways.append(start_gateway(setup, 2, "before", args.before))  # type: ignore[arg-type]
            gateways.append(start_gateway(setup, 2, "after"))  # type: ignore[arg-type]
            for run in range(args.runs):
                for gw in gateways if run % 2 else gateways[::-1]:
                    results.setdefault(gw.name, []).append(asyncio.run(one_run(gw, big, run)))
        finally:
            for gw in gateways:
                gw.stop()
    report(args, len(big), results)


def report(args, size: int, results) -> None:
    print(f"\n## A {args.messages:,}-message transcript ({size / 1e6:.1f} MB) and another "
          f"caller's small requests meanwhile (median of {args.runs} runs)\n")  # fmt: skip
    print("| gateway | big request s | small requests meanwhile | p50 ms | max ms | idle p50 ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, runs in results.items():
        bigs = [r[0] for r in runs]
        meanwhile = [x for r in runs for x in r[1]]
        idle = [x for r in runs for x in r[2]]
        print(
            f"| {name} | {statistics.median(bigs):.2f} | {len(meanwhile) / len(runs):.0f} a run | "
            f"{statistics.median(meanwhile) * 1000:.0f} | {max(meanwhile) * 1000:.0f} | "
            f"{statistics.median(idle) * 1000:.0f} |"
        )


if __name__ == "__main__":
    main()
