"""A far session's held prompts and its child's cancel, on the replica holding the session.

Theory of operation. A remote client on replica B of a session live on replica A (far.py)
drives it through A. Two things A does for its own clients it does for B's the same way:

* **a v2 prompt sent while a turn runs is held**, not refused busy: B's `POST /v1/tasks`
  says `busy: "queue"` and A holds the request (`hold_far_prompt`) in the very line its
  own remote clients' held prompts wait in (held.py: first come first served, within
  `[limits] remote_prompt_queue_depth` and `queue_wait_seconds`, the key's budget read
  again when its turn comes); A answers the request 201 once the prompt's turn has begun,
  and B answers its client `{messageId}` then. A `session/cancel` (from a client of A's,
  or B's passed on) drops it: 409 `prompt_cancelled`, which B answers -32800. A client
  that leaves (B's request is cut) leaves the line.
* **`session/cancel` naming a child** (a subagent's session) is passed on by B for each
  session that connection watches far (`cancel_far_child`), as
  `POST /v1/conversations/{id}/acp {method: "session/cancel"}` with the client's key; A
  (`held_cancel`, the conversation's owner only) cancels that child alone when its agent
  announced it as a child of that conversation's session (children.py), else answers
  -32602 and nothing is cancelled. The same call naming the session itself (B's
  `session/cancel` of the session) drops the held far prompts, then cancels the running
  turn.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from starlette.requests import Request

from agentao.gateway.errors import ApiError
from agentao.gateway.remote.children import cancel_child
from agentao.gateway.remote.far import NowFree
from agentao.gateway.turn_line import unless_left
from agentao.protocol.errors import AcpError, InvalidParams

__all__ = ["CANCEL", "cancel_child_anywhere", "held_cancel", "hold_far_prompt"]

CANCEL = "session/cancel"


class _FarSession(Protocol):
    async def session_call(self, client: Any, method: str, params: Any) -> Any: ...


async def hold_far_prompt(gw: Any, conv: Any, owner: str, request: Request) -> None:
    """`POST /v1/tasks` with `busy: "queue"`: return once the conversation's turn is free
    for this prompt (held.py `wait_far`); PromptDropped when a `session/cancel` drops it;
    the request cancelled when its caller leaves. Nothing suspends between the return and
    the caller's `Conversations.begin`."""
    held = gw.remote.held
    if conv.reserved:
        await unless_left(request, held.wait_far(conv, owner, gw.budgets.check))


async def held_cancel(gw: Any, conv: Any, session_id: Any) -> dict[str, Any]:
    """`session/cancel` another replica passed on for its client (the conversation's
    owner: the route checks it), answered as JSON-RPC's `result` or `error`: the
    session's own id drops the prompts held for other replicas and cancels the running
    turn; a child's id cancels that child alone; any other id is -32602."""
    if session_id == conv.record.session_id:
        gw.remote.held.drop_far(conv.id)  # first: none of them may take the freed turn
        turn = conv.turn
        if turn is not None and not turn.done.is_set():
            turn.cancel()
        return {"result": {}}
    if isinstance(session_id, str) and await cancel_child([conv], session_id):
        return {"result": {}}
    error = InvalidParams(f"Invalid params: {session_id!r} is not a child of this session")
    return {"error": error.to_wire()}


async def cancel_child_anywhere(
    here: Iterable[Any], fars: Iterable[_FarSession], client: Any, child_id: str
) -> bool:
    """`session/cancel` naming `child_id`, a child of one of the sessions `client`
    watches: those live `here` (children.py), then those far, through their holders."""
    if await cancel_child(here, child_id):
        return True
    for far in fars:
        try:
            await far.session_call(client, CANCEL, {"sessionId": child_id})
        except (AcpError, ApiError, NowFree):  # not its child, or its holder is away
            continue
        return True
    return False
