"""`session/request_permission` for a gateway turn: the key's policy, or a human with a deadline.

Policies (see `config.py`): `reject` picks `reject_once`; `reads` approves tool
kinds read/search/think and rejects the rest; `all` approves with `allow_once`;
`ask` sends a `permission-request` frame on the turn's task stream and waits for
a `permission-response` (WebSocket, or `POST /v1/permissions/{id}`) until the
deadline, then rejects. A watcher's presence (`POST /v1/permissions/{id}/presence`,
sent by the web UI while it shows the question) moves the deadline to then plus the
question's window, up to `max_wait_seconds` after it was asked: a person reading it is
not cut off, and a question nobody watches still ends.

A policy never picks an `*_always` option: the gateway hands out no standing permission
by itself. A human is offered the `*_once` choices and,
where the agent's config allows it (`AgentSpec.offers_always`: our agent, by default),
the agent's `allow_always` ("Always allow": our agent keeps that grant for this session
only, so for one conversation of one key, narrowed to this command prefix, path or
origin); never `reject_always`.

Every decision is recorded on the task stream as a `permission-response` frame
that says who decided (`policy`, `human`, `deadline`, `cancelled`) and why, in the
words the agent is given with the answer (`reasons.py`).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field

from agentao.client.permissions import (
    PermissionAnswer,
    PermissionOption,
    PermissionRequest,
    choose,
)
from agentao.gateway import reasons
from agentao.gateway.auth import Principal, owns
from agentao.gateway.config import Policy
from agentao.gateway.tasklog import TaskLog

log = logging.getLogger("agentao.gateway")

ONCE_CHOICES = frozenset({"allow_once", "reject_once"})
HUMAN_CHOICES = ONCE_CHOICES | {"allow_always"}


@dataclass(slots=True)
class PendingAsk:
    """A question to a human, open until answered, cancelled or past its deadline."""

    id: str
    task_id: str
    owner: str
    request: PermissionRequest
    deadline: float  # moved on by a watcher's presence, up to `latest`
    future: asyncio.Future[PermissionAnswer] = field(repr=False)
    window: float = 0.0  # seconds each presence gives
    always_allow: bool = False  # the agent's allow_always is offered too
    latest: float = 0.0  # the deadline never goes past this
    asked: float = field(default_factory=time.time)

    @property
    def choices(self) -> tuple[PermissionOption, ...]:
        """What a human is offered: the `*_once` options, and the agent's allow_always
        where its config allows it."""
        offered = HUMAN_CHOICES if self.always_allow else ONCE_CHOICES
        return tuple(o for o in self.request.options if o.kind in offered)

    def frame(self) -> dict[str, object]:
        return _naming_child(self.request) | {
            "requestId": self.id,
            "toolCallId": self.request.tool_call_id,
            "title": self.request.title,
            "kind": self.request.kind,
            "toolCall": self.request.tool_call,
            "options": [
                {"optionId": o.option_id, "name": o.name, "kind": o.kind} for o in self.choices
            ],
            "deadline": self.deadline,
            "window": self.window,
        }


class AnswerRejected(ValueError):
    """A human answer that does not fit the question (unknown id or option)."""


class UnknownRequest(AnswerRejected):
    """No open question of this id here for this caller (maybe on another replica)."""


class PermissionDesk:
    """Open questions to humans, across all tasks."""

    def __init__(self, max_wait_seconds: float = 3600.0) -> None:
        self._pending: dict[str, PendingAsk] = {}
        self.max_wait_seconds = max_wait_seconds  # however long someone watches

    async def decide(
        self,
        policy: Policy,
        request: PermissionRequest,
        task_log: TaskLog,
        *,
        owner: str,
        deadline_seconds: float,
        always_allow: bool = False,
    ) -> PermissionAnswer:
        """The option id to answer with (None: `cancelled`), and why. Under "ask" the first
        answer at the desk wins: a person's over HTTP or the task stream, or a remote ACP
        client's (its relay answers here, `remote/relay.py`)."""
        if policy != "ask":
            allow = reasons.policy_allows(policy, request.kind)
            option = choose(request.options, allow=allow, remember=False)
            answer = PermissionAnswer(option, reasons.by_policy(policy, request.kind, allow))
            _record(task_log, request, answer, by="policy", request_id=None)
            return answer
        return await self._ask(request, task_log, owner, deadline_seconds, always_allow)

    async def _ask(
        self,
        request: PermissionRequest,
        task_log: TaskLog,
        owner: str,
        seconds: float,
        always_allow: bool,
    ) -> PermissionAnswer:
        future: asyncio.Future[PermissionAnswer] = asyncio.get_running_loop().create_future()
        now = time.time()
        ask = PendingAsk(
            "perm_" + uuid.uuid4().hex[:16],
            task_log.task_id,
            owner,
            request,
            now + seconds,
            future,
            window=seconds,
            latest=now + max(seconds, self.max_wait_seconds),
            always_allow=always_allow,
            asked=now,
        )
        self._pending[ask.id] = ask
        task_log.emit("permission-request", ask.frame())
        recorded = False

        def ended_first() -> None:  # the turn ends while it is open: cancelled, said first
            nonlocal recorded
            recorded = True
            self._pending.pop(ask.id, None)
            _record(task_log, request, PermissionAnswer(None), by="cancelled", request_id=ask.id)

        task_log.until_end(ask.id, ended_first)
        by: reasons.Decider = "human"
        answer = PermissionAnswer(None)
        try:
            answer = await _until_answered(ask)
        except TimeoutError:
            by = "deadline"
            option = choose(request.options, allow=False, remember=False)
            answer = PermissionAnswer(option, reasons.by_deadline(seconds))
        except asyncio.CancelledError:  # the turn was cancelled: the client answers `cancelled`
            by = "cancelled"
            raise
        finally:
            task_log.ended_open(ask.id)
            self._pending.pop(ask.id, None)
            if not recorded:
                _record(task_log, request, answer, by=by, request_id=ask.id)
        return answer

    def answer(
        self,
        request_id: str,
        option_id: str | None,
        principal: Principal,
        *,
        task_id: str | None = None,
        channel: reasons.Channel = "http",
        reason: str = "",
    ) -> None:
        """A human's answer (None: reject), from the owner of the question's task (and,
        given `task_id`, on that task's stream), through `channel`, with the `reason` they
        gave (a remote ACP client's `_meta`). Raises AnswerRejected when it does not fit."""
        ask = self._pending.get(request_id)
        if ask is None or not owns(principal, ask.owner) or task_id not in (None, ask.task_id):
            raise UnknownRequest(f"no open permission request {request_id!r}")
        if option_id is None:
            option_id = choose(ask.request.options, allow=False, remember=False)
        elif option_id not in {o.option_id for o in ask.choices}:
            raise AnswerRejected(f"{option_id!r} is not one of the options offered")
        if not ask.future.done():
            chosen = next((o for o in ask.request.options if o.option_id == option_id), None)
            said = f" ({reason})" if reason else ""
            why = reasons.by_person(chosen, channel) + said
            ask.future.set_result(PermissionAnswer(option_id, why))

    def present(self, request_id: str, principal: Principal) -> float:
        """The question's owner watches it: its deadline moves to now plus its window
        (never back, never past its latest). The deadline then."""
        ask = self._pending.get(request_id)
        if ask is None or not owns(principal, ask.owner):
            raise UnknownRequest(f"no open permission request {request_id!r}")
        ask.deadline = max(ask.deadline, min(time.time() + ask.window, ask.latest))
        return ask.deadline

    def pending(self, principal: Principal) -> list[PendingAsk]:
        return [a for a in self._pending.values() if owns(principal, a.owner)]

    def open_for(self, task_id: str) -> list[PendingAsk]:
        """The questions of one task still open (for a watcher that comes late)."""
        return [a for a in self._pending.values() if a.task_id == task_id]


