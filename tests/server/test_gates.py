"""gates.py: updates sent only to clients that advertised their capability, both ways."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agentao.protocol import schema
from agentao.protocol.decode import decode_strict, to_builtins
from agentao.server.gates import GATES, UpdateGate

SPEC = Path(__file__).resolve().parents[2] / "spec"
RULE = re.compile(r"MUST only send this update when the Client advertised\s+the `([\w.]+)`")


def gated_by_schema(name: str) -> dict[str, str]:
    """sessionUpdate kind -> capability, from the SessionUpdate variants' descriptions."""
    variants = json.loads((SPEC / name).read_text())["$defs"]["SessionUpdate"]["oneOf"]
    found = {}
    for variant in variants:
        if rule := RULE.search(variant.get("description", "")):
            found[variant["properties"]["sessionUpdate"]["const"]] = rule.group(1)
    return found


@pytest.mark.parametrize("name", ["acp-schema.v1.json", "acp-schema.v1.unstable.json"])
def test_every_update_the_schema_gates_is_gated(name: str) -> None:
    assert gated_by_schema(name) == dict(GATES)


UPDATES = {
    "notice": {"sessionUpdate": "notice", "severity": "warning", "title": "LLM retry 1/3"},
    "compaction_update": {"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "in_progress"},
    "compaction_summary_chunk": {
        "sessionUpdate": "compaction_summary_chunk",
        "compactionId": "c1",
        "content": {"type": "text", "text": "so far"},
    },
}  # fmt: skip
ADVERTISED = {
    "session.notices": {"session": {"notices": {}}},
    "session.compaction": {"session": {"compaction": {}}},
}


def update(kind: str) -> Any:
    return decode_strict(schema.SessionUpdate, UPDATES[kind])


def caps(wire: dict[str, Any]) -> schema.ClientCapabilities:
    return decode_strict(schema.ClientCapabilities, wire)


@pytest.mark.parametrize("kind", GATES)
def test_sent_to_a_client_that_advertised_it(kind: str) -> None:
    gate = UpdateGate(caps(ADVERTISED[GATES[kind]]))
    assert to_builtins(gate(update(kind))) == UPDATES[kind]


@pytest.mark.parametrize("kind", GATES)
@pytest.mark.parametrize(
    "wire",
    [
        {},
        {"session": {}},
        {"session": {"notices": None, "compaction": None}},
        {"fs": {"readTextFile": True}},
    ],
    ids=["nothing", "empty session", "nulls", "other capabilities"],
)
def test_withheld_from_a_client_that_did_not(kind: str, wire: dict[str, Any]) -> None:
    sent = UpdateGate(caps(wire))(update(kind))
    if kind == "notice":  # the schema's advice: surface it another way
        assert to_builtins(sent) == {
            "sessionUpdate": "agent_thought_chunk",
            "content": {"type": "text", "text": "[notice] LLM retry 1/3\n"},
        }
    else:
        assert sent is None


def test_one_capability_does_not_open_the_other_gate() -> None:
    gate = UpdateGate(caps(ADVERTISED["session.notices"]))
    assert gate(update("compaction_update")) is None
    assert gate(update("notice")) is not None


def test_ungated_updates_always_pass_even_as_wire_dicts() -> None:
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}
    assert UpdateGate()(chunk) is chunk
    assert UpdateGate()(decode_strict(schema.SessionUpdate, chunk)) is not None


FINISHED = {
    "sessionUpdate": "compaction_update",
    "compactionId": "c1",
    "status": "completed",
    "summary": [{"type": "text", "text": "the summary"}],
    "_meta": {
        "agentao.cn/compaction": {"detail": "12.1k -> 5.2k tokens: 3 earlier turns summarized"}
    },
}


def test_a_finished_compaction_is_a_notice_for_notice_clients_and_nothing_else() -> None:
    finished = decode_strict(schema.SessionUpdate, FINISHED)
    notice = UpdateGate(caps(ADVERTISED["session.notices"]))(finished)
    assert to_builtins(notice) == {
        "sessionUpdate": "notice",
        "severity": "info",
        "title": "Context compacted",
        "description": "12.1k -> 5.2k tokens: 3 earlier turns summarized",
    }
    assert UpdateGate(caps({}))(finished) is None  # never a thought
    assert UpdateGate(caps({}))(FINISHED) is None  # as a wire dict too
    both = UpdateGate(caps({"session": {"compaction": {}, "notices": {}}}))
    assert both(finished) is finished


def test_a_replayed_update_gets_no_fallback() -> None:
    gate = UpdateGate(caps(ADVERTISED["session.notices"]))
    assert gate(decode_strict(schema.SessionUpdate, FINISHED), live=False) is None
    assert gate(update("notice"), live=False) is not None  # advertised: itself
    assert UpdateGate(caps({}))(update("notice"), live=False) is None
