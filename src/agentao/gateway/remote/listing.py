"""`session/list` for a remote client: the key's conversations with the agent, from the store.

The gateway answers it itself, in either version (remote ACP advertises `list` whatever
the agent does): newest activity first, at most `[limits] conversations_listed`, each
with the title the conversation shows (a person's, `session/set_title`'s included).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from agentao.gateway.auth import Principal
from agentao.gateway.sessions import Conversations


async def session_list(
    conversations: Conversations, principal: Principal, agent: str
) -> dict[str, Any]:
    """The `session/list` result for `principal`'s conversations with `agent`."""
    limit = conversations.limits.conversations_listed
    records = await conversations.store.list_conversations(principal.name, limit)
    sessions = [
        {
            "sessionId": r.session_id,
            "cwd": (r.session_params or {}).get("cwd") or conversations.pool(r.agent).spec.cwd,
            "title": r.title,
            "updatedAt": _iso(r.updated_at),
        }
        for r in records
        if r.agent == agent and r.session_id is not None
    ]
    return {"sessions": sessions}


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat().replace("+00:00", "Z")


__all__ = ["session_list"]