async def _until_answered(ask: PendingAsk) -> PermissionAnswer:
    """The answer, or TimeoutError once the deadline passed with nobody present since."""
    while True:
        try:
            return await asyncio.wait_for(asyncio.shield(ask.future), ask.deadline - time.time())
        except TimeoutError:
            if ask.deadline <= time.time():
                raise


def _record(
    task_log: TaskLog,
    request: PermissionRequest,
    answer: PermissionAnswer,
    *,
    by: reasons.Decider,
    request_id: str | None,
) -> None:
    option_id = answer.option_id
    kinds = {o.option_id: o.kind for o in request.options}
    kind = kinds.get(option_id or "", "")
    if task_log.finished.is_set():
        return
    task_log.emit(
        "permission-response",
        _naming_child(request)
        | {
            "requestId": request_id,
            "toolCallId": request.tool_call_id,
            "title": request.title,
            "optionId": option_id,
            "outcome": "selected" if option_id else "cancelled",
            "approved": kind.startswith("allow"),
            "by": by,
            "reason": answer.reason,
        },
    )


def _naming_child(request: PermissionRequest) -> dict[str, object]:
    """A child's question names the child: the session that asks, under the parent's task."""
    return {} if request.root_session_id is None else {"childSessionId": request.session_id}


__all__ = ["AnswerRejected", "PendingAsk", "PermissionDesk", "UnknownRequest"]
