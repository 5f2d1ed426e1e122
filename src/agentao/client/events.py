"""What a session's stream yields: updates, permission decisions, the end of a turn.

Immutable msgspec Structs (cheap to create: one per update on the hot path).

`Update.value` is the generated schema struct for the update (e.g.
`schema.AgentMessageChunk`, `schema.ToolCall`, `schema.Plan`), decoded once,
leniently, at the edge; every reader that interprets an update reads it. `Update.wire`
is the update object's bytes exactly as the agent sent them (msgspec.Raw: msgspec's
encoders write them back unchanged), kept only as an opaque pass-through for the relays
that promise it unchanged (the task stream, remote ACP clients, the opt-in `x_acp`
extension): nothing folds or reads it, and no dict is made for it (`Update.raw` makes
one on demand). Tool calls are upserts by id: every `tool_call` / `tool_call_update`
also carries the merged `ToolCallState` after it was applied (typed too; merged in
`view.py`).
"""

from __future__ import annotations

from typing import Any

import msgspec

from agentao.client.content import block_type
from agentao.client.permissions import PermissionRequest
from agentao.protocol import schema
from agentao.protocol.decode import json_of, to_builtins

TEXT_KINDS = frozenset({"agent_message_chunk", "agent_thought_chunk", "user_message_chunk"})


class ToolCallState(msgspec.Struct, frozen=True):
    """A tool call as known so far: every field the agent sent, latest value wins."""

    tool_call_id: str
    call: schema.ToolCall  # merged from every typed update that named this id

    @property
    def title(self) -> str:
        return self.call.title

    @property
    def kind(self) -> str:
        return self.call.kind or "other"

    @property
    def status(self) -> str:
        return self.call.status or "pending"

    @property
    def content(self) -> list[Any]:
        """The typed `ToolCallContent` items (content, diff, terminal)."""
        return self.call.content or []

    @property
    def raw(self) -> dict[str, Any]:
        """The merged call as wire JSON (known fields; made on demand, not held)."""
        return to_builtins(self.call)


class Update(msgspec.Struct, frozen=True):
    """One `session/update`, in the order the agent sent it."""

    session_id: str
    kind: str  # the `sessionUpdate` tag, e.g. "agent_message_chunk" (unknown kinds too)
    value: Any  # the typed schema struct; None when the kind is unknown or undecodable
    wire: msgspec.Raw  # the `update` object's bytes as received: pass them on, never read
    tool_call: ToolCallState | None = None  # merged state, for tool_call / tool_call_update

    @property
    def raw(self) -> dict[str, Any]:
        """The `update` object as received, as JSON values (decoded anew on each read)."""
        return json_of(self.wire)  # type: ignore[no-any-return]

    @property
    def text(self) -> str | None:
        """The text of a message/thought chunk (None for other kinds or non-text content)."""
        if self.kind not in TEXT_KINDS or self.value is None:
            return None
        content = self.value.content
        return content.text if block_type(content) == "text" else None


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
