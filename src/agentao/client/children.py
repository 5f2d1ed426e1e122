"""Child sessions an agent announces, followed back to the session a reader prompts.

An agent that runs subagents (ours, codex-acp, claude-agent-acp) announces each child
with a `subagent_update` on the parent session naming the child's own session id, then
sends the child's updates, and its permission questions, under that id (clients opt in
with `clientCapabilities.subagents` over v1; `ClientPolicy.subagents`). The reader of a
turn reads its own session's stream, so `ChildLinks` remembers each child's parent, and
the client (serving.py) passes a child's updates and answered questions on to its root
session's stream too, in arrival order: a reader sees them where they happened, with the
child's session id on each (the parent's view holds each child's title and state:
view.py `ChildEntry`). A session the client opened itself is never a child: an agent
holding several people's sessions cannot carry one's updates or questions to another. A child's question races its root's cancel, and a child's `fs/*`
works in its root's workspace.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_CHILD_DEPTH", "SUBAGENT_UPDATE", "ChildLinks"]

SUBAGENT_UPDATE = "subagent_update"
MAX_CHILD_DEPTH = 16  # a chain of parents longer than this is an agent's loop: cut there


class ChildLinks:
    """Child session id -> its parent's, as announced on one connection."""

    def __init__(self) -> None:
        self.parents: dict[str, str] = {}
        self.own: set[str] = set()  # sessions the client opened: nobody's children

    def opened(self, session_id: str) -> None:
        """The client opened `session_id` (new, load, resume): its own root, whatever an
        agent announced (one agent process may hold other people's sessions)."""
        self.own.add(session_id)
        self.parents.pop(session_id, None)

    def note(self, session_id: str, kind: str, value: Any) -> None:
        """Remember the child a `subagent_update` on `session_id` names (never itself);
        `value` is v1's typed update, or v2's where v1 has none (the same fields)."""
        child = getattr(value, "session_id", None) if kind == SUBAGENT_UPDATE else None
        if (
            isinstance(child, str)
            and child != session_id
            and child not in self.parents
            and child not in self.own
        ):
            self.parents[child] = session_id

    def root(self, session_id: str) -> str:
        """The session at the top of `session_id`'s parents (itself when it has none)."""
        for _ in range(MAX_CHILD_DEPTH):
            parent = self.parents.get(session_id)
            if parent is None:
                break
            session_id = parent
        return session_id
