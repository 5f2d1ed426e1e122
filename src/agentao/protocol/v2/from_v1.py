"""v1 session updates as ACP v2: the wire translation our agent and the gateway's bridge share.

v1 streams chunks with no ids and separate `tool_call` / `tool_call_update` / `plan`
updates; v2 keys every entity (spec/acp-schema.v2.json). Pure wire logic, so one copy
here: `server/v2_updates.py` (our agent's v2 view) and `gateway/remote/bridge.py` (a v2
remote client on a v1 agent) both write through it.

user_message_chunk    with the user message's `messageId` (given: the prompt's)
agent_message_chunk   `messageId` of the agent message it belongs to
agent_thought_chunk   `messageId` of the thought it belongs to
tool_call             tool_call_update (the upsert's first write: status, title, kind, ...)
tool_call_update      tool_call_update; a `diff` content as v2's `changes` + a git patch,
                      a client `terminal` named in words (v2 has no client terminals)
plan                  plan_update `plan: {type: "items", planId, entries}`
available_commands_update   each command tagged `type: "command"` (its input `text`)
current_mode_update         nothing: v2 has modes only as the `mode` config option
config_option_update        each option named by `configId` (v1 `id`), its groups by
                            `groupId` (`config_option_v2`; to_v1.py is the mirror)
anything else               as v1 writes it (session_info, usage, config options, notice,
                            compaction: the same shape in both)

Message ids: an agent message (and a thought) is one run of chunks; a tool call or a new
user message ends it, so the next text is a new message with a new id, as codex-acp does.
The id of a new message is made by the caller's `new_id()` (a random uuid by default;
the gateway derives it from the log, so a replay names the same messages).
"""

from __future__ import annotations

import difflib
import uuid
from collections.abc import Callable
from typing import Any

from agentao.protocol.errors import InvalidParams

PLAN_ID = "plan"  # one plan per session (todo_write replaces it whole)
GIT_PATCH = "git_patch"
CHUNKS = {"agent_message_chunk": "agent", "agent_thought_chunk": "thought"}


def new_message_id() -> str:
    return str(uuid.uuid4())


class FromV1:
    """The v1 updates of some sessions, as v2 update dicts (stateful: open message ids)."""

    def __init__(self) -> None:
        self._open: dict[tuple[str, str], str] = {}  # (session, role) -> its current message

    def message_id(
        self, session_id: str, role: str, new_id: Callable[[], str] = new_message_id
    ) -> str:
        """The id of the `role` message now being streamed (`new_id()` on first use)."""
        key = (session_id, role)
        found = self._open.get(key)
        if found is None:
            found = self._open[key] = new_id()
        return found

    def end_messages(self, session_id: str) -> None:
        """The agent's open message and thought are over (a tool call or a new prompt)."""
        for role in ("agent", "thought"):
            self._open.pop((session_id, role), None)

    def user_message(self, session_id: str, text: str, message_id: str) -> dict[str, Any]:
        self.end_messages(session_id)
        return chunk("user_message_chunk", message_id, text)

    def update(
        self, session_id: str, update: dict[str, Any], new_id: Callable[[], str] = new_message_id
    ) -> dict[str, Any] | None:
        """A v1 update (wire dict) in v2, or None when v2 has no such update. `new_id()`
        names the message a chunk opens, called only if it opens one (most chunks
        continue a message: a derived id costs a hash)."""
        kind = update.get("sessionUpdate")
        if kind in CHUNKS:
            role = CHUNKS[kind]
            return {**update, "messageId": self.message_id(session_id, role, new_id)}
        if kind == "user_message_chunk":
            self.end_messages(session_id)
            return {**update, "messageId": new_id()}
        if kind == "tool_call":
            self.end_messages(session_id)
            return tool_call_update(update)
        if kind == "tool_call_update":
            return tool_call_update(update)
        if kind == "plan":
            return plan_update(update.get("entries") or [])
        return v2_update(update)


def v2_update(wire: dict[str, Any]) -> dict[str, Any] | None:
    """A v1 update whose v2 form is (nearly) the same shape; None when v2 has none."""
    kind = wire.get("sessionUpdate")
    if kind == "current_mode_update":
        return None
    if kind == "available_commands_update":
        return {**wire, "availableCommands": [command(c) for c in wire["availableCommands"]]}
    if kind == "config_option_update":
        options = wire.get("configOptions") or []
        return {**wire, "configOptions": [config_option_v2(o) for o in options]}
    return wire


def config_option_v2(option: dict[str, Any]) -> dict[str, Any]:
    """A v1 config option (wire dict) in v2: `configId` for `id`, `groupId` for `group`."""
    return renamed_option(option, ("id", "configId"), ("group", "groupId"))


