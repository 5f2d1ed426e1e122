"""Chat Completions transcripts: which messages are new, and how to recognise a conversation.

Chat clients resend the whole transcript every time. A conversation stores a
hash of the transcript as of its last answer; a request whose messages start
with that transcript continues it, and only the messages after it go to the
agent. Hashes are chained (h_i = sha256(h_{i-1} + message_i)), so every
prefix's hash costs one step; only prefixes that end with an assistant message
can be a stored state, and the longest one is tried first.

Messages are compared by role and text, whitespace-trimmed: clients differ in
how they echo an answer back (content string vs parts, trailing newline).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

_SEED = b"agentao-chat-v1"


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of a Chat Completions request, reduced to what the agent can use."""

    role: str  # system | developer | user | assistant | tool
    text: str
    images: tuple[tuple[str, str], ...] = ()  # (mime type, base64 data)


def chain(messages: Sequence[ChatMessage]) -> list[str]:
    """The hash of every prefix: result[i] covers messages[: i + 1]."""
    digest = hashlib.sha256(_SEED).digest()
    out = []
    for m in messages:
        h = hashlib.sha256(digest)
        h.update(m.role.encode())
        h.update(b"\x00")
        h.update(m.text.strip().encode())
        for mime, data in m.images:
            h.update(f"\x00{mime}\x00".encode())
            h.update(hashlib.sha256(data.encode()).digest())
        digest = h.digest()
        out.append(digest.hex())
    return out


def candidate_prefixes(messages: Sequence[ChatMessage]) -> list[tuple[str, int]]:
    """(hash, length) of each prefix that ends with an assistant message, longest first."""
    hashes = chain(messages)
    return [
        (hashes[i], i + 1)
        for i in range(len(messages) - 1, -1, -1)
        if messages[i].role == "assistant"
    ]


def transcript_hash(messages: Sequence[ChatMessage], answer: str) -> str:
    """The hash a conversation stores after answering `messages` with `answer`."""
    return chain([*messages, ChatMessage("assistant", answer)])[-1]


def tail_after_last_answer(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The messages after the last assistant message (what an explicit session key sends)."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "assistant":
            return list(messages[i + 1 :])
    return list(messages)


def render(messages: Sequence[ChatMessage], *, history: bool) -> str:
    """The prompt text for the agent. With `history`, earlier turns are labelled, so an
    agent that starts fresh still sees the conversation the client sent."""
    if not history and len(messages) == 1 and messages[0].role == "user":
        return messages[0].text
    parts = []
    for m in messages:
        label = {"system": "System", "developer": "System", "assistant": "Assistant"}.get(m.role)
        parts.append(f"[{label}]\n{m.text}" if label else m.text)
    return "\n\n".join(parts)


__all__ = [
    "ChatMessage",
    "candidate_prefixes",
    "chain",
    "render",
    "tail_after_last_answer",
    "transcript_hash",
]
