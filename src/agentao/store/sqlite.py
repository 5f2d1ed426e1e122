"""One SQLite file shared by every feature that persists something.

Theory of operation. A `Database` owns one `sqlite3` connection and one worker
thread; every statement runs on that thread (`await db.call(fn)`), so the event
loop never blocks on disk and statements never interleave. Each feature (the
agent's sessions here; the gateway's response map later) declares a `Schema`:
a name and an append-only list of migrations. `Database.open()` applies the
ones not yet applied, each in its own transaction, and records the version in
`schema_versions`. A feature adds a table by adding a migration; nothing else
in the store changes.

Durability: WAL journal with `synchronous=NORMAL`: a committed transaction
survives a killed process (it is in the WAL); only an OS crash may lose the
last commits. `Database.transaction(fn)` runs `fn` inside BEGIN IMMEDIATE ..
COMMIT, so a turn is written whole or not at all.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

log = logging.getLogger("agentao.store")

T = TypeVar("T")

BUSY_TIMEOUT_MS = 5000  # how long one statement waits for another connection's lock
WAL_SWITCH_TIMEOUT = 10.0  # seconds `PRAGMA journal_mode=WAL` is retried while the file is busy
_RETRY_FIRST, _RETRY_MAX = 0.005, 0.1  # seconds between those retries: doubling, capped


@dataclass(frozen=True, slots=True)
class Schema:
    """A feature's tables: `migrations[i]` (one SQL statement) takes it from version i to i+1."""

    name: str
    migrations: tuple[str, ...]


_VERSIONS_TABLE = """
CREATE TABLE IF NOT EXISTS schema_versions (
    name TEXT PRIMARY KEY,
    version INTEGER NOT NULL
)
"""


class Database:
    """A SQLite file with its own worker thread. Open with `Database.open(path, schemas)`."""

    def __init__(self, conn: sqlite3.Connection, executor: ThreadPoolExecutor) -> None:
        self._conn = conn
        self._executor = executor
        self._closed = False

    @classmethod
    def open(cls, path: Path | str, schemas: Sequence[Schema]) -> Database:
        """Open (creating if needed) and migrate. Synchronous: call before serving."""
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentao-store")
        conn = executor.submit(_connect, str(path), tuple(schemas)).result()
        return cls(conn, executor)

    async def call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn(conn)` on the database thread (autocommit: one statement, one commit)."""
        if self._closed:
            raise RuntimeError("the database is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, fn, self._conn)

    async def transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn(conn)` in one transaction: all of it is committed, or none."""
        return await self.call(lambda conn: _in_transaction(conn, fn))

    def call_sync(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Blocking variant, for tests and startup code outside the event loop."""
        return self._executor.submit(fn, self._conn).result()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._executor.submit(self._conn.close).result()
        finally:
            self._executor.shutdown(wait=True)


def _connect(path: str, schemas: tuple[Schema, ...]) -> sqlite3.Connection:
    # isolation_level=None: we issue BEGIN/COMMIT ourselves; the connection is
    # only ever touched from this one worker thread.
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    # busy_timeout first: several processes (a gateway's agent pool) may open a fresh
    # file at once, and every step below may have to wait for another's lock.
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    _enable_wal(conn)
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    for schema in schemas:
        _in_transaction(conn, lambda c, s=schema: _migrate(c, s))
    log.debug("opened %s on thread %s", path, threading.current_thread().name)
    return conn


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch to the WAL journal, retrying while another process holds the file.

    Why a retry and not only busy_timeout: the switch upgrades a shared lock to an
    exclusive one, and SQLite answers SQLITE_BUSY at once rather than call the busy
    handler there (waiting while holding a lock could deadlock two such openers). So
    processes opening a fresh file together see "database is locked" here, whatever
    the timeout; backing off and asking again lets one win and the others follow.
    """
    deadline = time.monotonic() + WAL_SWITCH_TIMEOUT
    delay = _RETRY_FIRST
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            busy = getattr(exc, "sqlite_errorcode", None) in (
                sqlite3.SQLITE_BUSY,
                sqlite3.SQLITE_LOCKED,
            )
            if not busy or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, _RETRY_MAX)


def _migrate(conn: sqlite3.Connection, schema: Schema) -> None:
    """Bring one schema up to date; the caller holds the write lock (BEGIN IMMEDIATE),
    so the version read here cannot go stale before the migrations run."""
    conn.execute(_VERSIONS_TABLE)
    row = conn.execute(
        "SELECT version FROM schema_versions WHERE name = ?", (schema.name,)
    ).fetchone()
    current = row[0] if row else 0
    for version, statement in enumerate(schema.migrations[current:], start=current + 1):
        conn.execute(statement)
        conn.execute(
            "INSERT INTO schema_versions(name, version) VALUES (?, ?) "
            "ON CONFLICT(name) DO UPDATE SET version = excluded.version",
            (schema.name, version),
        )
        log.info("store: %s schema at version %d", schema.name, version)


def _in_transaction(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = fn(conn)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return result


__all__ = ["BUSY_TIMEOUT_MS", "WAL_SWITCH_TIMEOUT", "Database", "Schema"]
