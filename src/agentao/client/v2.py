"""ACP v2 on the client side: the handshake's shape, and v2 updates read as the v1 events.

Theory of operation. The client offers version 2 in `initialize` (`client.py` decides the
fallback to v1). Once v2 is settled, the endpoint serves the agent's calls with `V2Side`
(`Versioned.for_version(2)`), and everything v2 changes is translated here, once, at the
edge, so that sessions, turns, the view and every reader see the same typed events whatever
was negotiated:

* a v2 `session/update` becomes the v1 update it means (`to_v1`): a `tool_call_update` for
  an id never seen is a v1 `tool_call` (then updates, merged by id as before; a call
  stopped alone, v2's `cancelled`, ends `failed`, v1's word for it), a
  `tool_call_content_chunk` a `tool_call_update` with the call's content so far plus the
  chunk, a `plan_update` of items a v1 `plan`, a whole-message upsert (`agent_message`,
  `user_message`, `agent_thought`) a chunk of its text. A v2 `diff` (changed paths and a
  git patch) becomes a v1 diff per file, its hunk lines shown as sent (`content_items`).
  A `config_option_update` is v1's (options by `id`, protocol/v2/to_v1.py), and when its
  mode option (category `mode`) moved, a v1 `current_mode_update` follows it, since v2
  has no mode update of its own (the view's mode follows). An `available_commands_update`
  keeps the commands v1 can express (plain ones, untagged), as a session result's do
  (`session.py`). Chunks keep their
  `messageId` (v1's unstable schema has it too); a chunk of plain text, the hot path of a
  relay, becomes v1's struct straight from the v2 one the endpoint decoded (`fold_update`),
  with no second decode. What v1 has no kind for (`state_update`,
  `terminal_update`, ...) stays a v2 typed value under its own kind; the view notes
  `state_update` and ignores the rest. `Update.raw` stays the update as the agent sent
  it (v2), for the relays that promise it unchanged; `kind` and `value` are the v1 ones.
* a v2 `session/request_permission` names its tool call under `subject` (`{"type":
  "tool_call", "toolCall": ...}`); `V2Side` hands the client's policy the same
  `PermissionRequest` as v1 and answers in the shape both versions share.
* the turn: `session/prompt` answers at once with `{messageId}`; the turn ends on the
  first `state_update` `idle` after the prompt was sent (`tracking.py` notes where it fell
  in the stream), whose `stopReason` and `usage` become the `TurnEnd` (`idle_result`).
* v2 agents call no client `fs/*` or `terminal/*`: `V2Side` has no such methods, so such
  a call is -32601.
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec

from agentao import __version__
from agentao.client.content import content_text
from agentao.client.serving import ClientSide
from agentao.client.state import SessionState
from agentao.client.view import PATCH_META
from agentao.protocol import schema
from agentao.protocol.decode import decode_lenient, json_of, to_builtins
from agentao.protocol.schema import UnknownVariant
from agentao.protocol.v2 import schema as v2
from agentao.protocol.v2.to_v1 import commands_v1, config_options_v1, mode_change

log = logging.getLogger("agentao.client")

VERSION = 2
STATE_UPDATE = "state_update"
CONFIG_UPDATE = "config_option_update"
COMMANDS_UPDATE = "available_commands_update"
MODE_UPDATE = "current_mode_update"
IDLE = "idle"
CLIENT_INFO = {"name": "agentao", "title": "agentao client", "version": __version__}
BASELINE = frozenset({"list", "resume", "close"})  # session methods `session: {}` promises
# v2 whole-message upserts -> the v1 chunk kind their text becomes
_MESSAGE_KINDS = {
    "user_message": "user_message_chunk",
    "agent_message": "agent_message_chunk",
    "agent_thought": "agent_thought_chunk",
}


def initialize_params() -> dict[str, Any]:
    """The v2 `initialize`: `info`, and `capabilities` as object markers. We advertise no
    client capability of v2 (no elicitation, no auth extensions)."""
    return {"protocolVersion": VERSION, "info": CLIENT_INFO, "capabilities": {}}


def serves_sessions(init: Any) -> bool:
    """Whether a v2 `initialize` answer offers the session surface (`capabilities.session`
    present: the baseline methods new, list, resume, close, prompt, cancel, update)."""
    caps = getattr(init, "capabilities", None)
    return getattr(caps, "session", None) is not None


def supports(init: Any, capability: str) -> bool:
    """A session capability of a v2 agent: the baseline (list, resume, close) with
    `capabilities.session`; others (fork, delete, ...) by their own marker. No `load`."""
    if capability in BASELINE:
        return serves_sessions(init)
    session = getattr(getattr(init, "capabilities", None), "session", None)
    return getattr(session, capability, None) is not None


def is_idle(update: Any) -> bool:
    """A raw `session/update` update that is a `state_update` `idle`."""
    return (
        isinstance(update, dict)
        and update.get("sessionUpdate") == STATE_UPDATE
        and update.get("state") == IDLE
    )


def idle_result(update: dict[str, Any]) -> dict[str, Any]:
    """An idle `state_update` as the v1 prompt result it stands for: its stop reason
    (v2 lets an agent omit it: `end_turn`, the turn did end) and usage."""
    stop = update.get("stopReason")
    result: dict[str, Any] = {"stopReason": stop if isinstance(stop, str) else "end_turn"}
    for key in ("usage", "_meta"):  # agentao puts usage under _meta, as over v1
        if isinstance(update.get(key), dict):
            result[key] = update[key]
    return result


def to_v1(update: dict[str, Any], st: SessionState) -> tuple[str, dict[str, Any]] | None:
    """The v1 update a v2 one means, as (kind, wire dict); None when v1 has no such kind."""
    kind = update.get("sessionUpdate")
    if kind == "tool_call_update":
        known = update.get("toolCallId") in st.tool_calls
        return ("tool_call_update" if known else "tool_call"), _tool_call(update, known)
    if kind == "tool_call_content_chunk":
        return "tool_call_update", _content_chunk(update, st)
    if kind == "plan_update":
        plan = update.get("plan")
        if isinstance(plan, dict) and plan.get("type") == "items":
            return "plan", {"sessionUpdate": "plan", "entries": plan.get("entries") or []}
        return None
    if kind in _MESSAGE_KINDS:
        return _MESSAGE_KINDS[kind], _message_chunk(_MESSAGE_KINDS[kind], update)
    if kind == CONFIG_UPDATE:  # v2 names options by `configId`, v1 by `id`
        return kind, {**update, "configOptions": config_options_v1(update.get("configOptions"))}
    if kind == COMMANDS_UPDATE:  # v2 tags each command; v1 knows only plain ones
        return kind, {**update, "availableCommands": commands_v1(update.get("availableCommands"))}
    if kind in _V1_KINDS:
        return kind, update
    return None


def _tool_call(update: dict[str, Any], known: bool) -> dict[str, Any]:
    tag = "tool_call_update" if known else "tool_call"
    wire = {k: v for k, v in update.items() if k != "name"}  # v2's `name`: v1 has none
    if wire.get("status") == "cancelled":  # stopped alone (tool_call/cancel): v1 has no
        wire["status"] = "failed"  # such status, and reads a stopped call as failed
    if isinstance(wire.get("content"), list):
        wire["content"] = [v1 for item in wire["content"] for v1 in content_items(item)]
    if not known:
        wire.setdefault("title", "")
    return {**wire, "sessionUpdate": tag}


def _content_chunk(update: dict[str, Any], st: SessionState) -> dict[str, Any]:
    tool_id = update.get("toolCallId")
    tool = st.tool_calls.get(tool_id) if isinstance(tool_id, str) else None
    so_far = to_builtins(tool.content) if tool is not None else []
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": tool_id,
        "content": [*so_far, *content_items(update.get("content"))],
    }


def content_items(item: Any) -> list[Any]:
    """A v2 tool-call content item as v1 items: a `diff` (paths in `changes`, the text in
    an optional git `patch`) becomes one v1 diff per changed file, its texts rebuilt from the
    patch's hunks and the hunk lines kept under `_meta` (view.PATCH_META) to be shown as
    sent; anything else is the same in both versions."""
    if not (isinstance(item, dict) and item.get("type") == "diff"):
        return [item]
    changes = [c for c in item.get("changes") or [] if isinstance(c, dict)]
    changes = [c for c in changes if isinstance(c.get("path"), str)]
    sections = _patch_sections(item.get("patch"))
    if len(sections) != len(changes):
        sections = [[] for _ in changes]  # no patch, or one we cannot pair: paths only
    return [_v1_diff(change, hunks) for change, hunks in zip(changes, sections, strict=True)]


def _v1_diff(change: dict[str, Any], hunks: list[str]) -> dict[str, Any]:
    operation = change.get("operation")
    old = None if operation == "add" else _text_of(hunks, "-")
    new = "" if operation == "delete" else _text_of(hunks, "+")
    diff = {"type": "diff", "path": change["path"], "oldText": old, "newText": new}
    return {**diff, "_meta": {PATCH_META: hunks}} if hunks else diff


def _patch_sections(patch: Any) -> list[list[str]]:
    """A git patch's hunk lines, one list per file, in order."""
    text = patch.get("text") if isinstance(patch, dict) else None
    if not isinstance(text, str):
        return []
    sections: list[list[str]] = []
    in_hunks = False
    for line in text.splitlines():
        if line.startswith("diff --git ") or (line.startswith("--- ") and not in_hunks):
            if line.startswith("diff --git ") or not sections or sections[-1]:
                sections.append([])
            in_hunks = False
        elif line.startswith("@@"):
            in_hunks = True
            if not sections:
                sections.append([])
            sections[-1].append(line)
        elif in_hunks and line[:1] in (" ", "-", "+"):
            sections[-1].append(line)
        elif in_hunks and not line.startswith("\\"):
            in_hunks = False
    return sections


