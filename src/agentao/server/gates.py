"""Updates the schema lets an agent send only to clients that advertised a capability.

The stable schema says of `notice`: "Agents MUST only send this update when the Client
advertised the `session.notices` Client capability", and the same of both compaction
updates for `session.compaction`. Every update leaves through one door (`Outbox.send`),
which asks the client's `UpdateGate`: an update whose capability the client did not
advertise is replaced by its fallback, or dropped when it has none. So a sender written
tomorrow cannot forget the rule. tests/server/test_gates.py reads the schema and fails
when it gates an update kind this table does not.

A fallback is itself gated, once: a finished compaction falls back to a notice, and a
client without `session.notices` either gets nothing (never a thought: a compaction is
reported as a compaction, a notice, or not at all). Fallbacks stand in for live events
only: a replayed update (`session/load`) the client did not advertise is dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from agentao.protocol import meta, schema
from agentao.protocol.decode import to_builtins

Update = Any  # one of schema.SessionUpdate's variants (or its wire dict)

# `sessionUpdate` kind -> the client capability (dotted wire path) it needs
GATES: Final[Mapping[str, str]] = {
    "notice": "session.notices",
    "compaction_update": "session.compaction",
    "compaction_summary_chunk": "session.compaction",
}


def _notice_as_thought(update: Update) -> Update:
    # The schema's own advice: surface the information another way when it still matters.
    detail = f": {update.description}" if getattr(update, "description", None) else ""
    text = f"[notice] {update.title}{detail}\n"
    return schema.AgentThoughtChunk(content=schema.TextContentBlock(text=text))


def _compaction_as_notice(update: Update) -> Update | None:
    """A finished compaction, told as a notice; nothing while it runs."""
    status = _field(update, "status", "status")
    if status == "in_progress":
        return None
    facts = (_field(update, "meta", "_meta") or {}).get(meta.COMPACTION) or {}
    title = {
        "completed": "Context compacted",
        "cancelled": "Context compaction cancelled",
    }.get(status, f"Context compaction {status}")
    detail = facts.get("detail") or _field(update, "error", "error") or None
    return schema.NoticeSessionUpdate(severity="info", title=title, description=detail)


# What a client without the capability gets instead (absent: nothing).
FALLBACKS: Final[Mapping[str, Callable[[Update], Update | None]]] = {
    "notice": _notice_as_thought,
    "compaction_update": _compaction_as_notice,
}


class UpdateGate:
    """One client's gate: which gated update kinds it advertised."""

    def __init__(self, capabilities: Any = None) -> None:
        advertised = to_builtins(capabilities) if capabilities is not None else {}
        self.allowed = frozenset(k for k, path in GATES.items() if _has(advertised, path))
        # Child sessions (server/children.py): the schema's SubagentCapabilities says the
        # client "must advertise this capability before the agent sends subagent updates".
        self.subagents = _has(advertised, "subagents")

    def __call__(self, update: Update, live: bool = True) -> Update | None:
        """`update` itself, its fallback, or None (not to be sent to this client)."""
        if self.passes(update):
            return update
        fallback = FALLBACKS.get(kind_of(update)) if live else None
        substitute = fallback(update) if fallback is not None else None
        return substitute if substitute is not None and self.passes(substitute) else None

    def passes(self, update: Update) -> bool:
        """Whether this client may receive `update` as it is."""
        kind = kind_of(update)
        return kind not in GATES or kind in self.allowed


def _field(update: Update, attr: str, wire: str) -> Any:
    return update.get(wire) if isinstance(update, dict) else getattr(update, attr, None)


def kind_of(update: Update) -> str | None:
    """The `sessionUpdate` tag of a struct variant or of a wire dict."""
    if isinstance(update, dict):
        return update.get("sessionUpdate")
    config = getattr(type(update), "__struct_config__", None)
    return getattr(config, "tag", None)


def _has(advertised: Any, path: str) -> bool:
    """Present and not null: `{}` advertises a capability, absence or null does not."""
    node = advertised
    for step in path.split("."):
        if not isinstance(node, dict) or node.get(step) is None:
            return False
        node = node[step]
    return True


__all__ = ["FALLBACKS", "GATES", "UpdateGate", "kind_of"]
