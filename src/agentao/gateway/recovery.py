"""What a dead gateway left in flight is settled, so no client waits on it forever.

Theory of operation. A gateway that is killed leaves its stored responses
`in_progress` and its tasks `running`: an SDK that polls `responses.retrieve` would
poll forever, and nobody can cancel what no process runs. Each such row names its
owner, a `Boot` (see `boots.py`). `Recovery`:

* at startup records this process's boot, then settles the rows of every boot that
  is dead (and the rows written before owners were recorded): a response becomes
  `failed` with an error saying why, a task `error` with a last `task-error` frame;
* on reading a row still in flight that another process owns, asks whether that
  owner died since, and settles its rows at once if so (two gateways may share one
  file: the survivor answers truthfully for the other);
* at shutdown settles this process's own rows and forgets its boot.

A boot whose liveness is unknown (another host) is left alone: its rows are
settled by a gateway that can see it, never guessed at.
"""

from __future__ import annotations

import logging

from agentao.gateway.boots import Liveness, liveness
from agentao.gateway.response_builder import failed_snapshot
from agentao.store.gateway import GatewayStore
from agentao.store.gateway_records import Boot, ResponseRecord, Settlement, TaskRecord

log = logging.getLogger("agentao.gateway")

STOPPED = "gateway_stopped"  # the error code of a response or task its gateway never finished


class Recovery:
    def __init__(self, store: GatewayStore, boot: Boot) -> None:
        self.store = store
        self.boot = boot

    async def start(self) -> None:
        """Record this process as an owner, and settle what dead owners left."""
        await self.store.register_boot(self.boot)
        settled = 0
        for boot in await self.store.boots():
            if self._dead(boot):
                settled += await self._settle([boot.id], _crashed_reason(boot), [boot.id])
        # Rows written before owners were recorded have none: their gateway is gone.
        settled += await self._settle([None], _LEGACY_REASON, [])
        if settled:
            log.warning("settled %d responses and tasks a dead gateway left in flight", settled)

    async def settle_if_dead(self, boot_id: str | None) -> bool:
        """Settle the rows of `boot_id` if that process has died; whether it had."""
        if boot_id is None or boot_id == self.boot.id:
            return False
        boot = next((b for b in await self.store.boots() if b.id == boot_id), None)
        if boot is not None and not self._dead(boot):
            return False
        await self._settle([boot_id], _crashed_reason(boot), [boot_id])
        return True

    async def settle_boot(self, boot_id: str, why: str) -> int:
        """Settle what `boot_id` left in flight (it is known to be gone); how many rows."""
        return await self._settle([boot_id], why, [boot_id])

    async def stop(self) -> None:
        """Settle this process's own rows still in flight (it is shutting down)."""
        await self._settle([self.boot.id], _SHUTDOWN_REASON, [self.boot.id])

    def _dead(self, boot: Boot) -> bool:
        return liveness(boot, self.boot) is Liveness.DEAD

    async def _settle(self, owners: list[str | None], why: str, forget: list[str]) -> int:
        responses, tasks = await self.store.in_flight(owners)
        settlement = Settlement(
            responses=[_failed_response(r, why) for r in responses],
            tasks=[_failed_task(t, why) for t in tasks],
            frames={t.id: _error_frame(why) for t in tasks},
            boots=forget,
        )
        await self.store.settle(settlement)
        return len(responses) + len(tasks)


_LEGACY_REASON = "the gateway that ran this stopped before it finished (an older gateway)"
_SHUTDOWN_REASON = "the gateway shut down before this finished"


def _crashed_reason(boot: Boot | None) -> str:
    if boot is None:
        return "the gateway process that ran this exited before it finished"
    return (
        f"the gateway process that ran this (pid {boot.pid} on {boot.host}) exited before "
        "it finished"
    )


def _failed_response(record: ResponseRecord, why: str) -> ResponseRecord:
    body = failed_snapshot(record.body, STOPPED, why)
    return ResponseRecord(
        record.id, record.conversation_id, record.turn, "failed", body, boot_id=record.boot_id
    )


def _failed_task(task: TaskRecord, why: str) -> TaskRecord:
    return TaskRecord(task.id, task.conversation_id, "error", boot_id=task.boot_id, error=why)


def _error_frame(why: str) -> tuple[str, dict[str, object]]:
    return "task-error", {"error": {"message": why, "code": STOPPED}}


__all__ = ["STOPPED", "Recovery"]