def _text_of(hunks: list[str], sign: str) -> str:
    """One side of the hunks (context lines and `sign` lines), as text."""
    lines = [h[1:] for h in hunks if h[:1] in (" ", sign)]
    return "".join(f"{line}\n" for line in lines)


def _message_chunk(kind: str, update: dict[str, Any]) -> dict[str, Any]:
    blocks = update.get("content") if isinstance(update.get("content"), list) else []
    text = "".join(content_text(_block(b)) for b in blocks)
    return {
        "sessionUpdate": kind,
        "messageId": update.get("messageId"),
        "content": {"type": "text", "text": text},
    }


def _block(raw: Any) -> Any:
    try:
        return decode_lenient(schema.ContentBlock, raw)
    except (msgspec.ValidationError, TypeError):
        return None


def decode_v1(session_id: str, wire: dict[str, Any]) -> Any:
    """A v1 update dict as its typed value; None when it does not decode."""
    try:
        note = decode_lenient(schema.SessionNotification, {"sessionId": session_id, "update": wire})
    except (msgspec.ValidationError, TypeError):
        log.info("a v2 update does not decode as v1 %s: kept raw", wire.get("sessionUpdate"))
        return None
    return None if type(note.update) is UnknownVariant else note.update


def fold_update(st: SessionState, raw: dict[str, Any], value: Any, wire: Any = None) -> Any:
    """Fold a v2 update (`raw` as received, `value` its v2 typed struct; `wire` its bytes,
    if kept) into the session as the v1 update it means (`to_v1`); the `Update` event to
    queue. What was received rides along (events.Update.wire)."""
    received = raw if wire is None else wire
    v1_chunk = _V1_CHUNKS.get(type(value))
    if v1_chunk is not None and _plain_text(value):  # the hot path: no second decode
        text = schema.TextContentBlock(text=value.content.text)
        return st.apply(
            raw["sessionUpdate"], v1_chunk(content=text, message_id=value.message_id), received
        )
    translated = to_v1(raw, st)
    if translated is None:  # no v1 kind: the v2 typed value, under its own kind
        kept = None if type(value) is UnknownVariant else value
        return st.apply(raw["sessionUpdate"], kept, received)
    kind, v1_wire = translated
    return st.apply(kind, decode_v1(st.session_id, v1_wire), received)


