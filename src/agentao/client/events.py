"""What a session's stream yields: updates, permission decisions, the end of a turn.

Immutable msgspec Structs (cheap to create: one per update on the hot path).

`Update.value` is the generated schema struct for the update (e.g.
`schema.AgentMessageChunk`, `schema.ToolCall`, `schema.Plan`), decoded
leniently; `Update.raw` is the update object exactly as the agent sent it, so
unknown kinds and fields stay available. Tool calls are upserts by id: every
`tool_call` / `tool_call_update` also carries the merged `ToolCallState`
after it was applied.
"""

from __future__ import annotations

from typing import Any

import msgspec

from agentao.client.permissions import PermissionRequest

TEXT_KINDS = frozenset({"agent_message_chunk", "agent_thought_chunk", "user_message_chunk"})


class ToolCallState(msgspec.Struct, frozen=True):
    """A tool call as known so far: every field the agent sent, latest value wins."""

    tool_call_id: str
    raw: dict[str, Any]  # merged wire fields (camelCase), `sessionUpdate` removed
    call: Any = None  # schema.ToolCall decoded from `raw` (None if undecodable)

    @property
    def title(self) -> str:
        title = self.raw.get("title")
        return title if isinstance(title, str) else ""

    @property
    def kind(self) -> str:
        kind = self.raw.get("kind")
        return kind if isinstance(kind, str) else "other"

    @property
    def status(self) -> str:
        status = self.raw.get("status")
        return status if isinstance(status, str) else "pending"

    @property
    def content(self) -> list[Any]:
        content = self.raw.get("content")
        return content if isinstance(content, list) else []


class Update(msgspec.Struct, frozen=True):
    """One `session/update`, in the order the agent sent it."""

    session_id: str
    kind: str  # the `sessionUpdate` tag, e.g. "agent_message_chunk" (unknown kinds too)
    value: Any  # the typed schema struct; None when the kind is unknown or undecodable
    raw: dict[str, Any]  # the `update` object as received
    tool_call: ToolCallState | None = None  # merged state, for tool_call / tool_call_update

    @property
    def text(self) -> str | None:
        """The text of a message/thought chunk (None for other kinds or non-text content)."""
        if self.kind not in TEXT_KINDS:
            return None
        content = self.raw.get("content")
        if isinstance(content, dict) and content.get("type") == "text":
            text = content.get("text")
            return text if isinstance(text, str) else None
        return None


class PermissionDecision(msgspec.Struct, frozen=True):
    """How the client answered a `session/request_permission` (in stream order)."""

    request: PermissionRequest
    option_id: str | None  # None: answered `cancelled`
    approved: bool
    cancelled_by_turn: bool = False  # True when the turn's cancel answered it
    reason: str = ""  # why, in words (sent to the agent too): policy, no terminal, a person

    @property
    def session_id(self) -> str:
        return self.request.session_id


class TurnEnd(msgspec.Struct, frozen=True):
    """The last item of a turn: why the agent stopped."""

    session_id: str
    stop_reason: str  # end_turn | max_tokens | max_turn_requests | refusal | cancelled | ...
    response: Any = None  # schema.PromptResponse (stopReason, _meta) when the agent answered
    raw: dict[str, Any] = {}
    forced: bool = False  # True: the agent never answered the cancel; we ended the turn
    # schema.Usage: the turn's token usage, if the agent reported it (agentao under
    # `_meta["agentao.cn/usage"]`, other agents at the unstable schema's `usage`); else None
    usage: Any = None


Event = Update | PermissionDecision | TurnEnd

__all__ = ["Event", "PermissionDecision", "ToolCallState", "TurnEnd", "Update"]
