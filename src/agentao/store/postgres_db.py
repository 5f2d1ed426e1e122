"""A PostgreSQL database shared by gateways: a pool of connections, migrations run once.

Theory of operation. `PgDatabase.open(url, schemas)` is synchronous, like SQLite's
`Database.open`: it connects once (so a wrong URL is an error before the gateway serves,
naming the host and never the password), applies the migrations not yet applied, and
builds an `AsyncConnectionPool` that opens on the first query, on the event loop that
serves (the pool's tasks belong to that loop). Every query takes a connection from the
pool for one statement (autocommit) or one transaction, and gives it back.

Migrations. Each `Schema` is a name and an append-only list of statements, its version
kept in `schema_versions`, as on SQLite. All of them run in one transaction that first
takes `pg_advisory_xact_lock(MIGRATION_LOCK)`: gateways starting together queue on the
lock, and each one after the first finds the versions current and applies nothing. The
lock is released with the transaction, so a gateway that dies mid-migration leaves
neither a half-built schema nor a held lock.

Every URL shown in a message or a log line goes through `redact_secrets` first.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import set_json_loads
from psycopg_pool import AsyncConnectionPool

from agentao.credentials import REDACTED, redact_secrets
from agentao.store.gateway_records import decode_json
from agentao.store.sqlite import Schema, Trace
from agentao.store.target import (
    DEFAULT_CONNECT_SECONDS,
    DEFAULT_POOL_SIZE,
    StoreUnavailable,
    describe,
)

log = logging.getLogger("agentao.store")
T = TypeVar("T")

# The advisory lock migrations hold: any number that no other user of the database takes.
MIGRATION_LOCK = 0x61_67_65_6E_74_61_6F  # "agentao"

_VERSIONS_TABLE = """
CREATE TABLE IF NOT EXISTS schema_versions (
    name TEXT PRIMARY KEY,
    version INTEGER NOT NULL
)
"""
Params = Sequence[Any]


class PgTransaction:
    """Statements inside one transaction (see `PgDatabase.transaction`)."""

    def __init__(self, conn: psycopg.AsyncConnection[Any], trace: Trace | None) -> None:
        self._conn = conn
        self._trace = trace

    async def execute(self, sql: str, args: Params = ()) -> int:
        if self._trace:
            self._trace(sql)
        cursor = await self._conn.execute(sql, args)
        return cursor.rowcount

    async def executemany(self, sql: str, rows: Sequence[Params]) -> int:
        """Run `sql` once per row; the number of rows it changed in all."""
        if not rows:  # nothing to send: no round trip
            return 0
        if self._trace:
            self._trace(sql)
        async with self._conn.cursor() as cursor:
            await cursor.executemany(sql, rows)
            return cursor.rowcount

    async def fetchone(self, sql: str, args: Params = ()) -> dict[str, Any] | None:
        if self._trace:
            self._trace(sql)
        cursor = await self._conn.execute(sql, args)
        return await cursor.fetchone()


class PgDatabase:
    """A PostgreSQL database behind a pool. Open with `PgDatabase.open(url, schemas)`."""

    def __init__(self, pool: AsyncConnectionPool, url: str, connect_seconds: float) -> None:
        self._pool = pool
        self._url = url
        self._connect_seconds = connect_seconds
        self._trace: Trace | None = None

    @classmethod
    def open(
        cls,
        url: str,
        schemas: Sequence[Schema],
        *,
        pool_size: int = DEFAULT_POOL_SIZE,
        connect_seconds: float = DEFAULT_CONNECT_SECONDS,
        idle_in_transaction_seconds: float | None = None,
    ) -> PgDatabase:
        """Connect, migrate, and make the pool (opened on first use). Synchronous: call
        before serving. Raises `StoreUnavailable` when the database cannot be reached.

        `idle_in_transaction_seconds`: the server ends a session of ours that sits that long
        inside a transaction (PostgreSQL's `idle_in_transaction_session_timeout`). A replica
        stalled mid-transaction (stopped, swapped out) would otherwise keep its row locks,
        its leases' among them, and every other replica's takeover would wait on them."""
        with _connect_once(url, connect_seconds) as conn:
            migrate(conn, schemas)
        kwargs: dict[str, Any] = {
            "autocommit": True,
            "row_factory": dict_row,
            "connect_timeout": _connect_timeout(connect_seconds),
        }
        if idle_in_transaction_seconds is not None:
            ms = max(1, round(idle_in_transaction_seconds * 1000))
            kwargs["options"] = f"-c idle_in_transaction_session_timeout={ms}"
        pool = AsyncConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            open=False,
            timeout=connect_seconds,
            kwargs=kwargs,
            configure=_configure,
            name="agentao-store",
        )
        return cls(pool, url, connect_seconds)

    async def _ready(self) -> None:
        # Safe to call again on an open pool; the first caller opens it on the serving loop.
        if self._pool.closed:
            await self._pool.open()

    async def fetchone(self, sql: str, args: Params = ()) -> dict[str, Any] | None:
        return await self.transaction(lambda tx: tx.fetchone(sql, args), atomic=False)

    async def fetchall(self, sql: str, args: Params = ()) -> list[dict[str, Any]]:
        await self._ready()
        if self._trace:
            self._trace(sql)
        async with self._pool.connection() as conn:
            cursor = await conn.execute(sql, args)
            return await cursor.fetchall()

    async def execute(self, sql: str, args: Params = ()) -> int:
        """One statement (its own commit); the number of rows it touched."""
        return await self.transaction(lambda tx: tx.execute(sql, args), atomic=False)

    async def transaction(
        self, fn: Callable[[PgTransaction], Awaitable[T]], *, atomic: bool = True
    ) -> T:
        """Run `fn` on one pooled connection, in one transaction (all or none) when `atomic`."""
        await self._ready()
        async with self._pool.connection() as conn:
            tx = PgTransaction(conn, self._trace)
            if not atomic:
                return await fn(tx)
            async with conn.transaction():
                return await fn(tx)

    def trace(self, callback: Trace | None) -> None:
        """Call `callback(sql)` as each statement starts (None: stop). For tests and benches."""
        self._trace = callback

    async def close(self) -> None:
        await self._pool.close()

    def __repr__(self) -> str:
        return f"PgDatabase({redact_secrets(self._url)!r})"


async def _configure(conn: psycopg.AsyncConnection[Any]) -> None:
    # JSON and JSONB columns come back decoded by msgspec (several times faster than json).
    set_json_loads(decode_json, conn)


def _connect_timeout(seconds: float) -> int:
    return max(1, round(seconds))  # libpq takes whole seconds; 0 would mean forever


def _connect_once(url: str, connect_seconds: float) -> psycopg.Connection[Any]:
    try:
        return psycopg.connect(url, connect_timeout=_connect_timeout(connect_seconds))
    except psycopg.Error as exc:
        raise unavailable(url, exc, "cannot connect to") from None


def unavailable(url: str, exc: BaseException, doing: str = "lost") -> StoreUnavailable:
    """`exc` as a `StoreUnavailable` naming where `url` points and why, never its password."""
    text = str(exc).strip()
    reason = text.splitlines()[0] if text else type(exc).__name__
    password = urlsplit(url).password
    if password:  # a driver may quote it bare, away from its URL
        reason = reason.replace(password, REDACTED)
    reason = redact_secrets(reason)
    where = describe(url)
    return StoreUnavailable(f"{doing} the PostgreSQL store at {where}: {reason}", where)


def is_connection_failure(exc: BaseException) -> bool:
    """A failure to reach the server (refused, dropped, shut down, no pooled connection in
    time), as opposed to an error in the statement itself."""
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate or ""
    return not state or state.startswith(("08", "57P"))


def migrate(conn: psycopg.Connection[Any], schemas: Sequence[Schema]) -> int:
    """Bring every schema up to date in one transaction under the migration lock; the
    number of migrations applied (0 when another gateway applied them first)."""
    applied = 0
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute(_VERSIONS_TABLE)
        for schema in schemas:
            applied += _migrate_one(conn, schema)
    return applied


def _migrate_one(conn: psycopg.Connection[Any], schema: Schema) -> int:
    row = conn.execute(
        "SELECT version FROM schema_versions WHERE name = %s", (schema.name,)
    ).fetchone()
    current = row[0] if row else 0
    for version, statement in enumerate(schema.migrations[current:], start=current + 1):
        conn.execute(statement)
        conn.execute(
            "INSERT INTO schema_versions (name, version) VALUES (%s, %s) "
            "ON CONFLICT (name) DO UPDATE SET version = excluded.version",
            (schema.name, version),
        )
        log.debug("store: %s schema at version %d", schema.name, version)
    return max(0, len(schema.migrations) - current)


__all__ = [
    "MIGRATION_LOCK",
    "PgDatabase",
    "PgTransaction",
    "is_connection_failure",
    "migrate",
    "unavailable",
]
