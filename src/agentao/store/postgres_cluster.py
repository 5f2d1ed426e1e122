"""`Cluster` on PostgreSQL: replicas' heartbeats, conversation leases, and task wake-ups.

See store/cluster.py for the model. Every time here is the database's clock
(`_NOW`), so replicas whose clocks disagree still agree on who holds a lease. Wake-ups
are `NOTIFY` on one channel, delivered by PostgreSQL at commit to every replica that
`LISTEN`s on a connection of its own (not the pool's: a pooled connection is handed
to other queries).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from agentao.store.cluster import Claim, Member
from agentao.store.postgres_db import PgDatabase
from agentao.store.sqlite import Schema

log = logging.getLogger("agentao.store")

TASKS_CHANNEL = "agentao_task_frames"
_NOW = "extract(epoch from clock_timestamp())"

PG_CLUSTER_SCHEMA = Schema(
    "cluster",
    (
        """CREATE TABLE gw_replicas (
            boot_id TEXT PRIMARY KEY,
            url TEXT NOT NULL,
            heartbeat_at DOUBLE PRECISION NOT NULL
        )""",
        """CREATE TABLE gw_leases (
            conversation_id TEXT PRIMARY KEY,
            boot_id TEXT NOT NULL,
            token BIGINT NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL
        )""",
        "CREATE INDEX gw_leases_by_boot ON gw_leases(boot_id)",
    ),
)

# Granted when free, expired, or ours already; the token grows only when the owner changes.
_CLAIM = f"""
INSERT INTO gw_leases AS l (conversation_id, boot_id, token, expires_at)
VALUES (%(conv)s, %(boot)s, 1, {_NOW} + %(lease)s)
ON CONFLICT (conversation_id) DO UPDATE
SET boot_id = EXCLUDED.boot_id,
    token = l.token + CASE WHEN l.boot_id = EXCLUDED.boot_id THEN 0 ELSE 1 END,
    expires_at = EXCLUDED.expires_at
WHERE l.boot_id = EXCLUDED.boot_id OR l.expires_at < {_NOW}
RETURNING token
"""
_JOIN = (
    f"INSERT INTO gw_replicas (boot_id, url, heartbeat_at) VALUES (%s, %s, {_NOW}) "
    "ON CONFLICT (boot_id) DO UPDATE SET url = EXCLUDED.url, heartbeat_at = EXCLUDED.heartbeat_at"
)
_HOLDER = f"""
SELECT l.boot_id, l.token, r.url,
       {_NOW} - coalesce(r.heartbeat_at, 0) AS silent_for, l.expires_at - {_NOW} AS expires_in
FROM gw_leases l
LEFT JOIN gw_replicas r ON r.boot_id = l.boot_id
WHERE l.conversation_id = %s
"""


class PgCluster:
    """Replicas sharing one PostgreSQL database (see store/cluster.py)."""

    shared = True

    def __init__(self, db: PgDatabase, url: str) -> None:
        self.db = db
        self.url = url  # for the listening connection, which is not the pool's

    async def join(self, boot_id: str, url: str) -> None:
        await self.db.execute(_JOIN, (boot_id, url))

    async def heartbeat(self, boot_id: str, url: str, lease_seconds: float) -> None:
        """This replica lives: its row (back again, if the others had given it up for
        dead) and every lease it still holds are renewed at once."""

        async def beat(tx: Any) -> None:
            await tx.execute(_JOIN, (boot_id, url))
            await tx.execute(
                f"UPDATE gw_leases SET expires_at = {_NOW} + %s WHERE boot_id = %s",
                (lease_seconds, boot_id),
            )

        await self.db.transaction(beat)

    async def expired(self, lease_seconds: float) -> list[str]:
        """Replicas whose heartbeat stopped longer than a lease ago."""
        rows = await self.db.fetchall(
            f"SELECT boot_id FROM gw_replicas WHERE heartbeat_at < {_NOW} - %s",
            (lease_seconds,),
        )
        return [r["boot_id"] for r in rows]

    async def leave(self, boot_id: str) -> None:
        async def forget(tx: Any) -> None:
            await tx.execute("DELETE FROM gw_leases WHERE boot_id = %s", (boot_id,))
            await tx.execute("DELETE FROM gw_replicas WHERE boot_id = %s", (boot_id,))

        await self.db.transaction(forget)

    async def members(self) -> list[Member]:
        rows = await self.db.fetchall(
            f"SELECT boot_id, url, {_NOW} - heartbeat_at AS silent_for FROM gw_replicas"
        )
        return [Member(r["boot_id"], r["url"], float(r["silent_for"])) for r in rows]

    async def holder(self, conversation_id: str) -> Claim | None:
        """Who holds the conversation's lease now (expired or not), without claiming it."""
        row = await self.db.fetchone(_HOLDER, (conversation_id,))
        return _held(row) if row is not None else None

    async def claim(self, conversation_id: str, boot_id: str, lease_seconds: float) -> Claim:
        args = {"conv": conversation_id, "boot": boot_id, "lease": lease_seconds}
        row = await self.db.fetchone(_CLAIM, args)
        if row is not None:
            return Claim(True, int(row["token"]), boot_id)
        holder = await self.db.fetchone(_HOLDER, (conversation_id,))
        if holder is None:  # released between the two statements: try once more
            row = await self.db.fetchone(_CLAIM, args)
            if row is not None:
                return Claim(True, int(row["token"]), boot_id)
            holder = await self.db.fetchone(_HOLDER, (conversation_id,))
        assert holder is not None
        return _held(holder)

    async def holds(self, conversation_id: str, boot_id: str, token: int) -> bool:
        row = await self.db.fetchone(
            f"SELECT 1 FROM gw_leases WHERE conversation_id = %s AND boot_id = %s "
            f"AND token = %s AND expires_at >= {_NOW}",
            (conversation_id, boot_id, token),
        )
        return row is not None

    async def release(self, conversation_id: str, boot_id: str) -> None:
        await self.db.execute(
            "DELETE FROM gw_leases WHERE conversation_id = %s AND boot_id = %s",
            (conversation_id, boot_id),
        )

    async def notify_tasks(self, tasks: Sequence[tuple[str, str]]) -> None:
        """Wake the others for these (task id, conversation id): "task conversation"."""
        if tasks:
            await self.db.execute(
                "SELECT pg_notify(%s, id) FROM unnest(%s::text[]) AS id",
                (TASKS_CHANNEL, [f"{task} {conv}" for task, conv in tasks]),
            )

    async def listen_tasks(self, wake: Callable[[str, str], None]) -> None:
        """Call `wake(task_id, conversation_id)` for every task whose frames any replica
        stores, until cancelled; a lost connection is opened again after a pause."""
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
                    await conn.execute(f"LISTEN {TASKS_CHANNEL}")
                    async for note in conn.notifies():
                        task, _, conv = note.payload.partition(" ")
                        wake(task, conv)
            except psycopg.Error as exc:
                log.warning("listening for other replicas' task frames: %s", exc)
                await asyncio.sleep(1.0)

    async def ready(self) -> None:
        await self.db.fetchone("SELECT 1")


def _held(row: dict[str, Any]) -> Claim:
    return Claim(
        False,
        int(row["token"]),
        row["boot_id"],
        row["url"],
        float(row["silent_for"]),
        max(0.0, float(row["expires_in"])),
    )


__all__ = ["PG_CLUSTER_SCHEMA", "TASKS_CHANNEL", "PgCluster"]
