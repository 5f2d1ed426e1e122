"""A conversation's children (subagents), for the remote ACP clients that take them.

Theory of operation. The gateway's own client opts in to child sessions (pool.py), so a
child's updates and questions are frames of its parent's turn naming it
(`childSessionId`, gateway/turns.py), and the parent's `subagent_update`s announce it.
A remote client that takes children -- a v1 client that sent
`clientCapabilities.subagents`, and every v2 client, where they are native -- gets them
as the spec has it: the announcements on the parent, the child's updates as
`session/update`s under the child's session id, its permission question as a
`session/request_permission` under that id (answered by that client: the conversation's
owner, as the parent's are), on the parent session's stream (a child has none of its
own). A client that does not take them keeps the parent's view: its `task` call with
progress, never a child's update nor its announcement (else a child's words would read
as the parent's), and a child's question under the parent's session.

`session/cancel` naming a child of a session the connection watches cancels that child
alone (`cancel_child`): the gateway's client checks that the agent announced it as a
child of that very session (client/children.py), so a connection can cancel only the
children of the sessions it may watch.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Protocol

import msgspec

from agentao.client import Session
from agentao.client.children import SUBAGENT_UPDATE
from agentao.client.errors import ClientError
from agentao.protocol.decode import json_of
from agentao.store.gateway_records import TaskEvent

__all__ = [
    "CHILD",
    "cancel_child",
    "child_of",
    "hidden_from",
    "of_a_child",
    "shows_children",
]

log = logging.getLogger("agentao.gateway")
CHILD = "childSessionId"  # a frame's: the child session whose update or question it is
CAPABILITY = "subagents"  # clientCapabilities.subagents: a v1 client takes children
_NAMES_CHILD = SUBAGENT_UPDATE.encode()


class _Client(Protocol):
    bridge: Any

    def supports(self, path: str) -> bool: ...


class _Watched(Protocol):
    @property
    def session(self) -> Session | None: ...


def shows_children(client: _Client) -> bool:
    """Whether `client` takes child sessions: every v2 client, a v1 client that opted in."""
    return client.bridge is not None or client.supports(CAPABILITY)


def child_of(event: TaskEvent) -> str | None:
    """The child session a frame is of (its update or its question), if any."""
    child = event.payload.get(CHILD)
    return child if isinstance(child, str) and child else None


def of_a_child(event: TaskEvent) -> bool:
    """A child's update, or the parent's news of a child."""
    if child_of(event) is not None:
        return True
    update = event.payload.get("update")
    if type(update) is msgspec.Raw and _NAMES_CHILD not in bytes(update):
        return False  # a frame as received whose bytes never name the kind: no read
    update = json_of(update)
    return isinstance(update, dict) and update.get("sessionUpdate") == SUBAGENT_UPDATE


def hidden_from(client: _Client, event: TaskEvent) -> bool:
    """Whether `client` is not sent this frame: one of a child's, to a client that takes
    no children (it sees the parent's `task` call with its progress instead)."""
    return not shows_children(client) and of_a_child(event)


async def cancel_child(watched: Iterable[_Watched], child_id: str) -> bool:
    """Cancel `child_id` alone if it is a child of one of the `watched` sessions (those of
    the connection that asks); False when it is none of theirs."""
    for conv in watched:
        session = conv.session
        if session is None:
            continue
        try:
            await session.cancel_child(child_id)
        except ClientError:
            continue  # not a child of this one
        return True
    log.info("session/cancel for %s: no child of a session this connection watches", child_id)
    return False