def _plain_text(chunk: Any) -> bool:
    """A chunk of plain text: nothing beyond its text and message id to carry over."""
    content = chunk.content
    return (
        type(content) is v2.TextContentBlock
        and content.annotations is None
        and content.meta is None
        and chunk.meta is None
    )


def permission_params(params: dict[str, Any], request_id: Any) -> dict[str, Any]:
    """A v2 `session/request_permission`'s params with its tool call where v1 has it
    (`toolCall`); a command or custom subject becomes a tool call of its own."""
    v1 = dict(params)
    subject = v1.pop("subject", None)
    if isinstance(subject, dict) and isinstance(subject.get("toolCall"), dict):
        v1["toolCall"] = dict(subject["toolCall"])
    else:
        v1["toolCall"] = {"toolCallId": f"permission-{request_id}", "title": v1.get("title") or ""}
    return v1


# A v2 chunk's typed value -> the v1 struct it becomes (the same kind, the same fields).
_V1_CHUNKS: dict[type, type] = {
    v2.AgentMessageChunk: schema.AgentMessageChunk,
    v2.AgentThoughtChunk: schema.AgentThoughtChunk,
    v2.UserMessageChunk: schema.UserMessageChunk,
}
_V1_KINDS = frozenset(
    {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "session_info_update",
        "usage_update",
        "notice",
    }
)


