"""`session/set_title` (ACP v2 and v1, unstable): a title the person chose, stored with the session.

The title is normalized before it is kept: every run of whitespace (newlines, tabs) becomes
one space and control and format characters (an escape sequence, a bidi override) are
dropped, since lists and tabs show it as one line; it is cut to the store's `title_chars`.
Empty after that is -32602. The chosen title lives in two places: the store's title
column (what `session/list` shows; a turn's commit keeps a title it finds) and the
session's own state (`AgentSession.meta["title"]`), so the `session_info_update` after
each later turn says the chosen title, not the first prompt. A session need not be live
to be retitled: a stored one is loaded, marked and saved. A live one tells its listeners
with a `session_info_update`.
"""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from agentao.protocol.errors import InvalidParams, SessionNotFound
from agentao.server.persistence import CHOSEN_TITLE, title_of
from agentao.server.updates import session_info_update

if TYPE_CHECKING:
    from agentao.server.live import LiveSession


def normalized(title: str, limit: int) -> str:
    """`title` as one line without control characters, at most `limit` characters."""
    line = " ".join(title.split())
    kept = "".join(ch for ch in line if not unicodedata.category(ch).startswith("C"))
    kept = kept.strip()[:limit].strip()
    if not kept:
        raise InvalidParams(
            "Invalid params: title is empty (after whitespace and control characters)",
            {"field": "title"},
        )
    return kept


def info_update(live: LiveSession) -> Any:
    """The session's title and last activity, as a `session_info_update`."""
    updated = datetime.fromtimestamp(live.agent.updated_at, UTC).isoformat()
    return session_info_update(title_of(live.agent), updated.replace("+00:00", "Z"))


async def set_title(server: Any, session_id: str, title: str) -> str:
    """Store a person's title for `session_id` (live or stored; -32002 if neither) and
    tell a live session's listeners; the title as stored."""
    archive = server.archive
    kept = normalized(title, server.settings.store.title_chars)
    live = server.sessions.find(session_id)
    if live is not None:
        live.agent.meta[CHOSEN_TITLE] = kept
        await live.save_state()
    else:
        loaded = await archive.load(session_id)
        if loaded is None:
            raise SessionNotFound(session_id)
        agent, _grants = loaded  # its meta keeps the stored grants as they were
        agent.meta[CHOSEN_TITLE] = kept
        await archive.save_agent_state(agent)
    if not await archive.set_title(session_id, kept):
        raise SessionNotFound(session_id)  # deleted meanwhile
    if live is not None:
        await live.send(info_update(live))
    return kept


__all__ = ["info_update", "normalized", "set_title"]
