"""A conversation as the web UI shows it: its stored frames folded once, in Python.

Theory of operation. The task log stores each turn's frames (`tasks.py`), and what
the agent sent while no turn ran (`session-update` frames of no task: a mode change,
say); the ACP updates among them are folded by the client's one fold
(`agentao.client.view`), and the gateway's own frames (a turn's start and end, permission questions and answers)
become items beside them. A reader gets keyed items, each `{"id", "kind", "turn", ...}`:

    turn        prompt, state (running | ended | error), stopReason, usage, error
    message     role (user | agent | thought), text  (live: `append`, the new text only)
    tool_call   title, toolKind, status, diffs [{path, created, lines}], output, input
    plan        entries                      notice    title, text
    permission  requestId, title, toolKind, tool (as tool_call), options, deadline, window, decision
    decision    approved, title, reason      (a policy's answer, nobody asked)
    question    requestId, question, deadline, window, childSessionId?, childTitle?, answer
                (null while open, then {answer (null: none), by}): the agent's ask_user
    subagent    sessionId, toolCallId (the parent's call it runs in: as the agent names it,
                `_meta["agentao.cn/parentToolCallId"]`, else the first running one),
                title, description, state {state, stopReason}, items: the
                child's own items (messages, tool calls, and its own children's
                subagent items, nested alike), folded from the frames that name it
                (`childSessionId`); its question is a permission item with it
    plan/usage  with ids `plan` and `usage`: the session's latest, outside any turn

`GET /v1/conversations/{id}/view` answers every item; `WS /v1/tasks/{id}/view` sends
`{"type": "view", "seq", "items": [...]}` for each stored frame of a turn, from its
first, then live ones: upserts by id, so a page that reconnects just renders again.
Nothing here reads the raw update past decoding it once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentao.client.children import MAX_CHILD_DEPTH
from agentao.client.content import prompt_text
from agentao.client.events import TEXT_KINDS
from agentao.client.view import (
    ChildEntry,
    Message,
    SessionView,
    ToolCallEntry,
    merge_tool_call,
    tool_call_of,
    tool_item,
)
from agentao.gateway.tasklog import SESSION_UPDATE
from agentao.protocol import meta, schema
from agentao.protocol.decode import decode_lenient, json_of
from agentao.store.gateway import GatewayStore
from agentao.store.gateway_records import TaskEvent

Item = dict[str, Any]
# The agent's ask_user frames, as asking.py writes them (not imported: asking.py needs
# the conversations, which need far more than a fold).
QUESTION_REQUEST, QUESTION_RESPONSE = "question-request", "question-response"
_SIDE_KINDS = {"plan": "plan", "usage_update": "usage"}


class ConversationView:
    """The items of a conversation's turns, folded from their frames in order."""

    def __init__(self) -> None:
        self.session = SessionView()
        self.turns: dict[str, Item] = {}  # task id -> its turn item
        self.asks: dict[str, Item] = {}  # request id -> its permission item
        self.order: list[str] = []  # item ids in the order first seen
        self.extra: dict[str, Item] = {}  # turn, permission and decision items by id
        self.entry_turn: list[str] = []  # entry index -> the turn it appeared in
        self.turn = ""  # the task whose frames are being folded
        self.kids: dict[str, SessionView] = {}  # child session id -> the fold of its own
        self.kid_calls: dict[str, str | None] = {}  # child session id -> the call it runs in
        self.kid_parents: dict[str, str] = {}  # a child's child -> the child that announced it

    def feed(self, event: TaskEvent) -> list[Item]:
        """Fold one frame; the items it changed."""
        self.turn = event.task_id
        payload = event.payload
        if event.type in (QUESTION_REQUEST, QUESTION_RESPONSE):  # a child's too: it names it
            return [self._asked_user(event.type, payload)]
        child = payload.get("childSessionId")
        if isinstance(child, str) and event.type != "permission-response":
            return self._of_child(child, event.type, payload)
        if event.type in ("task-running", SESSION_UPDATE):  # a turn's, or of no turn
            return self._update(payload.get("update"))
        if event.type == "task-started":
            prompt = payload.get("prompt")
            text = prompt_text(prompt) if isinstance(prompt, list) else ""
            return [self._turn(prompt=text, state="running")]
        if event.type == "task-ended":
            return [self._ended(payload)]
        if event.type == "task-error":
            error = payload.get("error") or {}
            return [self._turn(state="error", error=str(error.get("message") or "error"))]
        if event.type == "permission-request":
            return self._asked(payload)
        if event.type == "permission-response":
            return [self._answered(event.seq, payload)]
        return []

    def items(self) -> list[Item]:
        """Every item, in order, then the session-wide plan and usage."""
        return [self._item(key) for key in self.order] + self.session.side_items()

    # ---- ACP updates: the client's fold ---------------------------------------------

    def _update(self, wire: Any) -> list[Item]:
        value = _decoded(wire)
        if value is None:
            return []
        kind = type(value).__struct_config__.tag  # the `sessionUpdate` tag, as decoded
        entries = len(self.session.entries)
        last = self.session.entries[-1] if entries else None
        before = len(last.chunks) if isinstance(last, Message) else 0
        update = self.session.fold("", kind, value, wire)
        if kind == "subagent_update" and value.session_id not in self.kid_calls:
            self.kid_calls[value.session_id] = _parent_call(value) or self._running_call()
        changed = self._new_entries(entries)
        if update.tool_call is not None:
            changed.append(self._tool(update.tool_call.tool_call_id))
        elif (
            kind in TEXT_KINDS
            and isinstance(last, Message)
            and len(self.session.entries) == entries
        ):
            changed.append(self._appended(entries - 1, last, before))
        elif kind == "subagent_update" and (key := self._child_key(value.session_id)):
            changed.append(self._item(key))  # its title or state patched
        if kind in _SIDE_KINDS:
            changed += [s for s in self.session.side_items() if s["id"] == _SIDE_KINDS[kind]]
        return _unique(changed)

    def _new_entries(self, since: int) -> list[Item]:
        new = []
        for index in range(since, len(self.session.entries)):
            self.entry_turn.append(self.turn)
            self.order.append(f"e{index}")
            new.append(self._item(f"e{index}"))
        return new

    def _appended(self, index: int, message: Message, before: int) -> Item:
        text = "".join(message.chunks[before:])
        key = f"e{index}"
        return {"id": key, "kind": "message", "role": message.role, "turn": self._turn_of(key)} | {
            "append": text
        }

    def _tool(self, tool_call_id: str) -> Item:
        return self._item(self._entry_of(tool_call_id))

    def _entry_of(self, tool_call_id: str) -> str:
        for index, entry in enumerate(self.session.entries):
            if isinstance(entry, ToolCallEntry) and entry.tool_call_id == tool_call_id:
                return f"e{index}"
        raise KeyError(tool_call_id)

    # ---- a child's frames: folded in its own view, shown in its item ----------------------

    def _of_child(self, child: str, kind: str, payload: dict[str, Any]) -> list[Item]:
        """A child's update, or its question, folded in the child's own view: what changes
        is the subagent item of the child's outermost parent (with the child's items, and
        its own children's, nested), and a question."""
        view = self.kids.setdefault(child, SessionView())
        changed = []
        if kind == "task-running":
            wire = payload.get("update")
            value = _decoded(wire)
            if value is not None:
                tag = type(value).__struct_config__.tag
                view.fold("", tag, value, wire)
                if tag == "subagent_update":
                    self._grandchild(child, value)
        elif kind == "permission-request":
            value = tool_call_of(payload.get("toolCall"))
            tool = view.upsert_tool_call(value, announced=False) if value is not None else None
            changed.append(self._question(payload, tool))
        key = self._child_key(self._outermost(child))
        return ([self._item(key)] if key is not None else []) + changed

    def _grandchild(self, child: str, news: Any) -> None:
        """A child's child announced: nested under `child` (the first parent named wins,
        and none of `child`'s own parents can be its child: no loop is drawn)."""
        grandchild = news.session_id
        if grandchild in self.kid_calls or grandchild in self._parents_of(child):
            return
        self.kid_parents[grandchild] = child
        self.kid_calls[grandchild] = _parent_call(news)

    def _parents_of(self, child: str) -> list[str]:
        """`child` and its parents up to the outermost, at most MAX_CHILD_DEPTH of them."""
        chain = [child]
        while len(chain) < MAX_CHILD_DEPTH and (parent := self.kid_parents.get(chain[-1])):
            chain.append(parent)
        return chain

    def _outermost(self, child: str) -> str:
        return self._parents_of(child)[-1]

    def _child_key(self, child: str) -> str | None:
        for index, entry in enumerate(self.session.entries):
            if isinstance(entry, ChildEntry) and entry.session_id == child:
                return f"e{index}"
        return None

    def _running_call(self) -> str | None:
        """The parent's tool call a child just announced runs in, for an agent that does
        not name it (`_parent_call`: ours does): the first call still running that no child
        claimed (agents announce a child right after the call that starts it)."""
        claimed = set(self.kid_calls.values())
        for entry in self.session.entries:
            if not isinstance(entry, ToolCallEntry) or entry.tool_call_id in claimed:
                continue
            status = getattr(self.session.tool_calls[entry.tool_call_id], "status", None)
            if status in ("pending", "in_progress"):
                return entry.tool_call_id
        return None

    def _child_items(self, child: str, depth: int = 1) -> list[Item]:
        """A child's own items; its children's nested in theirs (only those it announced
        first, `_grandchild`, and no deeper than MAX_CHILD_DEPTH)."""
        view = self.kids.get(child)
        items = [view.entry_item(i) for i in range(len(view.entries))] if view else []
        for item in items:
            if item["kind"] == "subagent":
                kid = item["sessionId"]
                mine = self.kid_parents.get(kid) == child and depth < MAX_CHILD_DEPTH
                item["items"] = self._child_items(kid, depth + 1) if mine else []
                item["toolCallId"] = self.kid_calls.get(kid)
        return items

    # ---- the gateway's own frames ---------------------------------------------------

    def _turn(self, **fields: Any) -> Item:
        key = f"turn:{self.turn}"
        item = self.extra.get(key)
        if item is None:
            item = self.extra[key] = {"id": key, "kind": "turn", "turn": self.turn, "prompt": ""}
            self.order.append(key)
        item.update(fields)
        return dict(item)

    def _ended(self, payload: dict[str, Any]) -> Item:
        usage = payload.get("usage")
        stop = payload.get("stopReason")
        return self._turn(state="ended", stopReason=stop, usage=usage)

    def _asked(self, payload: dict[str, Any]) -> list[Item]:
        changed = []
        value = tool_call_of(payload.get("toolCall"))
        tool = None
        if value is not None:  # the question names a tool call: it takes its place too
            entries = len(self.session.entries)
            tool = self.session.upsert_tool_call(value, announced=False)
            changed += self._new_entries(entries)
        return [*changed, self._question(payload, tool)]

    def _question(self, payload: dict[str, Any], tool: Any) -> Item:
        request_id = str(payload.get("requestId"))
        key = f"ask:{request_id}"
        self.asks[request_id] = self.extra[key] = {
            "id": key,
            "kind": "permission",
            "turn": self.turn,
            "requestId": request_id,
            "title": payload.get("title") or "",
            "toolKind": payload.get("kind") or "other",
            "tool": tool_item(tool) if tool is not None else None,
            "options": payload.get("options") or [],
            "deadline": payload.get("deadline"),
            "window": payload.get("window"),  # seconds a watcher's presence gives (tasks.py)
            "decision": None,
        }
        if isinstance(payload.get("childSessionId"), str):
            self.extra[key]["childSessionId"] = payload["childSessionId"]
        self.order.append(key)
        return dict(self.extra[key])

    def _answered(self, seq: int, payload: dict[str, Any]) -> Item:
        decision = {k: payload.get(k) for k in ("approved", "by", "reason", "optionId")}
        ask = self.asks.get(str(payload.get("requestId")))
        if ask is not None:
            ask["decision"] = decision
            return dict(ask)
        key = f"decision:{seq}"  # decided by a policy: nobody was asked
        item = {"id": key, "kind": "decision", "turn": self.turn, "title": payload.get("title")}
        self.extra[key] = item | decision
        self.order.append(key)
        return dict(self.extra[key])

    def _asked_user(self, kind: str, payload: dict[str, Any]) -> Item:
        """The agent's `ask_user` (asking.py): a question item, its answer once given."""
        key = f"question:{payload.get('requestId')}"
        item = self.extra.get(key)
        if item is None:
            item = self.extra[key] = {"id": key, "kind": "question", "turn": self.turn}
            item |= {"requestId": payload.get("requestId"), "question": "", "answer": None}
            self.order.append(key)
        if kind == QUESTION_REQUEST:
            named = ("question", "deadline", "window", "childSessionId", "childTitle")
            item |= {k: payload[k] for k in named if k in payload}
        else:
            item["answer"] = {"answer": payload.get("answer"), "by": payload.get("by")}
        return dict(item)

    def _item(self, key: str) -> Item:
        if key in self.extra:
            return dict(self.extra[key])
        item = self.session.entry_item(int(key[1:])) | {"turn": self._turn_of(key)}
        if item["kind"] == "subagent":  # its own steps, nested (collapsed in the web UI)
            item["items"] = self._child_items(item["sessionId"])
            item["toolCallId"] = self.kid_calls.get(item["sessionId"])
        return item

    def _turn_of(self, key: str) -> str:
        return self.entry_turn[int(key[1:])]


