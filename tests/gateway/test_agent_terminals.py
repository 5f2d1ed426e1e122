"""The log's text of a v2 agent's terminal is bounded (agent_terminals.py), and the bridge
gives v2 readers only the updates of the terminals a frame names, whatever else the log's
`_meta` holds (remote/bridge.py). Real client folds and the real bridge; no process."""

from __future__ import annotations

import base64
from typing import Any

from agentao.client.view import SessionView
from agentao.gateway.agent_terminals import (
    CUT_NOTE,
    TERMINAL_LOG_BYTES,
    TERMINAL_LOG_UPDATES,
    live_text,
)
from agentao.gateway.remote.bridge import V2Bridge
from agentao.protocol import meta
from agentao.protocol.v2 import schema as v2
from agentao.store.gateway_records import TaskEvent


def _chunks(view: SessionView, *data: bytes) -> list[str | None]:
    """The text the log would keep after each chunk."""
    texts = []
    for piece in data:
        encoded = base64.b64encode(piece).decode()
        value = v2.TerminalOutputChunkSessionUpdate(terminal_id="t1", data=encoded)
        raw = {"sessionUpdate": "terminal_output_chunk", "terminalId": "t1", "data": encoded}
        view.fold("s", "terminal_output_chunk", value, raw)
        texts.append(live_text(view.terminals["t1"]))
    return texts


def test_the_logged_text_is_cut_once_past_its_bytes_and_said_so() -> None:
    half = b"a" * (TERMINAL_LOG_BYTES // 2)
    first, second, cut, after = _chunks(SessionView(), half, half, b"b", b"c")
    assert first == half.decode() and second == (half + half).decode()
    assert cut == (half + half).decode() + CUT_NOTE  # the bound's bytes, then the note
    assert after is None  # no more text: the call's end carries the whole


def test_the_logged_text_stops_after_its_number_of_chunks() -> None:
    texts = _chunks(SessionView(), *[b"x"] * (TERMINAL_LOG_UPDATES + 2))
    assert texts[TERMINAL_LOG_UPDATES - 1] == "x" * TERMINAL_LOG_UPDATES
    assert texts[TERMINAL_LOG_UPDATES] == "x" * (TERMINAL_LOG_UPDATES + 1) + CUT_NOTE
    assert texts[-1] is None


def _frame(kept: dict[str, Any]) -> TaskEvent:
    update = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "content": [{"type": "terminal", "terminalId": "t1"}],
        "_meta": {meta.V2_TERMINAL: kept},
    }
    return TaskEvent("task", 7, "task-running", 0.0, {"update": update})


def test_the_bridge_sends_only_the_named_terminals_updates() -> None:
    ours = {"sessionUpdate": "terminal_output_chunk", "terminalId": "t1", "data": "eA=="}
    forged = [
        {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"},
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "t2", "data": "eA=="},
        "not an update",
    ]
    sent = V2Bridge().frame("conv", _frame({"instead": [*forged, ours], "terminals": ["t1"]}), "s")
    assert sent == [ours]
    state = {"sessionUpdate": "terminal_update", "terminalId": "t1", "command": "ls"}
    before = {"before": [forged[0], state], "terminals": ["t1"]}
    first, call = V2Bridge().frame("conv", _frame(before), "s")
    assert first == state
    assert call["toolCallId"] == "c1" and "_meta" not in call
    assert call["content"] == [{"type": "terminal", "terminalId": "t1"}]  # not in words
