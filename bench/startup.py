"""Cold start: spawn -> `initialize` answered, side by side in one run. Numbers only.

    python bench/startup.py [--runs 21]

Each command is spawned fresh for every measurement, in turn (so machine noise hits
all of them alike), sent one `initialize` line, and timed until its reply line.

* bare Python      `python -c`: read the line, `json.loads`, write a reply. The floor:
                   an interpreter that does nothing else.
* agentao --acp    ours, as editors start it (the console script) and as `python -m`.
* agentao 0.5.17   the unrelated PyPI project of the same name, in its own venv
                   (bench/.venvs/, built by bench/agent.py on first use).

Reported: the median, and our ratios to the other two. To see what ours imports
before it answers: `python -X importtime -m agentao --acp < init.jsonl`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from agent import OLD_VERSION, ensure_old_agentao  # noqa: E402

INIT = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}\n'
BARE = (
    "import sys, json\n"
    "msg = json.loads(sys.stdin.readline())\n"
    "reply = {'jsonrpc': '2.0', 'id': msg['id'], 'result': {'protocolVersion': 1}}\n"
    "sys.stdout.write(json.dumps(reply) + '\\n')\n"
    "sys.stdout.flush()\n"
    "sys.stdin.read()\n"
)


def commands() -> dict[str, list[str]]:
    script = shutil.which("agentao", path=str(Path(sys.executable).parent))
    found = {
        "bare Python": [sys.executable, "-c", BARE],
        "agentao --acp": [script or sys.executable, "--acp"] if script else [],
        "python -m agentao --acp": [sys.executable, "-m", "agentao", "--acp"],
        f"agentao {OLD_VERSION}": [str(ensure_old_agentao()), "--acp", "--stdio"],
    }
    return {name: argv for name, argv in found.items() if argv}


def time_one(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    proc.stdin.write(INIT)  # type: ignore[union-attr]
    proc.stdin.flush()  # type: ignore[union-attr]
    line = proc.stdout.readline()  # type: ignore[union-attr]
    took = time.perf_counter() - start
    proc.stdin.close()  # type: ignore[union-attr]
    proc.wait()
    if b'"result"' not in line:
        raise RuntimeError(f"{argv[0]} did not answer initialize: {line[:200]!r}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    cmds = commands()
    with tempfile.TemporaryDirectory() as home:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(AGENTAO_HOME=home, HOME=home)
        # Our PYTHONPATH (e.g. another checkout under test) must not reach the other venv.
        foreign = {k: v for k, v in env.items() if k != "PYTHONPATH"}
        envs = {name: foreign if name.endswith(OLD_VERSION) else env for name in cmds}
        for name, argv in cmds.items():
            time_one(argv, envs[name])  # warm the page cache and the .pyc files
        times: dict[str, list[float]] = {name: [] for name in cmds}
        for _ in range(args.runs):
            for name, argv in cmds.items():
                times[name].append(time_one(argv, envs[name]))
    median = {name: statistics.median(v) for name, v in times.items()}
    bare, old = median["bare Python"], median[f"agentao {OLD_VERSION}"]
    print(f"{'spawn -> initialize':28}{'median ms':>11}{'min ms':>9}{'/ bare':>9}{'/ 0.5.17':>10}")
    for name, values in times.items():
        m = median[name]
        print(
            f"{name:28}{m * 1000:>11.1f}{min(values) * 1000:>9.1f}{m / bare:>8.2f}x{m / old:>9.2f}x"
        )


if __name__ == "__main__":
    main()
