"""protocol/v2/to_v1.py: v2 session config in v1's shape, and back (from_v1.config_option_v2).

Each translated value is checked against its version's schema (tests/schema_check.py).
"""

from __future__ import annotations

from typing import Any

from agentao.protocol.v2.from_v1 import FromV1, config_option_v2, v2_update
from agentao.protocol.v2.to_v1 import (
    commands_v1,
    config_options_v1,
    mode_change,
    modes_v1,
    session_result_v1,
    set_config_params_v2,
)
from tests.schema_check import check

ASK = {"value": "ask", "name": "Ask", "description": "asks first"}
MODE = {
    "configId": "approvals",
    "name": "Mode",
    "category": "mode",
    "type": "select",
    "currentValue": "ask",
    "options": [  # grouped (all or none are)
        {"groupId": "safe", "name": "Safe", "options": [ASK]},
        {"groupId": "more", "name": "More", "options": [{"value": "code", "name": "Code"}]},
    ],
}
TOGGLE = {"configId": "fast", "name": "Fast", "type": "boolean", "currentValue": False}
CUSTOM = {"configId": "_x", "name": "X", "type": "_slider", "currentValue": 3}


def _result(method: str, result: dict[str, Any], version: int) -> list[str]:
    return check({"jsonrpc": "2.0", "id": 1, "result": result}, version, method)


def test_a_v2_session_result_reads_as_v1s_with_modes_from_the_mode_option() -> None:
    v2 = {"sessionId": "s", "configOptions": [MODE, TOGGLE, CUSTOM]}
    assert _result("session/new", v2, 2) == []
    v1 = session_result_v1(v2)
    assert v1["modes"] == {
        "currentModeId": "ask",
        "availableModes": [
            {"id": "ask", "name": "Ask", "description": "asks first"},
            {"id": "code", "name": "Code"},
        ],
    }
    ids = [o["id"] for o in v1["configOptions"]]
    assert ids == ["approvals", "fast"]  # v1 has no custom option type
    assert v1["configOptions"][0]["options"][1]["group"] == "more"
    assert _result("session/new", v1, 1) == []


def test_no_mode_option_no_modes() -> None:
    assert modes_v1([TOGGLE]) is None
    assert "modes" not in session_result_v1({"sessionId": "s", "configOptions": [TOGGLE]})


def test_a_config_option_goes_there_and_back() -> None:
    (v1,) = config_options_v1([MODE])
    assert "configId" not in v1 and config_option_v2(v1) == MODE


def test_a_v1_config_option_update_reads_as_v2s() -> None:
    """The bridge's direction: a v1 agent's update (or one logged as v1) to a v2 client."""
    v1 = {"sessionUpdate": "config_option_update", "configOptions": config_options_v1([MODE])}
    v2 = v2_update(v1)
    assert v2 == {"sessionUpdate": "config_option_update", "configOptions": [MODE]}
    note = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s"}}
    assert check({**note, "params": {"sessionId": "s", "update": v2}}, 2, "session/update") == []
    assert check({**note, "params": {"sessionId": "s", "update": v1}}, 1, "session/update") == []


def test_set_config_params_tag_a_value_id_as_v2_does() -> None:
    v1 = {"sessionId": "s", "configId": "approvals", "value": "code"}
    assert set_config_params_v2(v1) == {**v1, "type": "id"}
    toggle = {"sessionId": "s", "configId": "fast", "type": "boolean", "value": True}
    assert set_config_params_v2(toggle) == toggle


def test_a_mode_change_is_said_only_when_the_mode_moved() -> None:
    update = {"sessionUpdate": "config_option_update", "configOptions": [MODE, TOGGLE]}
    assert mode_change(update, "code") == {
        "sessionUpdate": "current_mode_update",
        "currentModeId": "ask",
    }
    assert mode_change(update, "ask") is None
    assert mode_change({**update, "configOptions": [TOGGLE]}, "ask") is None


def test_a_v2_agents_commands_read_as_v1s() -> None:
    plan = {
        "type": "command",
        "name": "plan",
        "description": "Plan",
        "input": {"type": "text", "hint": "h"},
    }
    custom = {"type": "_macro", "name": "m", "description": "M"}
    commands = commands_v1([plan, custom])
    assert commands == [{"name": "plan", "description": "Plan", "input": {"hint": "h"}}]
    update = {"sessionUpdate": "available_commands_update", "availableCommands": commands}
    note = {"jsonrpc": "2.0", "method": "session/update"}
    assert check({**note, "params": {"sessionId": "s", "update": update}}, 1) == []
    assert commands_v1([custom]) == [] and commands_v1(None) == []


def test_a_chunk_names_a_new_message_only_when_it_opens_one() -> None:
    """`new_id()` is asked for when a chunk opens a message (the gateway derives it from
    the log, a hash per call), never for a chunk that continues one; a tool call ends
    the message, so the next chunk opens another."""
    view, asked = FromV1(), []

    def new_id() -> str:
        asked.append(len(asked))
        return f"m{len(asked)}"

    def text(words: str) -> dict[str, Any]:
        chunk = {"sessionUpdate": "agent_message_chunk"}
        return {**chunk, "content": {"type": "text", "text": words}}

    ids = [view.update("s", text(w), new_id)["messageId"] for w in ("a", "b", "c")]
    view.update("s", {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x"}, new_id)
    ids.append(view.update("s", text("d"), new_id)["messageId"])
    assert ids == ["m1", "m1", "m1", "m2"] and len(asked) == 2
