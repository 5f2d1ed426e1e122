"""The session as a reader sees it (client/view.py): real agents' transcripts folded, and units."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentao.client import v2
from agentao.client.events import ToolCallState
from agentao.client.state import SessionState
from agentao.client.view import DiffView, Message, PlanEntry, ToolCallEntry, tool_summary
from agentao.protocol import schema
from agentao.protocol.decode import decode_lenient
from agentao.protocol.v2 import schema as schema_v2

TRANSCRIPTS = sorted(
    (Path(__file__).parents[1] / "data" / "real-agent-transcripts").glob("*.jsonl")
)


def received(path: Path) -> list[dict[str, Any]]:
    """The agent's messages of a recorded session, in wire order."""
    lines = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return [entry["msg"] for entry in lines if entry["dir"] == "recv"]


def decoded(update: dict[str, Any]) -> Any:
    """An update as the connection hands it over: decoded once (None: a kind unknown)."""
    value = decode_lenient(schema.SessionUpdate, update)
    return None if isinstance(value, schema.UnknownVariant) else value


def apply(state: SessionState, update: dict[str, Any]) -> None:
    state.apply(update["sessionUpdate"], decoded(update), update)


def apply_v2(state: SessionState, update: dict[str, Any]) -> None:
    """A v2 update as the client's v2 side folds it (client/v2.py)."""
    v2.fold_update(state, update, decode_lenient(schema_v2.SessionUpdate, update))


def fold(messages: list[dict[str, Any]]) -> SessionState:
    """Feed every update and permission request to one session's state, as the client does
    (over v2 when the agent answered `initialize` with version 2)."""
    state = SessionState("s", max_backlog=10_000)
    speaks_v2 = any(m.get("result", {}).get("protocolVersion") == 2 for m in messages)
    for msg in messages:
        if msg.get("method") == "session/update":
            (apply_v2 if speaks_v2 else apply)(state, msg["params"]["update"])
        elif msg.get("method") == "session/request_permission":
            params = v2.permission_params(msg["params"], msg["id"]) if speaks_v2 else msg["params"]
            state.upsert_tool_call(params["toolCall"])
    return state


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=[p.stem for p in TRANSCRIPTS])
def test_a_real_agents_session_folds_to_what_it_sent(path: Path) -> None:
    messages = received(path)
    updates = [m["params"]["update"] for m in messages if m.get("method") == "session/update"]
    view = fold(messages).view
    # Text: every agent chunk, in order, with nothing lost or doubled.
    chunks = [
        u["content"].get("text", "") for u in updates if u["sessionUpdate"] == "agent_message_chunk"
    ]
    assert view.text == "".join(chunks) and view.text
    # Tool calls: one per id, in order of first sight, each with the last status sent.
    sent_ids = [u["toolCallId"] for u in updates if "toolCallId" in u]
    order = [e.tool_call_id for e in view.entries if isinstance(e, ToolCallEntry)]
    assert set(order) == set(sent_ids) == set(view.tool_calls) and len(order) == len(set(order))
    for tool_id, tool in view.tool_calls.items():
        statuses = [
            u["status"] for u in updates if u.get("toolCallId") == tool_id and "status" in u
        ]
        assert tool.status == statuses[-1]
        assert tool.title  # announced or patched in, the title is never lost
    # Side channels: commands (a v2 agent may send them only in session/new's result),
    # and the latest usage where the agent reports it.
    if any(u["sessionUpdate"] == "available_commands_update" for u in updates):
        assert view.commands
    usage = [u for u in updates if u["sessionUpdate"] == "usage_update"]
    if usage:
        assert view.usage == decoded(usage[-1])


def test_a_v2_upsert_and_a_v1_call_with_its_update_end_as_the_same_item() -> None:
    announce = {"toolCallId": "t", "title": "Read a", "kind": "read", "status": "in_progress"}
    finish = {"toolCallId": "t", "status": "completed", "rawOutput": {"exitCode": 0}}
    one, two = SessionState("s", 100), SessionState("s", 100)
    apply(one, {"sessionUpdate": "tool_call", **announce})
    apply(one, {"sessionUpdate": "tool_call_update", **finish})
    apply_v2(two, {"sessionUpdate": "tool_call_update", "name": "read_file", **announce})
    apply_v2(two, {"sessionUpdate": "tool_call_update", **finish})
    assert two.view.items() == one.view.items()
    assert one.view.items()[0]["status"] == "completed"


