"""Which gateway process owns a row in flight, and whether that process still lives.

Theory of operation. Every gateway process makes one `Boot` when it starts (a random
id, plus what the OS says about the process) and records it in the store; each
response and task it starts carries that id. After a crash the rows stay
`in_progress` / `running`, and only a look at the owner can tell a dead gateway from
a live one sharing the same SQLite file. `liveness()` answers from here:

* our own boot is alive;
* same host, but the machine has rebooted since (another kernel boot id): dead;
* same host, machine boot and pid namespace: alive exactly when a process with that
  pid exists *and* started at the recorded time (a reused pid is another process);
* anything else (another host, another pid namespace, an OS that tells us nothing):
  unknown, which is never repaired: a live owner's rows must not be touched.

Linux exposes all of this under /proc; elsewhere the checks that cannot be made
answer "unknown".
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from enum import Enum
from pathlib import Path

from agentao.store.gateway_records import Boot

PROC = Path("/proc")
_EXITED = frozenset({"Z", "X"})  # /proc/<pid>/stat states of a process that has exited


class Liveness(Enum):
    ALIVE = "alive"
    DEAD = "dead"
    UNKNOWN = "unknown"  # treated as alive: nothing of it is repaired


def this_boot() -> Boot:
    """A new boot record for the current process."""
    pid = os.getpid()
    return Boot(
        id="boot_" + uuid.uuid4().hex,
        host=socket.gethostname(),
        machine_boot=_read(PROC / "sys/kernel/random/boot_id"),
        pid_ns=_pid_namespace(),
        pid=pid,
        pid_start=process_start(pid),
        started_at=time.time(),
    )


def liveness(boot: Boot, here: Boot) -> Liveness:
    """Whether the process `boot` describes is alive, as far as `here` can tell."""
    if boot.id == here.id:
        return Liveness.ALIVE
    if boot.host != here.host or not boot.machine_boot or not here.machine_boot:
        return Liveness.UNKNOWN
    if boot.machine_boot != here.machine_boot:
        return Liveness.DEAD  # the machine restarted since: every process of then is gone
    if boot.pid_ns != here.pid_ns or not boot.pid_start:
        return Liveness.UNKNOWN
    started = process_start(boot.pid)
    return Liveness.ALIVE if started == boot.pid_start else Liveness.DEAD


def process_start(pid: int) -> str:
    """The process's start time in clock ticks since boot ("" if there is no such
    process, it has exited and awaits its parent (a zombie), or the OS does not say)."""
    stat = _read(PROC / str(pid) / "stat")
    # The command name (field 2) is in parentheses and may hold spaces: count after it.
    fields = stat.rpartition(")")[2].split()
    if len(fields) <= 19 or fields[0] in _EXITED:
        return ""
    return fields[19]


def _pid_namespace() -> str:
    try:
        return os.readlink(PROC / "self/ns/pid")
    except OSError:
        return ""


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


__all__ = ["Liveness", "liveness", "process_start", "this_boot"]
