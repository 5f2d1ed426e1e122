"""What confining every agent process costs (gateway/confine.py): the same agent started
bare and inside the gateway's bubblewrap sandbox, side by side.

    python bench/confine.py [--rounds 30] [--turns 50]

1. Spawn -> `initialize` answered, then EOF: a fresh process each round, bare and confined
   alternating (machine drift hits both alike).
2. One tool turn: a session whose turn runs a shell command (`echo hi`, approved) before
   it answers; time to the first answer token and to the turn's end. Confined, our agent's
   command sandbox nests inside the outer one (without /proc when run as root: see
   docs/security.md), so both sandboxes are in the measure.

Not a test: numbers only, printed as Markdown tables with the confined/bare ratio.
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

from gateway import direct_turn, percentile

from agentao.client import AgentCommand, Client, ClientPolicy
from agentao.gateway.config import our_agent_sandbox
from agentao.gateway.confine import confine, probe

TOOL_TURN = [
    {"tool_calls": [{"name": "run_shell_command", "arguments": {"command": "echo hi"}}]},
    {"text": "it said hi"},
]


def commands(tmp: Path, script: list[dict[str, object]]) -> dict[str, AgentCommand]:
    work, home, state = tmp / "work", tmp / "home", tmp / "state"
    work.mkdir(exist_ok=True)
    path = tmp / "script.json"
    path.write_text(json.dumps({"responses": script * 1000}))
    env = {"LLM_PROVIDER": "SCRIPTED", "AGENTAO_SCRIPT": str(path), "AGENTAO_HOME": str(home)}
    argv = (sys.executable, "-m", "agentao", "--acp")
    confined = confine(argv, cwd=str(work), home=state, env=env, sandbox=our_agent_sandbox())
    return {
        "bare": AgentCommand(argv, env=env, cwd=str(work)),
        "confined": AgentCommand(confined, env={}, cwd=str(work), inherit_env=False),
    }


async def spawn_once(command: AgentCommand) -> float:
    start = time.perf_counter()
    async with Client(command):  # start() answers once `initialize` is
        took = time.perf_counter() - start
    return took


async def bench_spawn(cmds: dict[str, AgentCommand], rounds: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(rounds):
        for name, command in cmds.items():
            results[name].append(await spawn_once(command))
    return results


async def bench_turns(cmds: dict[str, AgentCommand], turns: int) -> dict[str, list[tuple]]:
    results: dict[str, list[tuple]] = {name: [] for name in cmds}
    policy = ClientPolicy(approve="all", terminal=False)  # as the gateway: the agent runs it
    clients = {name: Client(command, policy=policy) for name, command in cmds.items()}
    try:
        sessions = {}
        for name, client in clients.items():
            await client.start()
            sessions[name] = await client.new_session(str(Path(command_cwd(cmds[name]))))
        for _ in range(turns):
            for name, session in sessions.items():
                first, total, _chunks = await direct_turn(session, "run it")
                results[name].append((first, total))
    finally:
        for client in clients.values():
            await client.close()
    return results


def command_cwd(command: AgentCommand) -> str:
    assert command.cwd is not None
    return command.cwd


def row(name: str, values: list[float], base: list[float]) -> str:
    p50, p99 = statistics.median(values) * 1000, percentile(values, 99) * 1000
    ratio = statistics.median(values) / statistics.median(base)
    return f"| {name} | {p50:.1f} | {p99:.1f} | {ratio:.2f}x |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--turns", type=int, default=50)
    args = parser.parse_args()
    status = probe()
    if not status.available:
        sys.exit(f"no outer sandbox here: {status.reason}")
    with tempfile.TemporaryDirectory() as tmp:
        cmds = commands(Path(tmp), TOOL_TURN)
        spawn = asyncio.run(bench_spawn(cmds, args.rounds))
        turns = asyncio.run(bench_turns(cmds, args.turns))
    print(f"\nSpawn -> initialize answered ({args.rounds} rounds each, alternating)\n")
    print("| agent process | p50 ms | p99 ms | vs bare |\n|---|---:|---:|---:|")
    for name, values in spawn.items():
        print(row(name, values, spawn["bare"]))
    print(f"\nOne tool turn (`echo hi` approved, then the answer; {args.turns} turns each)\n")
    print("| agent process | TTFT p50 ms | TTFT p99 ms | vs bare | turn p50 ms | vs bare |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, pairs in turns.items():
        first = [p[0] for p in pairs]
        total = [p[1] for p in pairs]
        base_first = [p[0] for p in turns["bare"]]
        base_total = [p[1] for p in turns["bare"]]
        total_ratio = statistics.median(total) / statistics.median(base_total)
        print(
            f"{row(name, first, base_first)} {statistics.median(total) * 1000:.1f} | "
            f"{total_ratio:.2f}x |"
        )


if __name__ == "__main__":
    main()
