"""The schema checker of the e2e tests (tests/schema_check.py) finds what it must."""

from __future__ import annotations

from tests.schema_check import check, check_all

V2_INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "result": {"protocolVersion": 2, "info": {"name": "a", "version": "1"}, "capabilities": {}},
}
V1_INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "result": {"protocolVersion": 1, "agentCapabilities": {"loadSession": True}},
}


def test_a_result_follows_its_versions_response_def() -> None:
    assert check(V2_INIT, 2, "initialize") == []
    assert check(V1_INIT, 1, "initialize") == []
    assert "root field 'agentCapabilities' not in InitializeResponse" in check(
        V1_INIT, 2, "initialize"
    )


def test_booleans_where_v2_wants_object_markers_are_caught() -> None:
    bad = {**V2_INIT, "result": {**V2_INIT["result"], "capabilities": {"session": True}}}
    assert any("session" in p for p in check(bad, 2, "initialize"))


def test_errors_requests_notifications_and_envelopes() -> None:
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}}
    assert check(error, 2)
    unsupported = {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": -32022, "message": "m", "data": {"requested": 0}},
    }
    assert any("supported" in p for p in check(unsupported, 2))
    request = {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/w"}}
    assert check(request, 2) == []
    assert any("mcpServers" in p for p in check(request, 1))  # required in v1
    update = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "s", "update": {"sessionUpdate": "plan", "entries": []}},
    }
    assert check(update, 1) == []
    assert check(update, 2) == ["update kind 'plan' not in the v2 schema"]  # v2: plan_update
    extra = {**request, "extra": 1}
    assert "envelope field 'extra'" in check(extra, 2)
    assert check_all([V2_INIT], [{"jsonrpc": "2.0", "id": 1, "method": "initialize"}], 2) == []


def test_a_v2_state_update_with_its_inner_fields_passes() -> None:
    update = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": "s",
            "update": {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"},
        },
    }
    assert check(update, 2) == []


def _idle(**fields: object) -> dict:
    update = {"sessionUpdate": "state_update", "state": "idle", **fields}
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "s", "update": update},
    }


def test_a_field_of_a_variant_inside_a_variant_is_known_and_others_are_not() -> None:
    error = {"code": -32603, "message": "m"}
    assert check(_idle(stopReason="error", error=error), 2) == []  # IdleStateUpdate's own union
    assert check(_idle(stopReason="end_turn", oops=1), 2) == [
        "update field 'oops' not in state_update"
    ]
