"""The human behind the client: `session/request_permission` and `_agentao.cn/ask_user`.

Theory of operation. Each question to the client runs as its own task, kept in
`pending` until answered. `cancel_pending()` (from `session/cancel`) cancels
those tasks: the endpoint then sends `$/cancel_request` for each, and the caller
gets "cancelled" (permission) or the "(user unavailable)" sentinel (ask_user) at
once, whether or not the client ever answers (seed C.5). The turn task itself is
cancelled too, so a cancelled permission never lets a tool run.

The protocol version's shapes are hooks (`permission_params`, `ask_user_request`,
`ask_user_answer`, `waiting`): v1's here, v2's in server/v2.py `V2Interaction`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from agentao.agent.cancellation import turn_cancelling
from agentao.agent.events import ToolCallStarted
from agentao.agent.tools.base import ASK_USER_UNAVAILABLE, PermissionOutcome, PermissionReply
from agentao.protocol import meta, schema
from agentao.protocol.errors import ConnectionClosed, PeerError
from agentao.server.updates import tool_call_update_for_permission

log = logging.getLogger("agentao.server")

ASK_USER_METHOD = "_agentao.cn/ask_user"
MAX_REASON_CHARS = 500  # a client's reason is shown to the model: bounded
# optionId -> (name shown, ACP kind); the optionId is also our outcome.
PERMISSION_OPTIONS: tuple[tuple[PermissionOutcome, str, str], ...] = (
    ("allow", "Allow", "allow_once"),
    ("allow_always", "Always allow", "allow_always"),
    ("reject", "Reject", "reject_once"),
)


class Requester(Protocol):
    async def request(self, method: str, params: Any = None, *, result_type: Any = ...) -> Any: ...


class ClientInteraction:
    """`Interaction` for one session, answered by the ACP client."""

    def __init__(self, peer: Requester, session_id: str) -> None:
        self.peer = peer
        self.session_id = session_id
        self.pending: set[asyncio.Task[Any]] = set()
        self.children_shown = False  # the client shows child sessions (server/children.py)

    def for_child(self, child_id: str, title: str, parent_call: str) -> ClientInteraction:
        """This interaction asking for a child agent (agent/subagents.py)."""
        from agentao.server.children import child_interaction

        return child_interaction(self, child_id, title, parent_call, self.children_shown)  # type: ignore[no-any-return]

    async def request_permission(self, call: ToolCallStarted) -> PermissionReply:
        params = self.permission_params(call)
        try:
            result = await self._ask("session/request_permission", params)
        except asyncio.CancelledError:
            raise
        except (_Unanswered, ConnectionClosed):
            return PermissionReply("cancelled")
        return PermissionReply(_permission_outcome(result), _reason(result))

    async def ask_user(self, question: str) -> str:
        method, params = self.ask_user_request(question)
        try:
            result = await self._ask(method, params, result_type=None)
        except asyncio.CancelledError:
            raise
        except (_Unanswered, ConnectionClosed):
            return ASK_USER_UNAVAILABLE
        return self.ask_user_answer(result)

    def ask_user_request(self, question: str) -> tuple[str, Any]:
        """The request that puts `question` to the person (v2 may use an elicitation)."""
        return ASK_USER_METHOD, {"sessionId": self.session_id, "question": question}

    def ask_user_answer(self, result: Any) -> str:
        return ask_user_answer(result)

    def permission_params(self, call: ToolCallStarted) -> Any:
        """The `session/request_permission` params (v1's shape; server/v2.py writes v2's)."""
        return schema.RequestPermissionRequest(
            session_id=self.session_id,
            tool_call=tool_call_update_for_permission(call),
            options=[
                schema.PermissionOption(option_id=oid, name=name, kind=kind)
                for oid, name, kind in PERMISSION_OPTIONS
            ],
        )

    async def waiting(self, on_person: bool) -> None:
        """Told when a question starts waiting on the person (True) and once it is answered
        (False); v1 says nothing of it, v2 reports `requires_action` then `running`."""

    def cancel_pending(self) -> int:
        """Cancel every question still waiting for the client; how many there were."""
        tasks = [t for t in self.pending if not t.done()]
        for task in tasks:
            task.cancel()
        return len(tasks)

    async def _ask(self, method: str, params: Any, result_type: Any = ...) -> Any:
        await self.waiting(True)
        coro = self.peer.request(method, params, result_type=result_type)
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        self.pending.add(task)
        try:
            answer = await task  # cancelling us cancels it: $/cancel_request goes out
            await self.waiting(False)
            return answer
        except asyncio.CancelledError:
            if turn_cancelling():
                raise  # the turn is being cancelled
            raise _Unanswered("cancelled") from None  # cancel_pending(): the question only
        except PeerError as exc:
            log.info("client answered %s with error %s", method, exc.code)
            await self.waiting(False)
            raise _Unanswered("error") from exc
        finally:
            self.pending.discard(task)


class _Unanswered(Exception):
    """The client gave no usable answer (cancelled, or an error reply)."""


def _permission_outcome(result: Any) -> PermissionOutcome:
    outcome = getattr(result, "outcome", None)
    option_id = getattr(outcome, "option_id", None)
    if option_id in ("allow", "allow_always", "reject"):
        return option_id
    if option_id is not None:
        log.warning("client chose an unknown permission option %r: treated as reject", option_id)
        return "reject"
    return "cancelled"


def _reason(result: Any) -> str:
    """The client's own words for its answer (`_meta`, see protocol/meta.py), if any."""
    extra = getattr(result, "meta", None)
    reason = extra.get(meta.REASON) if isinstance(extra, dict) else None
    return reason.strip()[:MAX_REASON_CHARS] if isinstance(reason, str) else ""


def ask_user_answer(result: Any) -> str:
    """`{answer}` (seed C.11) or `{outcome: "answered", text}`; anything else: unavailable."""
    if isinstance(result, dict):
        answer = result.get("answer")
        if isinstance(answer, str):
            return answer
        if result.get("outcome") == "answered" and isinstance(result.get("text"), str):
            return result["text"]
    return ASK_USER_UNAVAILABLE


__all__ = ["ASK_USER_METHOD", "PERMISSION_OPTIONS", "ClientInteraction", "ask_user_answer"]
