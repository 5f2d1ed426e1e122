"""Whether the gateway process that owns a row is alive, told from real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace

import pytest

from agentao.gateway.boots import Liveness, liveness, process_start, this_boot

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def child() -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )


def test_a_live_process_then_a_killed_one() -> None:
    here = this_boot()
    assert liveness(here, here) is Liveness.ALIVE
    proc = child()
    owner = replace(here, id="boot_other", pid=proc.pid, pid_start=process_start(proc.pid))
    assert owner.pid_start and liveness(owner, here) is Liveness.ALIVE
    proc.kill()
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # exited, left unreaped
    assert liveness(owner, here) is Liveness.DEAD  # a zombie is dead too
    proc.wait()
    assert liveness(owner, here) is Liveness.DEAD


def test_a_reused_pid_is_another_process() -> None:
    here = this_boot()
    proc = child()
    try:
        earlier = replace(here, id="boot_other", pid=proc.pid, pid_start="1")
        assert liveness(earlier, here) is Liveness.DEAD
    finally:
        proc.kill()
        proc.wait()


def test_what_cannot_be_seen_from_here_is_never_dead() -> None:
    here = this_boot()
    assert liveness(replace(here, id="b2", host="elsewhere", pid=1), here) is Liveness.UNKNOWN
    assert liveness(replace(here, id="b3", pid_ns="pid:[1]", pid=1), here) is Liveness.UNKNOWN
    rebooted = replace(here, id="b4", machine_boot="another-kernel-boot")
    assert liveness(rebooted, here) is Liveness.DEAD
