"""A frame of a conversation's log as a remote client's `session/update` (clients.py):
made when a reference to the frame is sent, and again when a stream reads the reference
back from the store."""

from __future__ import annotations

from typing import Any

import msgspec

from agentao.client.content import prompt_text
from agentao.gateway.remote.children import child_of
from agentao.store.gateway_records import TaskEvent
from agentao.store.remote import RemoteMessage

_encode = msgspec.json.Encoder().encode


def session_update_body(session_id: str, event: TaskEvent) -> bytes:
    """The `session/update` a frame of the log is, for session `session_id` (a child's
    frame: for the child): a `task-running` frame's update, or a `task-started` frame's
    prompt (a replay's)."""
    params = {"sessionId": child_of(event) or session_id, "update": frame_update(event)}
    return _encode({"jsonrpc": "2.0", "method": "session/update", "params": params})


def frame_update(event: TaskEvent) -> Any:
    """The ACP update a `task-running` (or `session-update`) frame carries, or the
    `user_message_chunk` a `task-started` frame's prompt replays as (agents do not echo
    prompts)."""
    if event.type != "task-started":
        return event.payload["update"]
    prompt = event.payload.get("prompt")
    text = prompt_text(prompt) if isinstance(prompt, list) else str(prompt or "")
    return {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": text}}


def rebuilt(
    message: RemoteMessage, frames: dict[tuple[str, int], TaskEvent], sessions: dict[str, str]
) -> RemoteMessage | None:
    """`message` as a stream sends it: a reference to a frame of the log rebuilt from
    `frames` (None when the log no longer holds it, or its session is not known); any
    other message as stored."""
    if message.log_conversation is None:
        return message
    event = frames.get((message.log_conversation, message.log_seq))
    session_id = message.scope or sessions.get(message.log_conversation)
    if event is None or session_id is None:
        return None
    body = session_update_body(session_id, event)
    return RemoteMessage(
        message.connection_id,
        message.seq,
        message.scope,
        body,
        message.log_conversation,
        message.log_seq,
    )


__all__ = ["frame_update", "rebuilt", "session_update_body"]
