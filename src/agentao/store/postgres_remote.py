"""Remote ACP connections and their numbered messages on PostgreSQL (see store/remote.py).

The same two tables as on SQLite: a connection's capabilities are JSONB, a message's
body BYTEA (the JSON-RPC message exactly as it was sent, or empty for a reference to a
conversation log's frame), numbered per connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from agentao.store.postgres_db import PgDatabase, PgTransaction
from agentao.store.remote import (
    INSERT_MESSAGE,
    MESSAGES_AFTER,
    RemoteConnection,
    RemoteMessage,
    connection_from_row,
    message_from_row,
)
from agentao.store.sqlite import Schema

PG_REMOTE_SCHEMA = Schema(
    "remote_acp",
    (
        """CREATE TABLE gw_acp_connections (
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            agent TEXT NOT NULL,
            transport TEXT NOT NULL,
            capabilities JSONB NOT NULL,
            boot_id TEXT,
            created_at DOUBLE PRECISION NOT NULL,
            seen_at DOUBLE PRECISION NOT NULL
        )""",
        """CREATE TABLE gw_acp_messages (
            connection_id TEXT NOT NULL REFERENCES gw_acp_connections(id) ON DELETE CASCADE,
            seq BIGINT NOT NULL,
            scope TEXT NOT NULL,
            body BYTEA NOT NULL,
            PRIMARY KEY (connection_id, seq)
        )""",
        "CREATE INDEX gw_acp_connections_by_seen ON gw_acp_connections(seen_at)",
        # A message that is a conversation log's frame: a reference to it, no body.
        "ALTER TABLE gw_acp_messages ADD COLUMN log_conversation TEXT",
        "ALTER TABLE gw_acp_messages ADD COLUMN log_seq BIGINT",
    ),
)
_encode = msgspec.json.Encoder().encode


class PostgresRemoteStore:
    """`RemoteStore` on the gateway store's `PgDatabase`."""

    def __init__(self, db: PgDatabase) -> None:
        self.db = db

    async def put_connection(self, c: RemoteConnection) -> None:
        await self.db.execute(
            "INSERT INTO gw_acp_connections (id, owner, agent, transport, capabilities, "
            "boot_id, created_at, seen_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (
                c.id,
                c.owner,
                c.agent,
                c.transport,
                _encode(c.capabilities).decode(),
                c.boot_id,
                c.created_at,
                c.seen_at,
            ),
        )

    async def get_connection(self, connection_id: str) -> RemoteConnection | None:
        row = await self.db.fetchone(
            "SELECT * FROM gw_acp_connections WHERE id = %s", (connection_id,)
        )
        return connection_from_row(row) if row is not None else None

    async def last_seq(self, connection_id: str) -> int:
        row = await self.db.fetchone(
            "SELECT MAX(seq) AS last FROM gw_acp_messages WHERE connection_id = %s",
            (connection_id,),
        )
        return int(row["last"] or 0) if row else 0

    async def append_messages(
        self, messages: Sequence[RemoteMessage], seen: Sequence[tuple[str, float]] = ()
    ) -> None:
        """Messages, and when their connections were last seen, in one transaction."""
        rows = [m.row() for m in messages]
        seen_rows = [(at, cid) for cid, at in seen]

        async def append(tx: PgTransaction) -> None:
            await tx.executemany(INSERT_MESSAGE, rows)
            await tx.executemany(
                "UPDATE gw_acp_connections SET seen_at = %s WHERE id = %s", seen_rows
            )

        await self.db.transaction(append)

    async def messages_after(
        self, connection_id: str, after_seq: int, scope: str | None
    ) -> list[RemoteMessage]:
        sql = MESSAGES_AFTER
        args: tuple[Any, ...] = (connection_id, after_seq)
        if scope is not None:
            sql += " AND scope = %s"
            args += (scope,)
        rows = await self.db.fetchall(sql + " ORDER BY seq", args)
        return [message_from_row(r) for r in rows]

    async def delete_connection(self, connection_id: str) -> None:
        await self.db.execute("DELETE FROM gw_acp_connections WHERE id = %s", (connection_id,))

    async def idle_connections(self, seen_before: float) -> list[str]:
        rows = await self.db.fetchall(
            "SELECT id FROM gw_acp_connections WHERE seen_at < %s", (seen_before,)
        )
        return [r["id"] for r in rows]


__all__ = ["PG_REMOTE_SCHEMA", "PostgresRemoteStore"]
