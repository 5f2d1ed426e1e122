"""A real PostgreSQL server for tests: a throwaway cluster on 127.0.0.1.

    server = PostgresServer.start()         # initdb + pg_ctl start, in a fresh temp dir
    url = server.create_database()          # a new, empty database: one per test
    server.halt()                           # stopped at once, as a crash would (tests of failure)
    server.stop()                           # pg_ctl stop, the directory removed

PostgreSQL refuses to run as root, so when the tests run as root (CI does) the cluster
is made and run by an unprivileged user (`nobody`), which owns the directory. The
cluster trusts connections on loopback only, listens on a free port of 127.0.0.1 and its
own socket directory, and skips fsync: a test cluster need not survive a power cut.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

UNPRIVILEGED_USER = "nobody"  # runs the cluster when the tests run as root
SUPERUSER = "postgres"
START_TIMEOUT_SECONDS = 60  # pg_ctl -w waits this long for the server to accept connections


def find_bindir() -> Path | None:
    """The directory holding initdb and pg_ctl, or None where PostgreSQL is not installed."""
    candidates = []
    if shutil.which("pg_config"):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
        candidates.append(out.stdout.strip())
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    if shutil.which("initdb"):
        candidates.append(str(Path(shutil.which("initdb") or "").resolve().parent))
    for directory in candidates:
        if directory and all((Path(directory) / t).is_file() for t in ("initdb", "pg_ctl")):
            return Path(directory)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class PostgresServer:
    bindir: Path
    root: Path  # data/, the socket and the log
    port: int
    _names: itertools.count = field(default_factory=itertools.count)
    _halted: bool = False

    @classmethod
    def start(cls, bindir: Path) -> PostgresServer:
        root = Path(tempfile.mkdtemp(prefix="agentao-pg-"))
        if os.geteuid() == 0:  # the cluster's owner must be able to write here
            user = pwd.getpwnam(UNPRIVILEGED_USER)
            os.chown(root, user.pw_uid, user.pw_gid)
        server = cls(bindir, root, _free_port())
        data = str(root / "data")
        server._run(
            "initdb", "-D", data, "-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--no-sync"
        )
        server._start()
        return server

    def _start(self) -> None:
        data, log = str(self.root / "data"), str(self.root / "log")
        options = f"-k {self.root} -h 127.0.0.1 -p {self.port} -F"
        timeout = str(START_TIMEOUT_SECONDS)
        self._run("pg_ctl", "-D", data, "-l", log, "-w", "-t", timeout, "-o", options, "start")

    def _run(self, tool: str, *args: str, check: bool = True) -> None:
        command = [str(self.bindir / tool), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", UNPRIVILEGED_USER, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, cwd=self.root)
        if check and done.returncode != 0:
            log = (self.root / "log").read_text() if (self.root / "log").exists() else ""
            raise RuntimeError(f"{tool} failed: {done.stderr}{done.stdout}\n{log}")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A new empty database's URL. FILE_COPY: a plain copy of template1's few files,
        several times faster than the default (which logs every block)."""
        import psycopg  # only where a cluster runs: the test extra installs it

        name = f"t{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name} STRATEGY FILE_COPY")
        return self.url(name)

    def halt(self) -> None:
        """Stop the server now (`-m immediate`: every connection is cut, as in a crash);
        its directory stays until `stop`."""
        self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")
        self._halted = True

    def restart(self) -> None:
        """Start a halted server again, on the same port, with what it had stored."""
        self._start()
        self._halted = False

    def stop(self) -> None:
        if not self._halted:
            self.halt()
        shutil.rmtree(self.root, ignore_errors=True)


__all__ = ["PostgresServer", "find_bindir"]
