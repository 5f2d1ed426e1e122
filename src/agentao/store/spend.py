"""What each API key spent a day: tokens and US dollars (`[[keys]] tokens_per_day`,
`usd_per_day`; the gateway's side: gateway/budgets.py).

One row per key and UTC day (`gw_key_spend`: the owner, the day as whole days since the
epoch, its tokens and its dollars). A charge is one statement that adds to the row in
the database (`INSERT … ON CONFLICT DO UPDATE SET tokens = tokens + …`), never a read and
a write: two gateways on one PostgreSQL charging the same key at once both land, and
neither overwrites the other. A restart reads the day's count back from here. Rows of
past days are kept (a day's spend stays readable); they are a few bytes a key a day.

`SqliteSpend` lives in the gateway's SQLite file (`SPEND_SCHEMA`), `PostgresSpend` in its
PostgreSQL database (`PG_SPEND_SCHEMA`); both are reached as `GatewayStore.spend`.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from agentao.store.sqlite import Database, Schema

if TYPE_CHECKING:  # psycopg is optional: only a PostgreSQL store loads it
    from agentao.store.postgres_db import PgDatabase

SPEND_SCHEMA = Schema(
    "key-spend",
    (
        """CREATE TABLE gw_key_spend (
            owner TEXT NOT NULL,
            day INTEGER NOT NULL,
            tokens INTEGER NOT NULL DEFAULT 0,
            usd REAL NOT NULL DEFAULT 0,
            PRIMARY KEY (owner, day)
        )""",
    ),
)
PG_SPEND_SCHEMA = Schema(
    "key-spend",
    (
        """CREATE TABLE gw_key_spend (
            owner TEXT NOT NULL,
            day BIGINT NOT NULL,
            tokens BIGINT NOT NULL DEFAULT 0,
            usd DOUBLE PRECISION NOT NULL DEFAULT 0,
            PRIMARY KEY (owner, day)
        )""",
    ),
)
# The same on both stores (SQLite's `?` for `%s`): an add in the database, never a read first.
_CHARGE = (
    "INSERT INTO gw_key_spend AS s (owner, day, tokens, usd) VALUES (%s, %s, %s, %s) "
    "ON CONFLICT (owner, day) DO UPDATE SET tokens = s.tokens + excluded.tokens, "
    "usd = s.usd + excluded.usd"
)
_SPENT = "SELECT tokens, usd FROM gw_key_spend WHERE owner = %s AND day = %s"


@dataclass(frozen=True, slots=True)
class Spent:
    """One key's spend on one day."""

    tokens: int = 0
    usd: float = 0.0


class SpendStore(Protocol):
    async def charge(self, owner: str, day: int, tokens: int, usd: float) -> None: ...
    async def spent(self, owner: str, day: int) -> Spent: ...


class SqliteSpend:
    """`SpendStore` on the gateway's SQLite `Database` (opened with `SPEND_SCHEMA`)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def charge(self, owner: str, day: int, tokens: int, usd: float) -> None:
        args = (owner, day, tokens, usd)
        await self.db.call(lambda c: c.execute(_CHARGE.replace("%s", "?"), args))

    async def spent(self, owner: str, day: int) -> Spent:
        def read(c: sqlite3.Connection) -> Spent:
            row = c.execute(_SPENT.replace("%s", "?"), (owner, day)).fetchone()
            return Spent(int(row[0]), float(row[1])) if row else Spent()

        return await self.db.read(read)


class PostgresSpend:
    """`SpendStore` on the gateway's `PgDatabase` (migrated with `PG_SPEND_SCHEMA`)."""

    def __init__(self, db: PgDatabase) -> None:
        self.db = db

    async def charge(self, owner: str, day: int, tokens: int, usd: float) -> None:
        await self.db.execute(_CHARGE, (owner, day, tokens, usd))

    async def spent(self, owner: str, day: int) -> Spent:
        row = await self.db.fetchone(_SPENT, (owner, day))
        return Spent(int(row["tokens"]), float(row["usd"])) if row else Spent()


__all__ = ["PG_SPEND_SCHEMA", "SPEND_SCHEMA", "PostgresSpend", "SpendStore", "Spent", "SqliteSpend"]
