"""How fast control gets through: `agentao --acp` cancels, answers and exits. Numbers only.

    python bench/control.py [--runs 3]

The e2e tests assert only the *order* of these events (the cancelled answer arrives
while the work it stops would still run); the wall times, which depend on the machine,
are measured here. Each run spawns a fresh agent (scripted provider, state in a temp
directory) through the raw JSON-lines client of tests/e2e/agent_process.py. Target for
every cancel: ~100 ms (design §3).

* cancel during a stream (2,000 chunks, 20 ms apart) -> `stopReason: "cancelled"`
* cancel while a permission request waits for a client that never answers
* cancel while a shell command (`sleep 60` and a child) runs
* with 100 sessions blocked on permission: `session/list`, then one session's cancel
* EOF mid-turn -> the process has exited
* `agentao demo` end to end; the client library closing an agent that exits on EOF
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.e2e.agent_process import NO_REPLY, AgentProcess, scripted_env  # noqa: E402

SLOW = {"text": {"repeat": "x", "count": 2000}, "delay": 0.02}
Measure = Callable[[Path], Awaitable[dict[str, float]]]


def shell(command: str) -> list[dict]:
    call = {"name": "run_shell_command", "arguments": {"command": command}}
    return [{"tool_calls": [call]}, {"text": "never"}]


async def silent(message: dict) -> object:
    return NO_REPLY


async def started(tmp: Path, script: list[dict]) -> tuple[AgentProcess, str]:
    agent = await AgentProcess.start(scripted_env(tmp, script))
    await agent.initialize()
    ws = tmp / "ws"
    ws.mkdir(exist_ok=True)
    agent.handlers["session/request_permission"] = silent
    return agent, await agent.new_session(ws)


async def timed_cancel(agent: AgentProcess, sid: str, task: asyncio.Task) -> float:
    start = time.perf_counter()
    await agent.notify("session/cancel", {"sessionId": sid})
    reply = await task
    took = time.perf_counter() - start
    assert reply["result"]["stopReason"] == "cancelled", reply  # a wrong run is not a number
    return took


async def cancel_stream(tmp: Path) -> dict[str, float]:
    agent, sid = await started(tmp, [SLOW])
    task = asyncio.create_task(agent.prompt(sid, "go"))
    await agent.wait_for(lambda m: m.get("method") == "session/update")
    took = await timed_cancel(agent, sid, task)
    await agent.close()
    return {"cancel during a stream (ms)": took * 1000}


async def cancel_permission(tmp: Path) -> dict[str, float]:
    agent, sid = await started(tmp, shell("touch never.txt"))
    task = asyncio.create_task(agent.prompt(sid, "go"))
    await agent.wait_request("session/request_permission")
    took = await timed_cancel(agent, sid, task)
    await agent.close()
    return {"cancel, permission pending (ms)": took * 1000}


async def cancel_shell(tmp: Path) -> dict[str, float]:
    agent, sid = await started(tmp, shell("sleep 60 & wait"))
    await agent.call("session/set_mode", {"sessionId": sid, "modeId": "full-access"})
    task = asyncio.create_task(agent.prompt(sid, "go"))
    await agent.wait_for(
        lambda m: m.get("params", {}).get("update", {}).get("status") == "in_progress"
    )
    took = await timed_cancel(agent, sid, task)
    await agent.close()
    return {"cancel, shell running (ms)": took * 1000}


async def hundred_blocked(tmp: Path) -> dict[str, float]:
    calls = [{"name": "run_shell_command", "arguments": {"command": "touch blocked.txt"}}]
    agent, first = await started(tmp, [{"tool_calls": calls}] * 100)
    sids = [first] + [await agent.new_session(tmp / "ws") for _ in range(99)]
    tasks = [asyncio.create_task(agent.prompt(s, "go", timeout=60)) for s in sids]
    await agent.wait_request("session/request_permission", timeout=60, nth=100)
    start = time.perf_counter()
    await agent.call("session/list", {})
    listed = time.perf_counter() - start
    cancelled = await timed_cancel(agent, sids[50], tasks[50])
    for sid in sids:
        await agent.notify("session/cancel", {"sessionId": sid})
    await asyncio.gather(*tasks)
    await agent.close()
    return {
        "100 blocked: session/list (ms)": listed * 1000,
        "100 blocked: one cancel (ms)": cancelled * 1000,
    }


async def eof_exit(tmp: Path) -> dict[str, float]:
    agent, sid = await started(tmp, [SLOW])
    task = asyncio.create_task(agent.prompt(sid, "go"))
    await agent.wait_for(lambda m: m.get("method") == "session/update")
    start = time.perf_counter()
    code = await agent.close()
    took = time.perf_counter() - start
    task.cancel()
    assert code == 0, code
    return {"EOF mid-turn -> exit (ms)": took * 1000}


async def demo(tmp: Path) -> dict[str, float]:
    start = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agentao", "demo", stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp)},
    )  # fmt: skip
    assert await proc.wait() == 0
    return {"agentao demo (s)": time.perf_counter() - start}


async def client_close(tmp: Path) -> dict[str, float]:
    from agentao.client import AgentCommand, Client, Timeouts

    fake = ROOT / "tests" / "fakes" / "fake_agents" / "scenario.py"
    client = Client(AgentCommand((sys.executable, str(fake))), timeouts=Timeouts(eof_grace=2.0))
    await client.start()
    start = time.perf_counter()
    assert await client.close() == 0
    return {"client close, agent exits on EOF (ms)": (time.perf_counter() - start) * 1000}


MEASURES: list[Measure] = [
    cancel_stream, cancel_permission, cancel_shell, hundred_blocked, eof_exit, demo, client_close,
]  # fmt: skip


async def run(runs: int) -> dict[str, list[float]]:
    rows: dict[str, list[float]] = {}
    for measure in MEASURES:
        for _ in range(runs):
            with tempfile.TemporaryDirectory() as tmp:
                for label, value in (await measure(Path(tmp))).items():
                    rows.setdefault(label, []).append(value)
        print(f"  measured {measure.__name__}", file=sys.stderr)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rows = asyncio.run(run(args.runs))
    print(f"{'':40}{'median':>10}{'min':>10}{'max':>10}")
    for label, values in rows.items():
        cells = (statistics.median(values), min(values), max(values))
        print(f"{label:40}" + "".join(f"{v:>10.1f}" for v in cells))


if __name__ == "__main__":
    main()
