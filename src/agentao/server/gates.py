"""Updates the schema lets an agent send only to clients that advertised a capability.

The stable schema says of `notice`: "Agents MUST only send this update when the Client
advertised the `session.notices` Client capability", and the same of both compaction
updates for `session.compaction`. Every update leaves through one door (`AcpAgent._send`),
which asks the client's `UpdateGate`: an update whose capability the client did not
advertise is replaced by its fallback, or dropped when it has none. So a sender written
tomorrow cannot forget the rule. tests/server/test_gates.py reads the schema and fails
when it gates an update kind this table does not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from agentao.protocol import schema
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


# What a client without the capability gets instead (absent: nothing).
FALLBACKS: Final[Mapping[str, Callable[[Update], Update]]] = {"notice": _notice_as_thought}


class UpdateGate:
    """One client's gate: which gated update kinds it advertised."""

    def __init__(self, capabilities: Any = None) -> None:
        advertised = to_builtins(capabilities) if capabilities is not None else {}
        self.allowed = frozenset(k for k, path in GATES.items() if _has(advertised, path))

    def __call__(self, update: Update) -> Update | None:
        """`update` itself, its fallback, or None (not to be sent to this client)."""
        kind = kind_of(update)
        if kind not in GATES or kind in self.allowed:
            return update
        fallback = FALLBACKS.get(kind)
        return None if fallback is None else fallback(update)


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