class Versioned:
    """The client's handler object for the endpoint: `ClientSide` for v1 (and before the
    handshake), `V2Side` over it once v2 is settled (endpoint.py asks `for_version`)."""

    def __init__(self, side: ClientSide) -> None:
        self.side = side
        self._v2: V2Side | None = None

    def for_version(self, version: int | None) -> ClientSide | V2Side:
        if version != VERSION:
            return self.side
        if self._v2 is None:
            self._v2 = V2Side(self.side)
        return self._v2


class V2Side:
    """What a v2 agent may call on us: `session/update`, `session/request_permission`
    and extensions, served from the same `ClientSide` (its states and policy)."""

    def __init__(self, side: ClientSide) -> None:
        self.side = side

    @property
    def extensions(self) -> dict[str, Any]:
        return self.side.extensions

    def session_update(self, params: Any, message: dict[str, Any]) -> None:
        st = self.side.state(params.session_id)
        wire = message["params"]["update"]  # its bytes, or (repaired) the object
        raw = json_of(wire)
        known = st.current_mode
        update = fold_update(st, raw, params.update, wire)
        st.stream.push_update(update)
        self.side.follow(update)
        mode = mode_change(raw, known) if raw.get("sessionUpdate") == CONFIG_UPDATE else None
        if mode is not None:  # v2 says a mode change only in its options; v1 says it apart
            value = decode_v1(st.session_id, mode)
            st.stream.push_update(st.apply(MODE_UPDATE, value, mode))

    async def session_request_permission(
        self, params: Any, message: dict[str, Any]
    ) -> dict[str, Any]:
        v1_params = permission_params(message.get("params") or {}, message.get("id"))
        return await self.side.session_request_permission(None, {**message, "params": v1_params})


__all__ = [
    "BASELINE",
    "CLIENT_INFO",
    "STATE_UPDATE",
    "VERSION",
    "V2Side",
    "Versioned",
    "content_items",
    "decode_v1",
    "fold_update",
    "idle_result",
    "initialize_params",
    "is_idle",
    "permission_params",
    "serves_sessions",
    "supports",
    "to_v1",
]
