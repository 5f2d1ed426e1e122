"""Run an ACP agent over stdio and record every line both ways, for schema checks of what
its client sent it (tests/schema_check.py `check_recording`).

    python tee_agent.py LOG -- COMMAND [ARGS...]

Each line becomes one JSON line of LOG, `{"dir": "send" | "recv", "msg"}` from the client's
side (the format of tests/peers/v2_client.mjs): `send` what the client wrote to the agent,
`recv` what the agent answered; each process starts with a line `{"dir": "start"}`.
The agent's exit code is this process's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import IO


def main(argv: list[str]) -> int:
    log_path, command = argv[0], argv[argv.index("--") + 1 :]
    agent = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert agent.stdin is not None and agent.stdout is not None
    lock = threading.Lock()
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(json.dumps({"dir": "start"}) + "\n")

        def pump(source: IO[bytes], sink: IO[bytes], direction: str) -> None:
            for line in source:
                with lock:  # one whole JSON line per message, whichever thread writes
                    log.write(json.dumps({"dir": direction, "msg": json.loads(line)}) + "\n")
                    log.flush()
                sink.write(line)
                sink.flush()
            sink.close()

        to_agent = threading.Thread(target=pump, args=(sys.stdin.buffer, agent.stdin, "send"))
        to_agent.start()
        pump(agent.stdout, sys.stdout.buffer, "recv")
        return agent.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
