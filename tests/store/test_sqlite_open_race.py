"""Several processes opening one fresh database at once all migrate it without error.

A gateway starts its pool of agent processes together; on a first run they all
find an empty AGENTAO_HOME and race to create the tables.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

OPEN = (
    "import sys\n"
    "from agentao.store.sessions import open_session_store\n"
    "from agentao.store.gateway import open_gateway_store\n"
    "open_session_store(sys.argv[1]); open_gateway_store(sys.argv[1])\n"
    "print('ok')\n"
)


def test_processes_opening_a_fresh_file_together(tmp_path: Path) -> None:
    for attempt in range(3):
        db = tmp_path / f"state-{attempt}.sqlite"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN, str(db)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for _ in range(6)
        ]
        results = [p.communicate(timeout=60) for p in procs]
        for proc, (out, err) in zip(procs, results, strict=True):
            assert proc.returncode == 0, err.decode()[-1500:]
            assert out.strip() == b"ok"
