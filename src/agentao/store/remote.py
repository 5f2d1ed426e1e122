"""Remote ACP connections and every message sent to them, numbered, for replay.

Theory of operation. A client that speaks ACP to the gateway over HTTP or a WebSocket
holds a *connection* (`gw_acp_connections`): who owns it (the API key's name), which
agent it talks to, the capabilities its client advertised, and when it was last seen.
Everything the gateway sends it is a *message* (`gw_acp_messages`), numbered per
connection from 1 and stored before it is sent; its `scope` is the stream it belongs
to ('' for the connection's own, else a session id). A client that reconnects with
`Last-Event-ID: N` (or `after_seq=N`) gets the messages after N of that stream again,
from here: exactly what it missed, in order.

A message that is an event of a conversation's log (an agent update of a turn) is not
stored again: its row holds the connection's number, its scope and a *reference*
(`log_conversation`, `log_seq`) to the frame in the log, and an empty body; the reader
rebuilds the message from that frame (`gateway/remote/clients.py`). So an agent
update is stored once, whichever clients watch it, and each client's numbering stays
its own.

The tables live beside the gateway's in the same database (`open_gateway_store`), so a
shared database (PostgreSQL, next) serves both.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from agentao.store.gateway_records import Row, json_value
from agentao.store.sqlite import Database, Schema

REMOTE_SCHEMA = Schema(
    "remote_acp",
    (
        """CREATE TABLE gw_acp_connections (
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            agent TEXT NOT NULL,
            transport TEXT NOT NULL,
            capabilities TEXT NOT NULL,
            boot_id TEXT,
            created_at REAL NOT NULL,
            seen_at REAL NOT NULL
        )""",
        """CREATE TABLE gw_acp_messages (
            connection_id TEXT NOT NULL REFERENCES gw_acp_connections(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            scope TEXT NOT NULL,
            body BLOB NOT NULL,
            PRIMARY KEY (connection_id, seq)
        )""",
        "CREATE INDEX gw_acp_connections_by_seen ON gw_acp_connections(seen_at)",
        # A message that is a conversation log's frame: a reference to it, no body.
        "ALTER TABLE gw_acp_messages ADD COLUMN log_conversation TEXT",
        "ALTER TABLE gw_acp_messages ADD COLUMN log_seq INTEGER",
    ),
)
_encode = msgspec.json.Encoder().encode
# The same on both stores (SQLite's `?` for `%s`).
INSERT_MESSAGE = (
    "INSERT INTO gw_acp_messages (connection_id, seq, scope, body, log_conversation, log_seq) "
    "VALUES (%s, %s, %s, %s, %s, %s)"
)
MESSAGES_AFTER = (
    "SELECT connection_id, seq, scope, body, log_conversation, log_seq FROM gw_acp_messages "
    "WHERE connection_id = %s AND seq > %s"
)


@dataclass(slots=True)
class RemoteConnection:
    """One remote client's connection, as stored."""

    id: str
    owner: str
    agent: str
    transport: str  # "http" | "ws"
    capabilities: dict[str, Any] = field(default_factory=dict)  # the client's, as sent
    boot_id: str | None = None  # the gateway process that serves it
    created_at: float = 0.0
    seen_at: float = 0.0


@dataclass(frozen=True, slots=True)
class RemoteMessage:
    """One message to a remote client: its number on the connection, its stream, itself."""

    connection_id: str
    seq: int
    scope: str  # "" (the connection's stream) or a session id
    body: bytes  # the JSON-RPC message, encoded once, as sent (stored empty for a reference)
    # A frame of a conversation's log this message carries (stored as a reference only).
    log_conversation: str | None = None
    log_seq: int = 0

    def row(self) -> tuple[str, int, str, bytes, str | None, int | None]:
        """(connection_id, seq, scope, body, log_conversation, log_seq) as stored."""
        if self.log_conversation is None:
            return (self.connection_id, self.seq, self.scope, self.body, None, None)
        return (self.connection_id, self.seq, self.scope, b"", self.log_conversation, self.log_seq)


def message_from_row(row: Row) -> RemoteMessage:
    """A stored message (a reference's body is empty: see the module docstring)."""
    return RemoteMessage(
        row["connection_id"],
        row["seq"],
        row["scope"],
        bytes(row["body"]),
        row["log_conversation"],
        row["log_seq"] or 0,
    )


class RemoteStore(Protocol):
    async def put_connection(self, connection: RemoteConnection) -> None: ...
    async def get_connection(self, connection_id: str) -> RemoteConnection | None: ...
    async def last_seq(self, connection_id: str) -> int: ...
    async def append_messages(
        self, messages: Sequence[RemoteMessage], seen: Sequence[tuple[str, float]] = ()
    ) -> None: ...
    async def messages_after(
        self, connection_id: str, after_seq: int, scope: str | None
    ) -> list[RemoteMessage]: ...
    async def delete_connection(self, connection_id: str) -> None: ...
    async def idle_connections(self, seen_before: float) -> list[str]: ...


class SqliteRemoteStore:
    def __init__(self, db: Database, inline_commit_bytes: int = 0) -> None:
        self.db = db
        self.inline_commit_bytes = inline_commit_bytes  # as `SqliteGatewayStore`'s

    async def put_connection(self, c: RemoteConnection) -> None:
        row = (c.id, c.owner, c.agent, c.transport, _encode(c.capabilities), c.boot_id)
        await self.db.call(
            lambda conn: conn.execute(
                "INSERT INTO gw_acp_connections (id, owner, agent, transport, capabilities, "
                "boot_id, created_at, seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (*row, c.created_at, c.seen_at),
            )
        )

    async def get_connection(self, connection_id: str) -> RemoteConnection | None:
        row = await self.db.read(
            lambda c: c.execute(
                "SELECT * FROM gw_acp_connections WHERE id = ?", (connection_id,)
            ).fetchone()
        )
        return connection_from_row(row) if row is not None else None

    async def last_seq(self, connection_id: str) -> int:
        row = await self.db.read(
            lambda c: c.execute(
                "SELECT MAX(seq) FROM gw_acp_messages WHERE connection_id = ?", (connection_id,)
            ).fetchone()
        )
        return int(row[0] or 0)

    async def append_messages(
        self, messages: Sequence[RemoteMessage], seen: Sequence[tuple[str, float]] = ()
    ) -> None:
        """Messages, and when their connections were last seen, in one transaction."""
        rows = [m.row() for m in messages]

        def append(c: sqlite3.Connection) -> None:
            c.executemany(INSERT_MESSAGE.replace("%s", "?"), rows)
            c.executemany(
                "UPDATE gw_acp_connections SET seen_at = ? WHERE id = ?",
                [(at, cid) for cid, at in seen],
            )

        size = sum(len(row[3]) for row in rows)
        inline = self.inline_commit_bytes > 0 and size <= self.inline_commit_bytes
        await self.db.transaction(append, inline=inline, size=size)

    async def messages_after(
        self, connection_id: str, after_seq: int, scope: str | None
    ) -> list[RemoteMessage]:
        """A stream's messages after `after_seq` (scope None: every stream, a WebSocket)."""
        sql = MESSAGES_AFTER.replace("%s", "?")
        args: tuple[Any, ...] = (connection_id, after_seq)
        if scope is not None:
            sql += " AND scope = ?"
            args += (scope,)
        rows = await self.db.read(lambda c: c.execute(sql + " ORDER BY seq", args).fetchall())
        return [message_from_row(r) for r in rows]

    async def delete_connection(self, connection_id: str) -> None:
        await self.db.call(
            lambda c: c.execute("DELETE FROM gw_acp_connections WHERE id = ?", (connection_id,))
        )

    async def idle_connections(self, seen_before: float) -> list[str]:
        rows = await self.db.read(
            lambda c: c.execute(
                "SELECT id FROM gw_acp_connections WHERE seen_at < ?", (seen_before,)
            ).fetchall()
        )
        return [r[0] for r in rows]


def connection_from_row(row: Row) -> RemoteConnection:
    """A stored connection, from either store's row."""
    return RemoteConnection(
        id=row["id"],
        owner=row["owner"],
        agent=row["agent"],
        transport=row["transport"],
        capabilities=json_value(row["capabilities"]),
        boot_id=row["boot_id"],
        created_at=row["created_at"],
        seen_at=row["seen_at"],
    )


__all__ = [
    "INSERT_MESSAGE",
    "MESSAGES_AFTER",
    "REMOTE_SCHEMA",
    "RemoteConnection",
    "RemoteMessage",
    "RemoteStore",
    "SqliteRemoteStore",
    "connection_from_row",
    "message_from_row",
]
