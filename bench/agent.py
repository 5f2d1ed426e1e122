"""`agentao --acp` vs PyPI agentao 0.5.17 vs the official SDK's echo agent, in one run.

    python bench/agent.py [--runs 5] [--chunks 20000] [--relay 5000]

Not a test: numbers only. Each agent is spawned fresh per measurement and driven by
the same raw-JSON client below, which checks that every chunk arrives, in order,
before the prompt's result. Measured:

* spawn -> `initialize` reply, and spawn -> `session/new` reply (median of --runs);
  streams: the median of --repeats turns;
* RSS of the agent process after one session (session/new + one short turn);
* updates/s of a 20,000-chunk turn (after a short warm-up turn in the same session):
  ours with the scripted provider, the SDK echo
  agent with "chunks N"; agentao 0.5.17 has no scripted provider, so it streams the
  same chunks from the fake LLM (marked with *);
* the relay through the real HTTP path: the fake OpenAI-compatible server
  (tests/fakes/fake_llm.py, on 127.0.0.1) streams --relay pieces; text checked
  complete and in order;
* cancel -> `stopReason: "cancelled"` during a stream that never ends.

agentao 0.5.17 is installed with its `[cli]` extra into bench/.venvs/ on first run
(`python -m venv` + pip); it reads LLM_PROVIDER / OPENAI_API_KEY / OPENAI_BASE_URL /
OPENAI_MODEL (agentao/embedding/llm_config.py), and keeps state under $HOME/.agentao,
so it runs with HOME in a temp directory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.fakes.fake_llm import FakeLLM  # noqa: E402

OLD_VERSION = "0.5.17"
CANCEL_WAIT = 10.0  # seconds a cancelled prompt gets to answer
OLD_VENV = ROOT / "bench" / ".venvs" / f"agentao-{OLD_VERSION}"


def ensure_old_agentao() -> Path:
    """The `agentao` 0.5.17 executable, installed into its own venv on first use."""
    exe = OLD_VENV / "bin" / "agentao"
    if exe.exists():
        return exe
    subprocess.run([sys.executable, "-m", "venv", str(OLD_VENV)], check=True)
    pip = [str(OLD_VENV / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, f"agentao[cli]=={OLD_VERSION}"], check=True)
    return exe


@dataclass
class Agent:
    name: str
    command: list[str]
    env: dict[str, str]
    scripted: bool  # plays a 20,000-chunk turn without an LLM
    llm: bool  # can relay an LLM stream
    chunk_prompt: str = "chunks"


@dataclass
class Peer:
    """A raw JSON-lines client over one spawned agent."""

    proc: asyncio.subprocess.Process
    next_id: int = 1
    updates: list[str] = field(default_factory=list)
    first_update: asyncio.Event = field(default_factory=asyncio.Event)

    @classmethod
    async def spawn(cls, agent: Agent, cwd: Path) -> Peer:
        proc = await asyncio.create_subprocess_exec(
            *agent.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=agent.env,
            cwd=str(cwd),
            limit=64 * 1024 * 1024,
        )
        return cls(proc)

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id = self.next_id
        self.next_id += 1
        line = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(line).encode() + b"\n")  # type: ignore[union-attr]
        while True:
            raw = await self.proc.stdout.readline()  # type: ignore[union-attr]
            if not raw:
                raise EOFError(f"agent exited during {method}")
            msg = json.loads(raw)
            if msg.get("id") == request_id and "method" not in msg:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]
            self._on_other(msg)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        line = {"jsonrpc": "2.0", "method": method, "params": params}
        self.proc.stdin.write(json.dumps(line).encode() + b"\n")  # type: ignore[union-attr]

    def _on_other(self, msg: dict[str, Any]) -> None:
        if msg.get("method") == "session/update":
            update = msg["params"]["update"]
            if update.get("sessionUpdate") == "agent_message_chunk":
                self.updates.append(update["content"].get("text", ""))
                self.first_update.set()
        elif "id" in msg and "method" in msg:  # a request we do not serve: refuse it
            reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}}
            self.proc.stdin.write(json.dumps(reply).encode() + b"\n")  # type: ignore[union-attr]

    async def handshake(self, cwd: Path) -> str:
        await self.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        result = await self.call("session/new", {"cwd": str(cwd), "mcpServers": []})
        return result["sessionId"]

    async def prompt(self, session_id: str, text: str) -> dict[str, Any]:
        block = [{"type": "text", "text": text}]
        return await self.call("session/prompt", {"sessionId": session_id, "prompt": block})

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    async def close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


# ---- measurements ----------------------------------------------------------------------


async def time_to(agent: Agent, cwd: Path, step: str) -> float:
    start = time.perf_counter()
    peer = await Peer.spawn(agent, cwd)
    try:
        await peer.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        if step == "session/new":
            await peer.call("session/new", {"cwd": str(cwd), "mcpServers": []})
        return time.perf_counter() - start
    finally:
        await peer.close()


async def rss_after_one_session(agent: Agent, cwd: Path, fake: FakeLLM) -> float:
    peer = await Peer.spawn(agent, cwd)
    try:
        session_id = await peer.handshake(cwd)
        if agent.llm:
            fake.reply("hello", " there")
        await peer.prompt(session_id, "say hello")
        await asyncio.sleep(0.2)
        return peer.rss_mb()
    finally:
        await peer.close()


async def stream_rate(
    agent: Agent, cwd: Path, chunks: int, fake: FakeLLM | None, repeats: int
) -> float:
    """Updates/s of a turn of `chunks` chunks (from the script or the fake LLM): the median
    of `repeats` turns in one session, after a short warm-up turn (first-use imports and
    connections are not the relay)."""
    peer = await Peer.spawn(agent, cwd)
    try:
        session_id = await peer.handshake(cwd)
        if fake is not None:
            fake.reply("warm", " up")
        await peer.prompt(session_id, "warm up")
        rates = []
        for _ in range(repeats):
            peer.updates.clear()
            pieces = [f"{i} " for i in range(chunks)]
            if fake is not None:
                fake.reply(*pieces, usage=None)
            start = time.perf_counter()
            result = await peer.prompt(session_id, f"{agent.chunk_prompt} {chunks}")
            took = time.perf_counter() - start
            assert result["stopReason"] == "end_turn", result
            if fake is not None:
                assert "".join(peer.updates) == "".join(pieces), "relay lost or reordered text"
            else:
                assert len(peer.updates) == chunks, (len(peer.updates), chunks)
            rates.append(len(peer.updates) / took)
        return statistics.median(rates)
    finally:
        await peer.close()


async def cancel_latency(agent: Agent, cwd: Path, fake: FakeLLM) -> float:
    peer = await Peer.spawn(agent, cwd)
    try:
        session_id = await peer.handshake(cwd)
        fake.hang("partial ", delay=0.0)
        prompt = asyncio.create_task(peer.prompt(session_id, "go"))
        await peer.first_update.wait()
        start = time.perf_counter()
        peer.notify("session/cancel", {"sessionId": session_id})
        try:
            result = await asyncio.wait_for(prompt, CANCEL_WAIT)
        except TimeoutError:
            return float("inf")  # never answered: shown as "> CANCEL_WAIT s"
        took = time.perf_counter() - start
        assert result["stopReason"] == "cancelled", result
        return took
    finally:
        await peer.close()


# ---- the run ----------------------------------------------------------------------------


def agents(home: Path, fake: FakeLLM, script: Path) -> list[Agent]:
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    llm_env = {**base, **fake.env(), "AGENTAO_HOME": str(home / "ours")}
    ours_scripted = {**llm_env, "LLM_PROVIDER": "SCRIPTED", "AGENTAO_SCRIPT": str(script)}
    old_home = home / "old"
    old_home.mkdir(exist_ok=True)
    return [
        Agent("agentao --acp", [sys.executable, "-m", "agentao", "--acp"], llm_env, True, True),
        Agent(
            f"agentao {OLD_VERSION}",
            [str(ensure_old_agentao()), "--acp", "--stdio"],
            {**llm_env, "HOME": str(old_home)},
            False,
            True,
        ),
        Agent(
            "SDK echo",
            [sys.executable, str(ROOT / "tests" / "fakes" / "sdk_agent.py")],
            base,
            scripted=True,
            llm=False,
        ),
        Agent(
            "agentao --acp (scripted)",
            [sys.executable, "-m", "agentao", "--acp"],
            ours_scripted,
            scripted=True,
            llm=False,
        ),
    ]


async def run(args: argparse.Namespace) -> dict[str, dict[str, float | None]]:
    rows: dict[str, dict[str, float | None]] = {}
    with tempfile.TemporaryDirectory() as tmp, FakeLLM() as fake:
        home, cwd = Path(tmp) / "home", Path(tmp) / "ws"
        home.mkdir()
        cwd.mkdir()
        script = Path(tmp) / "script.json"
        turns = [{"text": "warm up"}] + [{"text": {"repeat": "x", "count": args.chunks}}] * 9
        script.write_text(json.dumps(turns))
        ours, old, echo, scripted = agents(home, fake, script)
        for agent in (ours, old, echo):
            row: dict[str, float | None] = {}
            row["init"] = statistics.median(
                [await time_to(agent, cwd, "initialize") for _ in range(args.runs)]
            )
            row["new"] = statistics.median(
                [await time_to(agent, cwd, "session/new") for _ in range(args.runs)]
            )
            row["rss"] = await rss_after_one_session(agent, cwd, fake)
            streamer = scripted if agent is ours else agent
            row["rate"] = await stream_rate(
                streamer, cwd, args.chunks, None if streamer.scripted else fake, args.repeats
            )
            row["relay"] = (
                await stream_rate(agent, cwd, args.relay, fake, args.repeats) if agent.llm else None
            )
            row["cancel"] = await cancel_latency(agent, cwd, fake) if agent.llm else None
            rows[agent.name] = row
            print(f"  measured {agent.name}", file=sys.stderr)
    return rows


METRICS = (
    ("init", "spawn -> initialize (s)", "{:.3f}", "lower"),
    ("new", "spawn -> session/new (s)", "{:.3f}", "lower"),
    ("rss", "RSS after one session (MB)", "{:.1f}", "lower"),
    ("rate", "updates/s, 20,000-chunk turn", "{:,.0f}", "higher"),
    ("relay", "updates/s, HTTP relay (fake LLM)", "{:,.0f}", "higher"),
    ("cancel", "cancel -> cancelled (ms)", "{:.1f}", "lower"),
)


def table(rows: dict[str, dict[str, float | None]], args: argparse.Namespace) -> str:
    names = list(rows)
    ours, old, echo = names
    head = f"{'':34}" + "".join(f"{n:>18}" for n in names) + f"{'ours/0.5.17':>13}{'ours/SDK':>10}"
    lines = [head, "-" * len(head)]
    for key, label, fmt, _better in METRICS:
        cells = []
        for name in names:
            value = rows[name][key]
            if value is not None and key == "cancel":
                value *= 1000
            if value == float("inf"):
                text = f"> {CANCEL_WAIT:.0f} s"
            else:
                text = "—" if value is None else fmt.format(value)
            if key == "rate" and name == old and value is not None:
                text += "*"
            cells.append(f"{text:>18}")
        lines.append(f"{label:34}" + "".join(cells) + _ratio(rows, key, ours, old, 13)
                     + _ratio(rows, key, ours, echo, 10))  # fmt: skip
    lines.append(
        f"\n* agentao {OLD_VERSION} has no scripted provider: its {args.chunks:,} chunks come "
        "from the fake LLM over HTTP.\n  relay = --relay pieces from the fake OpenAI-compatible "
        f"server ({args.relay:,}), text checked complete and in order."
    )
    return "\n".join(lines)


def _ratio(rows: dict, key: str, a: str, b: str, width: int) -> str:
    x, y = rows[a][key], rows[b][key]
    if x is None or y is None or y == 0 or float("inf") in (x, y):
        return f"{'—':>{width}}"
    return f"{x / y:>{width - 1}.2f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--chunks", type=int, default=20000)
    parser.add_argument("--relay", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3, help="measured turns per stream")
    args = parser.parse_args()
    rows = asyncio.run(run(args))
    print(table(rows, args))


if __name__ == "__main__":
    main()
