"""What instructions a request carries, and how they reach the agent.

Instructions are a Chat Completions request's leading `system`/`developer` messages, a
Responses request's `instructions` (and its leading system messages): whatever comes
before the first other message. One function, `deliver()`, decides for every face:

- a conversation's first request, to an agent that advertises the unstable
  `sessionCapabilities.systemPrompt`: they go as `systemPrompt` (mode `append`) in the
  `session/new` that makes its session, and are kept with the conversation (its
  session params: a later `session/load` carries them again). Our agent appends them to
  its model's system message (server/client_prompt.py).
- an agent without that capability: the documented fallback, the prompt's text, each
  message labelled `[System]` (transcript.py `render`).
- a later request of the same conversation: the same instructions again (clients resend
  them with every request) are already the session's and are dropped; different or new
  ones are applied from then on as the fallback, in that request's prompt text (an
  agent session's system prompt is set when it is made; it is never swapped under it).

The answer's `X-Instructions` header says which way a request's instructions went:
`system-prompt` or `prompt` (absent when it carried none).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from agentao.gateway.transcript import ChatMessage

if TYPE_CHECKING:
    from agentao.gateway.sessions import Conversations, LiveConversation

INSTRUCTIONS_HEADER = "X-Instructions"
INSTRUCTION_ROLES = frozenset({"system", "developer"})
SYSTEM_PROMPT_KEY = "systemPrompt"  # in a conversation's stored session params
Delivered = Literal["system-prompt", "prompt"]


@dataclass(frozen=True, slots=True)
class Delivery:
    """How one request's instructions reach the agent."""

    messages: list[ChatMessage]  # what its prompt is made of
    system_prompt: dict[str, Any] | None = None  # ACP `systemPrompt` for its new session
    how: Delivered | None = None  # the X-Instructions header; None: it carried none

    def headers(self) -> dict[str, str]:
        return {INSTRUCTIONS_HEADER: self.how} if self.how else {}


def leading_instructions(messages: Sequence[ChatMessage]) -> tuple[str | None, int]:
    """The text of the leading system/developer messages (None: there are none), and how
    many messages they are."""
    count = 0
    while count < len(messages) and messages[count].role in INSTRUCTION_ROLES:
        count += 1
    if count == 0:
        return None, 0
    return "\n\n".join(m.text for m in messages[:count]), count


def deliver(
    messages: list[ChatMessage], *, fresh: bool, takes_system_prompt: bool, held: str | None
) -> Delivery:
    """How `messages` (those going to the agent now) carry their instructions.

    `fresh`: the conversation's session is made for this request; `takes_system_prompt`:
    the agent advertises `sessionCapabilities.systemPrompt`; `held`: the instructions its
    session already has (`held_instructions`)."""
    text, count = leading_instructions(messages)
    rest = messages[count:]
    if text is None:
        return Delivery(messages)
    if not fresh and held is not None and text == held:
        return Delivery(rest, how="system-prompt")  # the session has them already
    if fresh and takes_system_prompt and rest and text.strip():
        return Delivery(rest, system_prompt_param(text), "system-prompt")
    return Delivery(messages, how="prompt")


def instruct(
    conversations: Conversations,
    conv: LiveConversation,
    messages: list[ChatMessage],
    *,
    fresh: bool,
) -> Delivery:
    """`deliver()` for a request of `conv`: a `systemPrompt` is kept in the conversation's
    session params, which its session is made (and reopened) with (sessions.py `_bind`)."""
    delivery = deliver(
        messages,
        fresh=fresh,
        takes_system_prompt=conv.pool.info.system_prompt,
        held=held_instructions(conv.record.session_params),
    )
    params = with_system_prompt(conv.record.session_params, delivery)
    conversations.set_session_params(conv, params)
    return delivery


def system_prompt_param(text: str) -> dict[str, Any]:
    """ACP `systemPrompt` appending `text` to the agent's own instructions."""
    return {"mode": "append", "content": [{"type": "text", "text": text}]}


def held_instructions(session_params: dict[str, Any] | None) -> str | None:
    """The instructions a conversation's session was made with (its stored params)."""
    prompt = (session_params or {}).get(SYSTEM_PROMPT_KEY)
    if not isinstance(prompt, dict):
        return None
    texts = [b.get("text") for b in prompt.get("content") or () if isinstance(b, dict)]
    return "\n\n".join(t for t in texts if isinstance(t, str))


def with_system_prompt(
    session_params: dict[str, Any] | None, delivery: Delivery
) -> dict[str, Any] | None:
    """The conversation's session params with the delivery's `systemPrompt` (if any)."""
    if delivery.system_prompt is None:
        return session_params
    return {**(session_params or {}), SYSTEM_PROMPT_KEY: delivery.system_prompt}


__all__ = [
    "INSTRUCTIONS_HEADER",
    "INSTRUCTION_ROLES",
    "SYSTEM_PROMPT_KEY",
    "Delivered",
    "Delivery",
    "deliver",
    "held_instructions",
    "instruct",
    "leading_instructions",
    "system_prompt_param",
    "with_system_prompt",
]
