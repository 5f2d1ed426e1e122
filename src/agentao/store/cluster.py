"""Gateways sharing one store: who is alive, which one owns a conversation, and wake-ups.

Theory of operation. Gateway *replicas* share a PostgreSQL store and serve any
conversation; but a live ACP session sits in one replica's agent process, so each
conversation that is live somewhere has one owner at a time, by *lease*: a row naming
the owner's boot, a *fencing token* and an expiry. A replica claims the lease before it
starts a turn (granted when free, expired or already its own; the token grows on every
change of owner), renews every lease it holds with its heartbeat, and releases a lease
when it closes the session. A replica whose heartbeat stops (killed, partitioned) loses
its leases at their expiry; another replica claims them and reopens the session with
`session/load`. A write made under a lease that has since moved is refused by comparing
tokens (`holds`). Times are the database's clock, so replicas' clocks may disagree.

Replicas also wake each other when a task's frames are stored (`notify_tasks` /
`listen_tasks`), so a watcher on one replica follows a turn running on another: the
wake-up carries only the task's and its conversation's ids; the frames are read from
the store.

`Cluster` is that interface; `SoloCluster` is the one gateway of an SQLite store, which
owns everything and has nobody to wake. `PgCluster` (store/postgres_cluster.py) is the
shared one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Claim:
    """The outcome of claiming a conversation's lease."""

    granted: bool
    token: int  # ours when granted, the holder's otherwise
    owner: str  # the boot that holds it now
    owner_url: str | None = None  # where that replica serves, when it is another one
    owner_silent_for: float = 0.0  # seconds since the holder's last heartbeat
    expires_in: float = 0.0  # seconds until the lease is free, unless renewed


@dataclass(frozen=True, slots=True)
class Member:
    """A replica as its last heartbeat recorded it."""

    boot_id: str
    url: str  # where it serves
    silent_for: float  # seconds since that heartbeat, by the database's clock


class Cluster(Protocol):
    shared: bool  # whether other gateways may use this store

    async def join(self, boot_id: str, url: str) -> None: ...
    async def heartbeat(self, boot_id: str, url: str, lease_seconds: float) -> None: ...
    async def expired(self, lease_seconds: float) -> list[str]: ...
    async def leave(self, boot_id: str) -> None: ...
    async def members(self) -> list[Member]: ...
    async def holder(self, conversation_id: str) -> Claim | None: ...
    async def claim(self, conversation_id: str, boot_id: str, lease_seconds: float) -> Claim: ...
    async def holds(self, conversation_id: str, boot_id: str, token: int) -> bool: ...
    async def release(self, conversation_id: str, boot_id: str) -> None: ...
    async def notify_tasks(self, tasks: Sequence[tuple[str, str]]) -> None: ...
    async def listen_tasks(self, wake: Callable[[str, str], None]) -> None: ...
    async def ready(self) -> None: ...


class SoloCluster:
    """One gateway alone on its store: every lease is its own, nobody else to wake."""

    shared = False

    async def join(self, boot_id: str, url: str) -> None:
        return None

    async def heartbeat(self, boot_id: str, url: str, lease_seconds: float) -> None:
        return None

    async def expired(self, lease_seconds: float) -> list[str]:
        return []

    async def leave(self, boot_id: str) -> None:
        return None

    async def members(self) -> list[Member]:
        return []

    async def holder(self, conversation_id: str) -> Claim | None:
        return None

    async def claim(self, conversation_id: str, boot_id: str, lease_seconds: float) -> Claim:
        return Claim(True, 1, boot_id)

    async def holds(self, conversation_id: str, boot_id: str, token: int) -> bool:
        return True

    async def release(self, conversation_id: str, boot_id: str) -> None:
        return None

    async def notify_tasks(self, tasks: Sequence[tuple[str, str]]) -> None:
        return None

    async def listen_tasks(self, wake: Callable[[str, str], None]) -> None:
        return None  # nobody else stores frames here

    async def ready(self) -> None:
        return None


__all__ = ["Claim", "Cluster", "Member", "SoloCluster"]
