"""A long session against a model with a hard window: what compaction costs and keeps.

    python bench/long_session.py [--turns 200] [--windows 12000,32000] [--file-kb 12]

Not a test: numbers only. `agentao --acp` is driven over real pipes by a raw-JSON client
against the fake OpenAI-compatible server (tests/fakes/fake_llm.py, on 127.0.0.1) given
a hard window: it refuses any request above it (`context_length_exceeded`) and reports
its own token count as usage. Each turn asks the agent to read a new file of --file-kb
KB; the fake model calls `read_file`, then answers in one line; summary requests get a
short summary. Each window is run twice: the agent told the window
(`AGENTAO_CONTEXT_TOKENS`), and not told (it learns it from the first refusal).

Measured per window:

* turns that ended `end_turn` (without compaction a session bricks at the first turn
  whose history passes the window: every later prompt fails the same way);
* the largest request sent, in the fake's tokens, against the window (not told: after
  the first refusal, the one request sent before the window was known); refusals;
* compactions, and the time compaction adds to a turn: from `compaction_update`
  in_progress to completed as the client sees it, summed per turn (p50, p99 over the
  turns that compacted; the fake answers at once, so this is the agent's own cost plus
  one loopback round trip), next to the whole turn's time (p50, p99);
* the agent process's resident memory after the session (VmRSS) and its peak (VmHWM).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.fakes.fake_llm import FakeLLM, FakeReply, FakeToolCall  # noqa: E402

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "lambda", "sigma"]


def file_text(n: int, size: int) -> str:
    rng = random.Random(n)
    words, total = [], 0
    while total < size:
        word = rng.choice(WORDS) + str(rng.randint(0, 999))
        words.append(word)
        total += len(word) + 1
    return "\n".join(" ".join(words[i : i + 12]) for i in range(0, len(words), 12))[:size]


def responder(body: dict[str, Any]) -> FakeReply:
    first = body["messages"][0]
    if first["role"] == "system" and "You are compacting" in str(first["content"]):
        return FakeReply(["## Task\nRead the files one by one; each was read."])
    last = body["messages"][-1]
    if last["role"] == "user":
        name = re.search(r"f\d+\.txt", str(last["content"])).group(0)
        return FakeReply(tool_calls=[FakeToolCall("read_file", {"file_path": name})])
    return FakeReply(["Read it."])


class Agent:
    """`agentao --acp` over pipes, with arrival times for every message."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.updates: list[tuple[float, dict[str, Any]]] = []
        self.reader = asyncio.create_task(self.read())

    async def read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            message = json.loads(line)
            if message.get("method") == "session/update":
                self.updates.append((time.perf_counter(), message["params"]["update"]))
            elif "id" in message and message["id"] in self.waiting:
                self.waiting.pop(message["id"]).set_result(message)

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        future = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id] = future
        line = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(line).encode() + b"\n")
        await self.proc.stdin.drain()
        return await asyncio.wait_for(future, 120)

    def memory_kb(self) -> dict[str, int]:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        return {k: int(v.split()[0]) for k, v in re.findall(r"(Vm\w+):\s+(.+)", status)}

    async def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        await self.proc.wait()
        await self.reader


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def run(window: int, turns: int, file_kb: int, told: bool) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="agentao-long-"))
    ws = tmp / "ws"
    ws.mkdir()
    for n in range(1, turns + 1):
        (ws / f"f{n:03}.txt").write_text(file_text(n, file_kb * 1024))
    with FakeLLM() as fake:
        fake.window, fake.respond = window, responder
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(fake.env(), AGENTAO_HOME=str(tmp / "home"), AGENTAO_CONFIG_DIR=str(tmp / "cfg"))
        if told:
            env["AGENTAO_CONTEXT_TOKENS"] = str(window)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "agentao", "--acp", env=env, limit=64 * 1024 * 1024,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        agent = Agent(proc)
        caps = {"session": {"compaction": {}}}
        await agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": caps})
        sid = (await agent.call("session/new", {"cwd": str(ws), "mcpServers": []}))["result"][
            "sessionId"
        ]
        ended, turn_times, compaction_times = 0, [], []
        for n in range(1, turns + 1):
            start, first_update = time.perf_counter(), len(agent.updates)
            prompt = [{"type": "text", "text": f"read f{n:03}.txt"}]
            reply = await agent.call("session/prompt", {"sessionId": sid, "prompt": prompt})
            turn_times.append(time.perf_counter() - start)
            ended += reply.get("result", {}).get("stopReason") == "end_turn"
            spent, opened = 0.0, {}
            for at, update in agent.updates[first_update:]:
                if update["sessionUpdate"] != "compaction_update":
                    continue
                if update["status"] == "in_progress":
                    opened[update["compactionId"]] = at
                elif update["compactionId"] in opened:
                    spent += at - opened.pop(update["compactionId"])
            if spent:
                compaction_times.append(spent)
        memory = agent.memory_kb()
        await agent.close()
        sizes = [fake.tokens(r.body) for r in fake.requests]
        learned = next((i for i, size in enumerate(sizes) if size > window), -1)
    return {
        "window": window,
        "told": told,
        "turns": turns,
        "ended": ended,
        "largest": max(sizes[learned + 1 :]),
        "refused": fake.refused,
        "compactions": sum(1 for _ in compaction_times),
        "compaction_p50_ms": 1000 * pct(compaction_times, 0.5),
        "compaction_p99_ms": 1000 * pct(compaction_times, 0.99),
        "turn_p50_ms": 1000 * statistics.median(turn_times),
        "turn_p99_ms": 1000 * pct(turn_times, 0.99),
        "rss_mb": memory.get("VmRSS", 0) / 1024,
        "peak_mb": memory.get("VmHWM", 0) / 1024,
    }


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| window | told? | turns ended | largest request (tokens) | refused | turns compacted "
        "| compaction p50 / p99 (ms) | turn p50 / p99 (ms) | RSS after / peak (MB) |\n"
        "|---|---|---|---|---|---|---|---|---|"
    )
    lines = [
        f"| {r['window']:,} | {'yes' if r['told'] else 'learned'} "
        f"| {r['ended']} / {r['turns']} | {r['largest']:,} "
        f"({100 * r['largest'] / r['window']:.0f}% of the window) | {r['refused']} "
        f"| {r['compactions']} | {r['compaction_p50_ms']:.1f} / {r['compaction_p99_ms']:.1f} "
        f"| {r['turn_p50_ms']:.1f} / {r['turn_p99_ms']:.1f} "
        f"| {r['rss_mb']:.1f} / {r['peak_mb']:.1f} |"
        for r in rows
    ]
    return "\n".join([head, *lines])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--windows", default="12000,32000")
    parser.add_argument("--file-kb", type=int, default=12)
    args = parser.parse_args()
    rows = [
        asyncio.run(run(int(w), args.turns, args.file_kb, told))
        for w in args.windows.split(",")
        for told in (True, False)
    ]
    print(table(rows))


if __name__ == "__main__":
    main()