def test_v2_chunks_of_another_message_id_start_another_message() -> None:
    state = SessionState("s", 100)
    for message_id, text in [("m1", "Hel"), ("m1", "lo"), ("m2", "Bye")]:
        chunk = {"type": "text", "text": text}
        apply_v2(state, {"sessionUpdate": "agent_message_chunk", "messageId": message_id,
                         "content": chunk})  # fmt: skip
    assert [(e.role, e.text) for e in state.view.entries] == [("agent", "Hello"), ("agent", "Bye")]


def test_chunks_of_one_kind_join_and_kinds_alternate() -> None:
    state = SessionState("s", 100)
    for kind, text in [
        ("user_message_chunk", "hi"),
        ("agent_thought_chunk", "let me "),
        ("agent_thought_chunk", "think"),
        ("agent_message_chunk", "Hello"),
        ("agent_message_chunk", " there"),
    ]:
        apply(state, {"sessionUpdate": kind, "content": {"type": "text", "text": text}})
    entry = {"content": "x", "status": "pending", "priority": "low"}
    apply(state, {"sessionUpdate": "plan", "entries": [entry]})
    entries = state.view.entries
    shown = [(e.role, e.text) for e in entries[:3] if isinstance(e, Message)]
    assert shown == [("user", "hi"), ("thought", "let me think"), ("agent", "Hello there")]
    assert isinstance(entries[3], PlanEntry) and state.view.plan[0].content == "x"


def test_a_tool_call_seen_first_in_a_permission_request_takes_its_place() -> None:
    state = SessionState("s", 100)
    state.upsert_tool_call({"toolCallId": "t", "title": "Run ls", "kind": "execute"})
    apply(state, {"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed"})
    assert state.view.entries == [ToolCallEntry("t")]
    assert (
        state.view.tool_calls["t"].title == "Run ls"
        and state.view.tool_calls["t"].status == "completed"
    )


@pytest.mark.parametrize(
    ("old", "new", "summary", "lines"),
    [
        (None, "a\nb\n", "created /w/f.txt (+2 -0)", ["@@ -0,0 +1,2 @@", "+a", "+b"]),
        (
            "a\nb\nc\n",
            "a\nB\nc\n",
            "edited /w/f.txt (+1 -1)",
            ["@@ -1,3 +1,3 @@", " a", "-b", "+B", " c"],
        ),
        ("same\n", "same\n", "edited /w/f.txt (+0 -0)", []),
    ],
)
def test_one_diff_algorithm(old: str | None, new: str, summary: str, lines: list[str]) -> None:
    wire = {"type": "diff", "path": "/w/f.txt", "oldText": old, "newText": new}
    diff = DiffView.of(decode_lenient(schema.ToolCallContent, wire))
    assert diff is not None and diff.summary() == summary and diff.lines() == lines
    text = {"type": "content", "content": {"type": "text", "text": "x"}}
    assert DiffView.of(decode_lenient(schema.ToolCallContent, text)) is None


def test_tool_summary() -> None:
    raw = {
        "toolCallId": "t",
        "status": "completed",
        "rawOutput": {"exitCode": 2},
        "content": [
            {"type": "content", "content": {"type": "text", "text": "\n" + "x" * 100 + "\nmore"}},
            {"type": "diff", "path": "/w/a", "oldText": None, "newText": "1\n"},
        ],
    }
    parts = tool_summary(tool_state(raw))
    assert parts == ["exit 2", "created /w/a (+1 -0)", "x" * 59 + "…"]
    running = tool_state({**raw, "status": "in_progress", "rawOutput": None, "content": []})
    assert tool_summary(running) == []


def tool_state(wire: dict[str, Any]) -> ToolCallState:
    return ToolCallState(wire["toolCallId"], decode_lenient(schema.ToolCall, {"title": "", **wire}))


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=[p.stem for p in TRANSCRIPTS])
def test_a_replay_folds_back_into_the_same_view(path: Path) -> None:
    """What a reader arriving late is sent (`replay()`) shows what the others saw."""
    original = fold(received(path)).view
    original.prompted([{"type": "text", "text": "and then?"}])
    again = SessionState("s", 10_000)
    for update in original.replay():
        apply(again, update)

    def shown(view: Any) -> list[tuple[str, str]]:
        out = []
        for entry in view.entries:
            if isinstance(entry, Message):
                out.append((entry.role, entry.text))
            elif isinstance(entry, ToolCallEntry):
                tool = view.tool_calls[entry.tool_call_id]
                out.append((tool.title, tool.status))
            else:
                out.append((type(entry).__name__, ""))
        return out

    assert shown(again.view) == shown(original)
    assert shown(original)[-1] == ("user", "and then?")
