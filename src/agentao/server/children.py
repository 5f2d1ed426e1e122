"""A session's children (agent/subagents.py) on the wire, for clients that show them.

A client that advertised `clientCapabilities.subagents` (v1; every v2 client) sees each
child as a child session: a `subagent_update` on the parent session announces it (its
session id, its title, `running`; each names the parent's tool call the child runs in,
`_meta["agentao.cn/parentToolCallId"]`, which the wire has no field for), its own events go out as `session/update`s under its
id, its state changes (`requires_action` before it asks, `running` after, `idle` with a
stop reason at its end) as more `subagent_update`s on the parent. A child left open when
its parent's tool call ends (the parent's turn was cancelled) is closed `idle` /
`cancelled` first. Its permission question is a `session/request_permission` under its
own id (`child_interaction`). The announcement advertises `capabilities.cancel`: a
`session/cancel` naming the child ends it alone (server/agent.py, agent/child_runs.py),
answered `idle`/`cancelled`, and the parent's turn goes on.

Every other client sees the parent's tool call alone, with the child's steps as its
progress (the tool reports them); its questions come under the parent's session, about
the parent's call, titled with the child's name.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any, Protocol

from agentao.agent import events as ev
from agentao.protocol import meta, schema

__all__ = ["ChildSessions", "child_interaction", "subagent_update"]

SUBAGENT_UPDATE = "subagent_update"
CANCELLABLE = schema.SubagentSessionCapabilities(cancel=schema.SessionCancelCapabilities())


class _Mapper(Protocol):
    def __call__(self, session_id: str, event: ev.TurnEvent) -> list[Any]: ...


class ChildSessions:
    """The children announced on one connection and not yet idle, per parent tool call."""

    def __init__(self) -> None:
        self._open: dict[tuple[str, str], dict[str, str]] = {}  # (parent, call) -> id: title

    def route(self, parent_id: str, event: ev.TurnEvent, mapper: _Mapper) -> list[tuple[str, Any]]:
        """(session id, update) pairs `event` means for children, in order: a ChildUpdate's
        state and event (`mapper(child id, event)`: the version's updates for it); the
        closing of children left open by a parent's finished call."""
        if isinstance(event, ev.ToolCallFinished):
            left = self._open.pop((parent_id, event.call_id), {})
            stop = "cancelled" if event.status != "completed" else "end_turn"
            return [
                (parent_id, subagent_update(child, None, "idle", stop, event.call_id))
                for child in left
            ]
        if not isinstance(event, ev.ChildUpdate):
            return []
        out: list[tuple[str, Any]] = []
        children = self._open.setdefault((parent_id, event.call_id), {})
        title = None if event.child_id in children else event.title
        if event.state is not None or title is not None:
            state = event.state or "running"
            news = subagent_update(event.child_id, title, state, event.stop_reason, event.call_id)
            out.append((parent_id, news))
            children[event.child_id] = event.title
            if state == "idle":
                children.pop(event.child_id, None)
        if event.event is not None:  # a grandchild's news is the child's to route
            out += self.route(event.child_id, event.event, mapper)
            out += [(event.child_id, update) for update in mapper(event.child_id, event.event)]
        return out


def subagent_update(
    child_id: str, title: str | None, state: str, stop: str | None, parent_call: str
) -> schema.SubagentUpdateSessionUpdate:
    """A child's announcement (with its `title`) or state change, for the parent session,
    naming the parent's tool call it runs in (`_meta`: the schema has no field for it)."""
    snapshot: schema.StateUpdate
    if state == "idle":
        snapshot = schema.IdleStateUpdateVariant(stop_reason=stop)
    elif state == "requires_action":
        snapshot = schema.RequiresAction()
    else:
        snapshot = schema.RunningStateUpdateVariant()
    # The announcement offers what the child serves: `session/cancel` on its id, alone.
    offered = CANCELLABLE if title is not None else None
    return schema.SubagentUpdateSessionUpdate(
        session_id=child_id,
        title=title,
        state=snapshot,
        capabilities=offered,
        meta={meta.PARENT_TOOL_CALL: parent_call},
    )


def child_interaction(parent: Any, child_id: str, title: str, parent_call: str, shown: bool) -> Any:
    """The parent's interaction, asking for a child: under the child's session where the
    client shows children (`shown`), else under the parent's, about the parent's call and
    naming the child. Both share the parent's pending questions, so cancelling the parent
    withdraws the child's too."""
    child = copy.copy(parent)  # the same peer and `pending` set
    if shown:
        child.session_id = child_id
        return child
    ask_parent, question_parent = parent.permission_params, parent.ask_user_request

    def permission_params(call: ev.ToolCallStarted) -> Any:
        named = replace(call, call_id=parent_call, title=f"Subagent {title}: {call.title}")
        return ask_parent(named)

    def ask_user_request(question: str) -> tuple[str, Any]:
        return question_parent(f"(subagent {title}) {question}")

    child.permission_params = permission_params
    child.ask_user_request = ask_user_request
    return child
