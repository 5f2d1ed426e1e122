"""This gateway among replicas on one shared store: heartbeat, leases, the dead settled.

Theory of operation (the model is store/cluster.py's). On a PostgreSQL store several
`agentao serve` processes serve the same conversations. `Replica` is this process's
part:

* `start()` records where it serves (`advertise_url`) and begins its heartbeat, which
  every `heartbeat_seconds` renews its row and all its leases in one transaction, and
  settles the responses and tasks of every replica whose heartbeat stopped more than
  `lease_seconds` ago (`Recovery.settle_boot`): a client polling a response that a
  killed replica was producing reads `failed` within about a lease, never
  `in_progress` forever; its leases have expired by then, so its conversations go to
  the next replica a request reaches;
* `holder_url(conv)` before any route runs (holders.py): where another live replica
  holds the conversation, so the request is passed there untouched;
* `claim(conv)` before a turn: the lease is ours (free, expired or already ours), or
  refused (`TakenElsewhere`, 503 with Retry-After: another replica took it since the
  holder step looked). When the lease comes back to us after another replica held it
  (a new token), what we kept of the conversation is stale: it is read again and its
  session reopened;
* `holds(conv)` before a turn's result is recorded: a replica that lost its lease (it
  stalled past the expiry and another took over) does not write over the new owner;
* wake-ups: when the hub stores frames it tells the others (`notify_tasks`), and a
  watcher here of a task running elsewhere waits on `follow(task_id)`; a remote ACP
  client here of a session live elsewhere on `follow_conversation(conversation_id)`.

On SQLite (`SoloCluster`) all of this is a no-op: one gateway owns everything.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import socket
from collections.abc import Iterator
from typing import Any, NoReturn, TypeVar

from agentao.gateway.config import GatewayConfig, Limits
from agentao.gateway.errors import AgentUnavailable, TakenElsewhere
from agentao.gateway.recovery import Recovery
from agentao.store.cluster import Claim, Cluster, Member

log = logging.getLogger("agentao.gateway")
T = TypeVar("T")
# A holder silent for this many heartbeats is not sent clients: it is most likely gone.
SILENT_BEATS = 3


def advertised_url(config: GatewayConfig) -> str:
    """Where other replicas send this one's conversations: the configured URL, else the
    address it is bound to (this host's name when bound to every interface)."""
    if config.advertise_url:
        return config.advertise_url.rstrip("/")
    host = config.host
    if host in ("0.0.0.0", "::", "[::]"):
        host = socket.gethostname()
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{config.port}"


class Replica:
    def __init__(self, cluster: Cluster, boot_id: str, recovery: Recovery, limits: Limits) -> None:
        self.cluster = cluster
        self.boot_id = boot_id
        self.recovery = recovery
        self.limits = limits
        self._followers: dict[str, set[asyncio.Event]] = {}  # by task id
        self._conversations: dict[str, set[asyncio.Event]] = {}  # by conversation id
        self._tasks: list[asyncio.Task[None]] = []
        self._members: list[Member] = []
        self._members_read_at = -math.inf
        self.url = ""  # where this replica serves, once started

    @property
    def shared(self) -> bool:
        return self.cluster.shared

    async def start(self, url: str) -> None:
        if not self.shared:
            return
        self.url = url
        await self.cluster.join(self.boot_id, url)
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._beat()),
            loop.create_task(self.cluster.listen_tasks(self._wake)),
        ]
        log.info("replica %s serving at %s", self.boot_id, url)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.shared:
            with contextlib.suppress(Exception):  # its leases expire anyway
                await self.cluster.leave(self.boot_id)

    # ---- heartbeat ----------------------------------------------------------------------

    async def _beat(self) -> None:
        while True:
            try:
                await self.cluster.heartbeat(self.boot_id, self.url, self.limits.lease_seconds)
                await self._settle_expired()
            except Exception:  # the database is away: the next beat tries again
                log.exception("replica heartbeat failed")
            await asyncio.sleep(self.limits.heartbeat_seconds)

    async def _settle_expired(self) -> None:
        for boot_id in await self.cluster.expired(self.limits.lease_seconds):
            if boot_id == self.boot_id:
                continue  # we stalled past our own lease; the others may settle us
            why = (
                f"the gateway replica that ran this stopped answering (no heartbeat for "
                f"{self.limits.lease_seconds:g} s) before it finished"
            )
            settled = await self.recovery.settle_boot(boot_id, why)
            await self.cluster.leave(boot_id)
            log.warning("replica %s is gone: settled %d of its rows", boot_id, settled)

    # ---- leases ---------------------------------------------------------------------------

    async def claim(self, conversation_id: str, held_token: int | None) -> tuple[int, bool]:
        """Take the conversation's lease: (our token, whether what we kept of it is stale).
        Raises `TakenElsewhere` while another live replica holds it."""
        if not self.shared:
            return 1, False
        claim = await self._claim(conversation_id)
        if not claim.granted and await self.recovery.settle_if_dead(claim.owner):
            await self.cluster.leave(claim.owner)  # dead here and now: no need to wait
            claim = await self._claim(conversation_id)
        if not claim.granted:
            self._refuse(claim)
        return claim.token, held_token is not None and held_token != claim.token

    async def _claim(self, conversation_id: str) -> Claim:
        return await self.cluster.claim(conversation_id, self.boot_id, self.limits.lease_seconds)

    def _refuse(self, claim: Claim) -> NoReturn:
        """Ask the client to send it again (the holder step then passes it on); or, when
        the holder has gone quiet (dead, most likely, on another machine), to come back
        when the lease is free."""
        silent = claim.owner_silent_for > SILENT_BEATS * self.limits.heartbeat_seconds
        if claim.owner_url and not silent:
            raise TakenElsewhere(claim.owner_url)
        wait = max(1, math.ceil(claim.expires_in))
        state = "stopped answering" if silent else "gave no address"
        raise AgentUnavailable(
            f"this conversation is live on another gateway replica that {state}; it can "
            f"move here when that replica's lease expires (in about {wait} s)",
            code="conversation_elsewhere",
            headers={"Retry-After": str(wait)},
        )

    async def peers(self) -> list[Member]:
        """The other replicas that are alive (heard from within a few heartbeats)."""
        if not self.shared:
            return []
        now = asyncio.get_running_loop().time()
        if now - self._members_read_at > self.limits.heartbeat_seconds / 2:
            self._members = await self.cluster.members()  # read at most twice a heartbeat
            self._members_read_at = now
        quiet = SILENT_BEATS * self.limits.heartbeat_seconds
        return [m for m in self._members if m.boot_id != self.boot_id and m.silent_for <= quiet]

    async def alive(self, url: str) -> bool:
        """Whether a live replica serves at `url` (its heartbeat is recent)."""
        return any(m.url == url for m in await self.peers())

    async def url_of(self, boot_id: str | None) -> str | None:
        """Where the live replica `boot_id` serves, when it is another one."""
        return next((m.url for m in await self.peers() if m.boot_id == boot_id), None)

    async def holds(self, conversation_id: str, token: int | None) -> bool:
        if not self.shared or token is None:
            return True
        return await self.cluster.holds(conversation_id, self.boot_id, token)

    async def release(self, conversation_id: str) -> None:
        if self.shared:
            with contextlib.suppress(Exception):  # it expires anyway
                await self.cluster.release(conversation_id, self.boot_id)

    async def holder_url(self, conversation_id: str) -> str | None:
        """Where the conversation is live, when another replica holds it and answers its
        heartbeat; None when it is free (or ours, or its holder's lease ran out, or its
        holder is dead here and now: a process of this machine that is gone)."""
        if not self.shared:
            return None
        held = await self.cluster.holder(conversation_id)
        quiet = SILENT_BEATS * self.limits.heartbeat_seconds
        if held is None or held.owner == self.boot_id or held.expires_in <= 0:
            return None
        if held.owner_silent_for > quiet:
            return None  # the claim says when to come back (`_refuse`)
        if await self.recovery.settle_if_dead(held.owner):
            await self.cluster.leave(held.owner)  # as `claim` does: no need to wait
            return None
        return held.owner_url

    async def only_holder(self, conversation_id: str) -> str | None:
        """Where another replica holds the conversation, for a request only the holder can
        answer (what it needs is in that replica's memory): its URL for as long as its
        lease runs, even when its heartbeat is late (a busy replica; if it is dead the
        pass-on says so), where `holder_url` would serve the request here. None when the
        conversation is free, ours, or its holder is dead on this machine."""
        url = await self.holder_url(conversation_id)
        if url is not None or not self.shared:
            return url
        held = await self.cluster.holder(conversation_id)
        if held is None or held.owner == self.boot_id or held.expires_in <= 0:
            return None
        if held.owner_url:
            return held.owner_url
        self._refuse(held)

    # ---- other replicas' task frames ------------------------------------------------------

    @contextlib.contextmanager
    def follow(self, task_id: str) -> Iterator[asyncio.Event]:
        """An event set whenever any replica stores frames of `task_id`."""
        with self._following(self._followers, task_id, asyncio.Event()) as event:
            yield event

    @contextlib.contextmanager
    def follow_conversation(self, conversation_id: str) -> Iterator[asyncio.Event]:
        """An event set whenever any replica stores frames of the conversation's log (its
        reader then reads the log after its one position)."""
        with self._following(self._conversations, conversation_id, asyncio.Event()) as event:
            yield event

    @staticmethod
    @contextlib.contextmanager
    def _following(table: dict[str, set[Any]], key: str, follower: T) -> Iterator[T]:
        table.setdefault(key, set()).add(follower)
        try:
            yield follower
        finally:
            followers = table.get(key, set())
            followers.discard(follower)
            if not followers:
                table.pop(key, None)

    def _wake(self, task_id: str, conversation_id: str) -> None:
        for event in self._followers.get(task_id, ()):
            event.set()
        for event in self._conversations.get(conversation_id, ()):
            event.set()

    async def stored(self, tasks: list[tuple[str, str]]) -> None:
        """Frames of these (task, conversation) were stored here: wake the other replicas."""
        if self.shared and tasks:
            try:
                await self.cluster.notify_tasks(tasks)
            except Exception:  # their watchers re-read the store at each keep-alive
                log.exception("could not wake the other replicas")


__all__ = ["Replica", "advertised_url"]
