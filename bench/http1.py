"""HTTP/1.1 client bench: the client's CPU per POST of agentao/http1.py, as the remote ACP
client sends them (a session/prompt line, its headers, a 202 with no body), on one
kept-alive connection to a raw server on 127.0.0.1 in a process of its own.

    python bench/http1.py [--posts 3000] [--runs 5] [--before SRC]

With `--before SRC` (another checkout's `src`, e.g. `git archive <commit> src | tar -x -C
/tmp/before`) each run alternates between that code and this one, so machine drift hits
both alike. Each run is a fresh client process; prints the median and the spread of the
runs' CPU microseconds per POST (user + system, `time.process_time`) and wall per POST.

Not a test: numbers only.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
from pathlib import Path

SERVER = r"""
import asyncio, sys
async def serve(reader, writer):
    buf = b""
    while data := await reader.read(65536):
        buf += data
        while (end := buf.find(b"\r\n\r\n")) >= 0:
            length = 0
            for line in buf[:end].lower().split(b"\r\n"):
                if line.startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if len(buf) < end + 4 + length:
                break
            buf = buf[end + 4 + length :]
            writer.write(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nserver: uvicorn\r\n\r\n")
async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", int(sys.argv[1]))
    print("ready", flush=True)
    await server.serve_forever()
asyncio.run(main())
"""

CLIENT = r"""
import asyncio, sys, time
from agentao.http1 import Http1Client
SESSION = "0a5457e1-f125-45e3-8883-6bc5f448333a"
BODY = (b'{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"%s",'
        b'"prompt":[{"type":"text","text":"hi"}]}}' % SESSION.encode())
HEADERS = {"Content-Type": "application/json", "Authorization": "Bearer sk-bench",
           "Acp-Connection-Id": "c" + SESSION.replace("-", ""), "Acp-Session-Id": SESSION}
async def main(port, n):
    client = Http1Client(30, 30, {})
    url = f"http://127.0.0.1:{port}/acp"
    for i in range(n // 10 + n):
        if i == n // 10:  # warmed up
            cpu, wall = time.process_time(), time.perf_counter()
        async with client.post(url, BODY, HEADERS) as response:
            await response.aread()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    await client.aclose()
    print(cpu / n * 1e6, wall / n * 1e6)
asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_client(src: str, port: int, posts: int) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": src}
    out = subprocess.run(
        [sys.executable, "-c", CLIENT, str(port), str(posts)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return float(out[0]), float(out[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--posts", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before", help="another checkout's src, run alternately")
    args = parser.parse_args()
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(port)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        here = str(Path(__file__).resolve().parents[1] / "src")
        codes = {"this": here} if args.before is None else {"before": args.before, "this": here}
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in codes}
        for _ in range(args.runs):
            for name, src in codes.items():
                results[name].append(run_client(src, port, args.posts))
    finally:
        server.kill()
        server.wait()
    print(
        f"\n### agentao/http1.py: one POST answered 202, {args.posts} per run, {args.runs} runs\n"
    )
    print("| code | CPU us per POST: median (min-max) | wall us per POST: median |")
    print("|---|---:|---:|")
    for name, runs in results.items():
        cpu = [c for c, _ in runs]
        wall = statistics.median(w for _, w in runs)
        print(
            f"| {name} | {statistics.median(cpu):.1f} ({min(cpu):.1f}-{max(cpu):.1f}) "
            f"| {wall:.1f} |"
        )


if __name__ == "__main__":
    main()