def renamed_option(
    option: dict[str, Any], option_id: tuple[str, str], group_id: tuple[str, str]
) -> dict[str, Any]:
    """A config option with its id field, and its select's groups' id field, renamed
    (old, new): the one difference of shape between v1's options and v2's."""
    wire = _renamed(option, *option_id)
    if isinstance(wire.get("options"), list):
        wire["options"] = [
            _renamed(c, *group_id) if isinstance(c, dict) else c for c in wire["options"]
        ]
    return wire


def _renamed(wire: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    if old not in wire:
        return wire
    return {new: wire[old], **{k: v for k, v in wire.items() if k != old}}


def command(c: dict[str, Any]) -> dict[str, Any]:
    """v1's command in v2: tagged `command`, its free-text input tagged `text`."""
    tagged = {"type": "command", **c}
    if c.get("input") is not None:
        tagged["input"] = {"type": "text", **c["input"]}
    return tagged


def chunk(kind: str, message_id: str, text: str) -> dict[str, Any]:
    return {
        "sessionUpdate": kind,
        "messageId": message_id,
        "content": {"type": "text", "text": text},
    }


def tool_call_update(wire: dict[str, Any]) -> dict[str, Any]:
    """v1's `tool_call` or `tool_call_update` as v2's keyed upsert."""
    update = {k: v for k, v in wire.items() if v is not None}
    update["sessionUpdate"] = "tool_call_update"
    if wire.get("sessionUpdate") == "tool_call":
        update.setdefault("status", "pending")
    if isinstance(wire.get("content"), list):
        update["content"] = [tool_content(c) for c in wire["content"]]
    return update


def tool_content(item: dict[str, Any]) -> dict[str, Any]:
    """One v1 tool call content item in v2."""
    if item.get("type") == "diff":
        return diff(item["path"], item.get("oldText"), item.get("newText") or "")
    if item.get("type") == "terminal":
        return text_content(terminal_text(str(item.get("terminalId"))))
    return item


def terminal_text(terminal_id: str) -> str:
    # v2 has no client terminals (the agent runs commands itself): name it in words
    return f"(terminal {terminal_id})"


def text_content(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


def diff(path: str, old_text: str | None, new_text: str) -> dict[str, Any]:
    """An edit as v2's structured change plus its patch text (git's unified format)."""
    operation = "add" if old_text is None else "modify"
    name = path.lstrip("/")
    old = [] if old_text is None else old_text.splitlines(keepends=True)
    before = "/dev/null" if old_text is None else f"a/{name}"
    lines = difflib.unified_diff(old, new_text.splitlines(keepends=True), before, f"b/{name}")
    patch = f"diff --git a/{name} b/{name}\n" + "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
    return {
        "type": "diff",
        "changes": [{"operation": operation, "path": path}],
        "patch": {"format": GIT_PATCH, "text": patch},
    }


def plan_update(entries: list[dict[str, Any]]) -> dict[str, Any]:
    kept = [{k: e[k] for k in ("content", "priority", "status") if k in e} for e in entries]
    return {
        "sessionUpdate": "plan_update",
        "plan": {"type": "items", "planId": PLAN_ID, "entries": kept},
    }


def state_update(state: str, **fields: Any) -> dict[str, Any]:
    """`state_update` (`running`, `requires_action`, `idle` with its stopReason)."""
    return {"sessionUpdate": "state_update", "state": state, **fields}


def permission_request(
    session_id: str, title: str, tool_call: dict[str, Any], options: list[Any]
) -> dict[str, Any]:
    """v2's `session/request_permission` params about a tool call (its upsert fields)."""
    return {
        "sessionId": session_id,
        "title": title,
        "subject": {"type": "tool_call", "toolCall": tool_call},
        "options": options,
    }


REPLAY_FROM_START = "start"  # the one replay cursor a v2 resume may name: the whole history


def replay_from(cursor: Any) -> bool:
    """Whether a v2 `session/resume` replays: `replayFrom` omitted or null no, `{type:
    "start"}` the whole history, anything else -32602 (v2: never substitute a cursor)."""
    if cursor is None:
        return False
    if isinstance(cursor, dict) and cursor.get("type") == REPLAY_FROM_START:
        return True
    raise InvalidParams(
        'Invalid params: replayFrom must be {"type": "start"} (the only cursor served)',
        {"field": "replayFrom", "reason": "unsupported_cursor"},
    )


__all__ = [
    "GIT_PATCH",
    "PLAN_ID",
    "REPLAY_FROM_START",
    "FromV1",
    "chunk",
    "command",
    "config_option_v2",
    "diff",
    "new_message_id",
    "permission_request",
    "plan_update",
    "renamed_option",
    "replay_from",
    "state_update",
    "terminal_text",
    "text_content",
    "tool_call_update",
    "tool_content",
    "v2_update",
]
