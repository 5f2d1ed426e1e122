"""One SQLite file shared by every feature that persists something.

Theory of operation. A `Database` owns one writing `sqlite3` connection and the one
worker thread that uses it; every write runs on that thread (`await db.call(fn)`),
so the event loop never blocks on disk and writes never interleave. A database
opened with `readers=N` also has N read-only connections, each on a thread of its
own: `await db.read(fn)` runs on the least busy one. WAL lets them read while the
writer writes, so a slow lookup or a long commit holds up neither the other
readers nor the writer. (Without readers, `read` runs on the writer.) Each feature (the
agent's sessions here; the gateway's response map later) declares a `Schema`:
a name and an append-only list of migrations. `Database.open()` applies the
ones not yet applied, each in its own transaction, and records the version in
`schema_versions`. A feature adds a table by adding a migration; nothing else
in the store changes.

Durability: WAL journal with `synchronous=NORMAL`: a committed transaction
survives a killed process (it is in the WAL); only an OS crash may lose the
last commits. `Database.transaction(fn)` runs `fn` inside BEGIN IMMEDIATE ..
COMMIT, so a turn is written whole or not at all.

Inline transactions. A small write that someone waits for (a streamed update is sent
to nobody before its commit) pays two thread hand-offs on the writer's thread: the job
to the thread, the result back to the loop, each a wake-up, and on a busy gateway a
wait for the GIL. `transaction(fn, inline=True)` runs it on the caller's thread (the
event loop) instead, when the writer is idle: nothing queued or running, so it cannot
overtake an earlier write. It never waits there: BEGIN IMMEDIATE gets no busy timeout
(another process holding the lock sends it to the thread, which waits), and it never
checkpoints (a checkpoint copies the WAL into the file and syncs it): after
`INLINE_CHECKPOINT_BYTES` written inline the writer's thread checkpoints. Without a
commit's sync (`synchronous=NORMAL` in WAL) a small commit costs the loop tens of
microseconds; the caller bounds what it sends inline (the gateway's
`store_inline_commit_bytes`).

Inline reads. A read by primary key that a request waits for (the conversation a turn
starts on) is likewise two hand-offs on a reader's thread, each a wake-up that waits for
a CPU on a loaded machine, for a lookup of tens of microseconds. `read(fn, inline=True)`
runs it on the event loop instead when the least busy reader is idle. A reader in WAL
mode reads the last commit and takes no lock a writer holds; in the rare case it would
wait (another process recovering the WAL) it gets no busy timeout and goes to the
thread, so the loop never waits on another process. Callers pass only lookups of one
row by key.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

Trace = Callable[[str], None]

log = logging.getLogger("agentao.store")

T = TypeVar("T")

BUSY_TIMEOUT_MS = 5000  # how long one statement waits for another connection's lock
WAL_SWITCH_TIMEOUT = 10.0  # seconds `PRAGMA journal_mode=WAL` is retried while the file is busy
_RETRY_FIRST, _RETRY_MAX = 0.005, 0.1  # seconds between those retries: doubling, capped
# Committed inline this much, the writer's thread checkpoints the WAL: SQLite's own
# automatic checkpoint comes at 1000 pages (4 MiB of 4 KiB pages).
INLINE_CHECKPOINT_BYTES = 4 * 1024 * 1024
_AUTOCHECKPOINT_PAGES = 1000  # SQLite's default, restored after each inline commit


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


class _Lane:
    """One connection and the one thread that ever touches it.

    Jobs reach the thread through a SimpleQueue, and results come back to the event
    loop with `call_soon_threadsafe`. (`run_in_executor` costs more than a short query:
    a concurrent.futures Future with its Condition, a semaphore, two chained futures.)
    """

    def __init__(self, name: str, connect: Callable[[], sqlite3.Connection]) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._using = threading.Lock()  # held while a job or an inline call uses `conn`
        # How `conn` is set now: for the event loop (no busy timeout; a writer's also no
        # automatic checkpoint: see the module docstring) or for the lane's thread. It is
        # switched when a call on the other side comes, not twice per call: a streaming
        # gateway commits inline for every burst, and those four PRAGMAs cost about as
        # much as the commit's own statements.
        self._on_loop = False
        self._checkpoints_off = False
        self.conn: sqlite3.Connection = None  # type: ignore[assignment]  # opened just below
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()
        self.conn = self.run_sync(lambda _none: connect())  # on the lane's own thread
        self.pending = 0  # calls submitted and not yet finished

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self.pending += 1
        self._jobs.put((fn, functools.partial(_to_loop, loop, future)))
        try:
            return await future
        finally:
            self.pending -= 1

    def run_sync(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        done: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._jobs.put((fn, functools.partial(_to_future, done)))
        return done.result()

    def submit(self, fn: Callable[[sqlite3.Connection], object]) -> None:
        """Run `fn` on the thread with nobody waiting for it (its error is logged); it
        counts as pending until done."""
        loop = asyncio.get_running_loop()
        self.pending += 1
        self._jobs.put((fn, functools.partial(_alone_done, loop, self)))

    def try_read_inline(self, fn: Callable[[sqlite3.Connection], T]) -> tuple[bool, T | None]:
        """Run the read `fn` here, on the caller's thread, if this read-only lane is idle:
        (True, its result); else (False, None) and nothing was run (see "Inline reads")."""
        if self.pending or not self._using.acquire(blocking=False):
            return False, None
        conn = self.conn
        try:
            self._set_for(on_loop=True)
            try:
                return True, fn(conn)
            except sqlite3.OperationalError as exc:
                if _is_busy(exc):  # WAL recovery under way: the thread waits for it
                    return False, None
                raise
        finally:
            self._using.release()

    def try_inline(self, fn: Callable[[sqlite3.Connection], T]) -> tuple[bool, T | None]:
        """Run `fn` in a transaction here, on the caller's thread, if the lane is idle
        and the write lock is free at once: (True, its result); else (False, None) and
        nothing was run (see the module docstring)."""
        if self.pending or not self._using.acquire(blocking=False):
            return False, None
        conn = self.conn
        try:
            self._set_for(on_loop=True, writer=True)
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if _is_busy(exc):  # another process writes: the thread waits for it
                    return False, None
                raise
            return True, _in_open_transaction(conn, fn)
        finally:
            self._using.release()

    def _set_for(self, *, on_loop: bool, writer: bool = False) -> None:
        """Set `conn` for the event loop (`writer`: a writer's, whose automatic checkpoint
        is off there too) or for the lane's thread, where it is not so already; the
        caller holds `_using`."""
        if on_loop != self._on_loop:
            self.conn.execute(f"PRAGMA busy_timeout={0 if on_loop else BUSY_TIMEOUT_MS}")
            self._on_loop = on_loop
        checkpoints_off = on_loop and writer
        if checkpoints_off != self._checkpoints_off:
            pages = 0 if checkpoints_off else _AUTOCHECKPOINT_PAGES
            self.conn.execute(f"PRAGMA wal_autocheckpoint={pages}")
            self._checkpoints_off = checkpoints_off

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            fn, deliver = job
            try:
                with self._using:
                    if self._on_loop:
                        self._set_for(on_loop=False)
                    result = fn(self.conn)
            except BaseException as exc:
                deliver(None, exc)
            else:
                deliver(result, None)

    def close(self) -> None:
        try:
            self.run_sync(lambda conn: conn.close())
        finally:
            self._jobs.put(None)
            self._thread.join()


_Job = tuple[Callable[[sqlite3.Connection], object], Callable[[object, BaseException | None], None]]


def _to_loop(
    loop: asyncio.AbstractEventLoop, future: asyncio.Future[T], result: T, exc: BaseException | None
) -> None:
    with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
        loop.call_soon_threadsafe(_settle, future, result, exc)


def _settle(future: asyncio.Future[T], result: T, exc: BaseException | None) -> None:
    if future.cancelled():
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(result)


def _alone_done(
    loop: asyncio.AbstractEventLoop, lane: _Lane, _result: object, exc: BaseException | None
) -> None:
    if exc is not None:
        log.error("store: a background job failed: %r", exc)
    with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
        loop.call_soon_threadsafe(_one_less, lane)


def _one_less(lane: _Lane) -> None:
    lane.pending -= 1


def _to_future(done: concurrent.futures.Future[T], result: T, exc: BaseException | None) -> None:
    if exc is not None:
        done.set_exception(exc)
    else:
        done.set_result(result)


class Database:
    """A SQLite file with its own threads. Open with `Database.open(path, schemas)`."""

    def __init__(self, writer: _Lane, readers: Sequence[_Lane] = ()) -> None:
        self._writer = writer
        self._readers = tuple(readers)
        self._closed = False
        self._inline_bytes = 0  # written inline since the last checkpoint

    @classmethod
    def open(cls, path: Path | str, schemas: Sequence[Schema], *, readers: int = 0) -> Database:
        """Open (creating if needed) and migrate, plus `readers` read-only connections.
        Synchronous: call before serving."""
        writer = _Lane("agentao-store", lambda: _connect(str(path), tuple(schemas)))
        lanes = [
            _Lane(f"agentao-store-read{i}", lambda: _connect_reader(str(path)))
            for i in range(readers)
        ]
        return cls(writer, lanes)

    async def call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn(conn)` on the writer's thread (autocommit: one statement, one commit)."""
        self._check_open()
        return await self._writer.run(fn)

    async def read(self, fn: Callable[[sqlite3.Connection], T], *, inline: bool = False) -> T:
        """Run `fn(conn)` on the least busy read-only connection; it sees every commit
        made before the call. (The writer's, when the database has no readers.) `inline`:
        a point read by key, run here on the event loop when that connection is idle
        (see "Inline reads"), else on its thread as usual."""
        self._check_open()
        if not self._readers:
            return await self._writer.run(fn)
        lane = min(self._readers, key=lambda lane: lane.pending)
        if inline:
            done, result = lane.try_read_inline(fn)
            if done:
                return result  # type: ignore[return-value]  # fn's own result
        return await lane.run(fn)

    async def transaction(
        self, fn: Callable[[sqlite3.Connection], T], *, inline: bool = False, size: int = 0
    ) -> T:
        """Run `fn(conn)` in one transaction: all of it is committed, or none. `inline`:
        here on the event loop if the writer is idle, else on its thread as usual; `size`
        is about how many bytes it writes (see the module docstring)."""
        if inline:
            self._check_open()
            done, result = self._writer.try_inline(fn)
            if done:
                self._wrote_inline(size)
                return result  # type: ignore[return-value]  # fn's own result
        return await self.call(lambda conn: _in_transaction(conn, fn))

    def _wrote_inline(self, size: int) -> None:
        self._inline_bytes += size
        if self._inline_bytes >= INLINE_CHECKPOINT_BYTES:
            self._inline_bytes = 0
            self._writer.submit(_checkpoint)

    def call_sync(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Blocking variant, for tests and startup code outside the event loop."""
        return self._writer.run_sync(fn)

    def trace(self, callback: Trace | None) -> None:
        """Call `callback(sql)` on each statement's own thread as it starts, on every
        connection (None: stop). For counting statements in tests and benches."""
        for lane in (self._writer, *self._readers):
            lane.run_sync(lambda conn: conn.set_trace_callback(callback))

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the database is closed")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for lane in (*self._readers, self._writer):
            lane.close()


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


def _connect_reader(path: str) -> sqlite3.Connection:
    # Opened after the writer: the file exists, is migrated and is in WAL mode.
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA query_only=ON")
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
            if not _is_busy(exc) or time.monotonic() + delay > deadline:
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
        log.debug("store: %s schema at version %d", schema.name, version)


def _checkpoint(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()  # fetched: the statement ends


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _in_transaction(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    conn.execute("BEGIN IMMEDIATE")
    return _in_open_transaction(conn, fn)


def _in_open_transaction(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    try:
        result = fn(conn)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return result


__all__ = [
    "BUSY_TIMEOUT_MS",
    "INLINE_CHECKPOINT_BYTES",
    "WAL_SWITCH_TIMEOUT",
    "Database",
    "Schema",
    "Trace",
]
