"""Which call a child belongs to, and grandchildren (issue 25): our agent names the
parent's tool call in each `subagent_update` (`_meta["agentao.cn/parentToolCallId"]`),
so the gateway's view draws parallel children under their own calls; a child's child is
nested under it. Our agent, scripted: a response with `match` answers the child whose
task names that word."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import connect

from agentao.gateway.views import fold
from agentao.store.gateway_records import TaskEvent
from tests.gateway.conftest import scripted_spec
from tests.gateway.test_tasks import frames, start_task

pytestmark = pytest.mark.timeout(60)

PARENT_CALL = "agentao.cn/parentToolCallId"


def task(word: str, title: str) -> dict[str, Any]:
    arguments = {"description": title, "prompt": f"{word}: do it"}
    return {"id": f"t-{word}", "name": "task", "arguments": arguments}


TWO_AT_ONCE = [
    {"tool_calls": [task("alpha", "first"), task("beta", "second")]},
    {"match": "alpha", "text": "alpha words"},
    {"match": "beta", "text": "beta words"},
    {"text": "parent done"},
]


def view_of(gw: Any, conversation_id: str) -> list[dict[str, Any]]:
    with gw.http() as http:
        return http.get(f"/v1/conversations/{conversation_id}/view").json()["items"]


@pytest.mark.parametrize("protocol", [None, 2], ids=["v1", "v2"])
def test_parallel_children_are_drawn_under_their_own_calls(
    gateway_factory, tmp_path: Path, protocol: int | None
) -> None:
    gw = gateway_factory(agents=(scripted_spec(tmp_path, TWO_AT_ONCE, protocol=protocol),))
    started = start_task(gw, "two at once")
    with connect(gw.ws_url(started["stream_url"])) as ws:
        seen = frames(ws)
    assert seen[-1]["type"] == "task-ended"
    news = [
        f["update"]
        for f in seen
        if f["type"] == "task-running" and f["update"]["sessionUpdate"] == "subagent_update"
    ]
    calls = {u["sessionId"]: u["_meta"][PARENT_CALL] for u in news}
    items = view_of(gw, started["conversation_id"])
    tools = {i["title"]: i["toolCallId"] for i in items if i["kind"] == "tool_call"}
    kids = {i["title"]: i for i in items if i["kind"] == "subagent"}
    assert set(kids) == {"first", "second"}
    for title, word in (("first", "alpha"), ("second", "beta")):
        kid = kids[title]
        assert kid["toolCallId"] == tools[f"Subagent: {title}"] == calls[kid["sessionId"]]
        said = [i["text"] for i in kid["items"] if i["kind"] == "message"]
        assert said == [f"{word} words"]


NESTED = [
    {"tool_calls": [task("alpha", "outer")]},
    {"match": "alpha", "tool_calls": [task("beta", "inner")]},
    {"match": "beta", "text": "grandchild words"},
    {"match": "alpha", "text": "child words"},
    {"text": "parent done"},
]


def nesting_gateway(gateway_factory: Any, tmp_path: Path, protocol: int | None = None) -> Any:
    spec = scripted_spec(tmp_path, NESTED, protocol=protocol)
    return gateway_factory(agents=(replace(spec, env=(*spec.env, DEPTH_TWO)),))


DEPTH_TWO = ("AGENTAO_SUBAGENT_DEPTH", "2")


@pytest.mark.parametrize("protocol", [None, 2], ids=["v1", "v2"])
def test_a_grandchild_is_nested_under_its_parent_child(
    gateway_factory, tmp_path: Path, protocol: int | None
) -> None:
    gw = nesting_gateway(gateway_factory, tmp_path, protocol)
    started = start_task(gw, "nest it")
    with connect(gw.ws_url(started["stream_url"])) as ws:
        assert frames(ws)[-1]["type"] == "task-ended"
    items = view_of(gw, started["conversation_id"])
    (outer,) = [i for i in items if i["kind"] == "subagent"]
    assert outer["title"] == "outer"
    (inner,) = [i for i in outer["items"] if i["kind"] == "subagent"]
    assert inner["title"] == "inner"
    assert inner["state"] == {"state": "idle", "stopReason": "end_turn"}
    (call,) = [i for i in outer["items"] if i["kind"] == "tool_call"]
    assert call["title"] == "Subagent: inner" and inner["toolCallId"] == call["toolCallId"]
    assert [i["text"] for i in inner["items"] if i["kind"] == "message"] == ["grandchild words"]
    said = [i["text"] for i in outer["items"] if i["kind"] == "message"]
    assert said == ["child words"]


def test_the_view_takes_the_call_the_agent_names_over_its_guess() -> None:
    """Children announced out of their calls' order (nothing in the wire forbids it): the
    named call wins; a guess would put the second call's child under the first."""
    updates = [
        {"sessionUpdate": "tool_call", "toolCallId": "a", "title": "A", "status": "in_progress"},
        {"sessionUpdate": "tool_call", "toolCallId": "b", "title": "B", "status": "in_progress"},
        _news("kid-b", "b"),
        _news("kid-a", "a"),
    ]
    frames = [TaskEvent("t1", 1, "task-started", 0.0, {"prompt": []})]
    frames += [
        TaskEvent("t1", n, "task-running", 0.0, {"update": u}) for n, u in enumerate(updates, 2)
    ]
    kids = {
        i["sessionId"]: i["toolCallId"] for i in fold(frames).items() if i["kind"] == "subagent"
    }
    assert kids == {"kid-a": "a", "kid-b": "b"}


def _news(child: str, call: str) -> dict[str, Any]:
    return {
        "sessionUpdate": "subagent_update",
        "sessionId": child,
        "title": child,
        "state": {"state": "running"},
        "_meta": {PARENT_CALL: call},
    }
