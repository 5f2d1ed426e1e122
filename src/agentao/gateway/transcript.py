"""Chat Completions transcripts: which messages are new, and how to recognise a conversation.

Chat clients resend the whole transcript every time. A conversation stores a
hash of the transcript as of its last answer; a request whose messages start
with that transcript continues it, and only the messages after it go to the
agent. Hashes are chained (h_i = sha256(h_{i-1} + message_i)), so every
prefix's hash costs one step; only prefixes that end with an assistant message
can be a stored state, and the longest one wins.

Bounded work per request: `hash_transcript()` walks the messages once and keeps
the hashes of only the last `depth` assistant positions (`Limits.
transcript_match_depth`), which the store looks up in one indexed query; the
digest of the whole request is kept too, so the state after our answer costs one
more step (`answered()`), not another walk. A long transcript is hashed on a
worker thread (`OFFLOAD_MESSAGES`), never on the event loop.

Messages are compared by role and text, whitespace-trimmed: clients differ in
how they echo an answer back (content string vs parts, trailing newline).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

_SEED_DIGEST = hashlib.sha256(b"agentao-chat-v1").digest()
# Above this many messages a request is parsed and hashed on a worker thread: a few
# hash in microseconds, a hundred thousand take a fraction of a second of pure Python.
OFFLOAD_MESSAGES = 2_000


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of a Chat Completions request, reduced to what the agent can use."""

    role: str  # system | developer | user | assistant | tool
    text: str
    images: tuple[tuple[str, str], ...] = ()  # (mime type, base64 data)


def chain(messages: Sequence[ChatMessage]) -> list[str]:
    """The hash of every prefix: result[i] covers messages[: i + 1]."""
    digest, out = _SEED_DIGEST, []
    for m in messages:
        digest = _step(digest, m)
        out.append(digest.hex())
    return out


@dataclass(frozen=True, slots=True)
class HashedTranscript:
    """A request's messages, hashed once."""

    messages: list[ChatMessage]
    candidates: list[
        tuple[str, int]
    ]  # (hash, length): prefixes ending with an answer, longest first
    digest: bytes  # the hash of all of `messages`

    def answered(self, answer: str) -> str:
        """The hash a conversation stores after answering these messages with `answer`."""
        return _step(self.digest, ChatMessage("assistant", answer)).hex()


def hash_transcript(messages: list[ChatMessage], depth: int) -> HashedTranscript:
    """Hash `messages` in one walk, keeping the prefixes that end with one of the last
    `depth` assistant messages as candidates."""
    answers = [i for i, m in enumerate(messages) if m.role == "assistant"][-depth:]
    wanted, found = set(answers), []
    digest = _SEED_DIGEST
    for i, m in enumerate(messages):
        digest = _step(digest, m)
        if i in wanted:
            found.append((digest.hex(), i + 1))
    return HashedTranscript(messages, found[::-1], digest)


def _step(digest: bytes, m: ChatMessage) -> bytes:
    # sha256(a).update(b) == sha256(a + b): one call per message, the same hashes as ever.
    parts = [digest, m.role.encode(), b"\x00", m.text.strip().encode()]
    for mime, data in m.images:
        parts.append(f"\x00{mime}\x00".encode())
        parts.append(hashlib.sha256(data.encode()).digest())
    return hashlib.sha256(b"".join(parts)).digest()


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
        label = {
            "system": "System",
            "developer": "System",
            "assistant": "Assistant",
            "tool": "Tool result",
        }.get(m.role)
        parts.append(f"[{label}]\n{m.text}" if label else m.text)
    return "\n\n".join(parts)


__all__ = [
    "OFFLOAD_MESSAGES",
    "ChatMessage",
    "HashedTranscript",
    "chain",
    "hash_transcript",
    "render",
    "tail_after_last_answer",
]
