"""TurnEvent -> session/update (server/updates.py), one row per event kind (seed C.4)."""

from __future__ import annotations

import msgspec
import pytest

from agentao.agent import events as ev
from agentao.protocol.decode import to_builtins
from agentao.server.replay import history
from agentao.server.updates import UpdateMapper

ROWS = [
    (ev.UserText("hi"), {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}}),
    (ev.TextDelta("a"), {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a"}}),
    (ev.ThoughtDelta("t"), {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "t"}}),
    (
        ev.ToolCallStarted("c", "read_file", "Read a.txt", "read", {"file_path": "a.txt"},
                           (ev.Location("/w/a.txt", 3),)),
        {"sessionUpdate": "tool_call", "toolCallId": "c", "title": "Read a.txt", "kind": "read",
         "status": "pending", "locations": [{"path": "/w/a.txt", "line": 3}],
         "rawInput": {"file_path": "a.txt"}},
    ),
    (ev.ToolCallProgress("c"), {"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "in_progress"}),
    (
        ev.ToolCallProgress("c", (ev.TerminalOutput("t1"),)),
        {"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "in_progress",
         "content": [{"type": "terminal", "terminalId": "t1"}]},
    ),
    (
        ev.ToolCallFinished("c", "completed", (ev.TextOutput("ok"),), {"n": 1}),
        {"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "completed",
         "content": [{"type": "content", "content": {"type": "text", "text": "ok"}}],
         "rawOutput": {"n": 1}},
    ),
    (
        ev.PlanChanged((ev.PlanEntry("x", "in_progress", "high"),)),
        {"sessionUpdate": "plan", "entries": [{"content": "x", "priority": "high", "status": "in_progress"}]},
    ),
    (ev.TurnEnded("end_turn"), None),
]  # fmt: skip


@pytest.mark.parametrize("event, wire", ROWS, ids=[type(r[0]).__name__ for r in ROWS])
def test_mapping_rows(event, wire):
    update = UpdateMapper()(event)
    assert (None if update is None else to_builtins(update)) == wire


def test_new_file_diff_has_explicit_null_old_text():
    update = UpdateMapper()(
        ev.ToolCallFinished("c", "completed", (ev.DiffOutput("/w/n", None, "x"),))
    )
    wire = msgspec.json.decode(msgspec.json.encode(update))
    assert wire["content"][0]["oldText"] is None and "oldText" in wire["content"][0]


def test_notice_maps_to_a_notice_update():
    # Whether the client may see it is the gate's decision (tests/server/test_gates.py).
    update = to_builtins(UpdateMapper()(ev.Notice("retrying")))
    assert update == {"sessionUpdate": "notice", "severity": "warning", "title": "retrying"}


def test_replay_swaps_a_gone_terminal_for_the_output_text(tmp_path):
    from agentao.agent.config import LlmConfig
    from agentao.agent.providers.messages import ToolResultMessage, UserMessage
    from agentao.agent.session import AgentSession, TurnRecord

    agent = AgentSession.new(tmp_path, LlmConfig("OPENAI", "m"))
    events = (
        ev.ToolCallStarted("s", "run_shell_command", "Run", "execute", {}),
        ev.ToolCallFinished("s", "completed", (ev.TerminalOutput("t9"),)),
        ev.TurnEnded("end_turn"),
    )
    messages = (UserMessage("go"), ToolResultMessage("s", "run_shell_command", "exit 0\nhello"))
    agent.commit_turn(TurnRecord("go", messages, events, "end_turn"))
    replayed = list(history(agent))
    assert replayed[0] == ev.UserText("go")
    assert replayed[2].content == (ev.TextOutput("exit 0\nhello"),)
    assert not any(isinstance(e, ev.TurnEnded) for e in replayed)


def test_context_and_compaction_events_map_to_their_updates() -> None:
    from agentao.agent import events as ev
    from agentao.protocol.decode import to_builtins
    from agentao.server.updates import UpdateMapper

    mapper = UpdateMapper()
    assert to_builtins(mapper(ev.ContextUsage(900, 12000, True, 0.0125, "USD"))) == {
        "sessionUpdate": "usage_update",
        "used": 900,
        "size": 12000,
        "cost": {"amount": 0.0125, "currency": "USD"},
        "_meta": {"agentao.cn/estimated": True},
    }
    assert to_builtins(mapper(ev.ContextUsage(900, 12000))) == {
        "sessionUpdate": "usage_update", "used": 900, "size": 12000,
    }  # fmt: skip
    assert to_builtins(mapper(ev.CompactionStarted("c1", "threshold", 10000))) == {
        "sessionUpdate": "compaction_update", "compactionId": "c1", "status": "in_progress",
    }  # fmt: skip
    assert to_builtins(mapper(ev.CompactionDelta("c1", "so far"))) == {
        "sessionUpdate": "compaction_summary_chunk",
        "compactionId": "c1",
        "content": {"type": "text", "text": "so far"},
    }
    done = to_builtins(mapper(ev.CompactionFinished("c1", "completed", 10000, 4000, "sum", "d")))
    assert done["status"] == "completed" and done["summary"] == [{"type": "text", "text": "sum"}]
    assert done["_meta"]["agentao.cn/compaction"] == {
        "tokensBefore": 10000, "tokensAfter": 4000, "detail": "d",
    }  # fmt: skip
