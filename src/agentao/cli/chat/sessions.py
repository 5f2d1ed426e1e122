"""Sessions of a directory: list them, open a new one, reopen an old one with its history.

Reopening asks the agent to replay the history (v1 `session/load`; v2 `session/resume`
with `replayFrom: start`), so a resumed session shows every old prompt and answer, in
order, before the new ones. `ChatError` says in words why it cannot be done.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentao.client.client import Client
from agentao.client.events import Event
from agentao.client.session import Session

LIST_PAGES = 20  # pages of `session/list` read at most: an agent's cursors may never end


class ChatError(Exception):
    """Something the person asked for that this agent or directory cannot give."""


@dataclass(frozen=True, slots=True)
class SessionInfo:
    session_id: str
    title: str
    updated_at: str


async def list_sessions(client: Client, cwd: str) -> list[SessionInfo]:
    """The agent's sessions in `cwd`, the most recently updated first (the first
    `LIST_PAGES` pages)."""
    if not client.supports("list"):
        raise ChatError("this agent does not list its sessions (no session/list)")
    found: list[SessionInfo] = []
    cursor: str | None = None
    for _ in range(LIST_PAGES):
        page = await client.list_sessions(cwd, cursor)
        for item in getattr(page, "sessions", None) or ():
            found.append(_info(item))
        cursor = getattr(page, "next_cursor", None)
        if not cursor:
            break
    return sorted(found, key=lambda s: s.updated_at, reverse=True)


def _info(item: Any) -> SessionInfo:
    title = getattr(item, "title", None)
    updated = getattr(item, "updated_at", None)
    return SessionInfo(item.session_id, title if isinstance(title, str) else "", updated or "")


async def reopen(client: Client, session_id: str, cwd: str) -> tuple[Session, list[Event]]:
    """The session `session_id`, and its replayed history (events in the agent's order)."""
    if client.supports("load"):
        session = await client.load_session(session_id, cwd)
    elif client.protocol_version == 2 and client.supports("resume"):
        session = await client.resume_session(session_id, cwd, replay=True)
    else:
        raise ChatError("this agent cannot reopen a session with its history")
    return session, session.drain()


async def last_session_id(client: Client, cwd: str) -> str:
    sessions = await list_sessions(client, cwd)
    if not sessions:
        raise ChatError(f"no session to continue in {cwd}")
    return sessions[0].session_id


def session_lines(sessions: list[SessionInfo]) -> list[str]:
    """`1. 2026-11-28 02:17  <id>  <title>` lines, numbered from 1."""
    return [
        f"{i}. {s.updated_at[:16].replace('T', ' ')}  {s.session_id}  {s.title}"
        for i, s in enumerate(sessions, 1)
    ]


__all__ = [
    "LIST_PAGES",
    "ChatError",
    "SessionInfo",
    "last_session_id",
    "list_sessions",
    "reopen",
    "session_lines",
]