def tool_view(wire: Any) -> Item | None:
    """A permission question's `toolCall` (wire JSON) as a tool_call item's fields: what
    the web UI's card draws (None when it names no tool call)."""
    value = tool_call_of(wire)
    return tool_item(merge_tool_call(None, value)) if value is not None else None


async def conversation_frames(store: GatewayStore, conversation_id: str) -> list[TaskEvent]:
    """The conversation's whole stored log, in its order (the one place the view reads
    the log from the store)."""
    return await store.events_after(conversation_id, 0)


def fold(frames: Iterable[TaskEvent]) -> ConversationView:
    view = ConversationView()
    for frame in frames:
        view.feed(frame)
    return view


def _decoded(wire: Any) -> Any:
    """A logged update (the bytes received, or JSON values read from the store), decoded
    once (None: not an object, or a kind this schema lacks)."""
    raw = json_of(wire)
    if not isinstance(raw, dict):
        return None
    try:
        value = decode_lenient(schema.SessionUpdate, raw)
    except Exception:  # a frame the agent garbled: shown as nothing, kept in the log
        return None
    return None if isinstance(value, schema.UnknownVariant) else value


def _parent_call(news: Any) -> str | None:
    """The parent's tool call a `subagent_update` names (our agent's `_meta` key)."""
    extra = news.meta
    call = extra.get(meta.PARENT_TOOL_CALL) if isinstance(extra, dict) else None
    return call if isinstance(call, str) and call else None


def _unique(items: list[Item]) -> list[Item]:
    seen: dict[str, Item] = {}
    for item in items:
        seen[item["id"]] = item
    return list(seen.values())


__all__ = ["ConversationView", "Item", "conversation_frames", "fold", "tool_view"]
