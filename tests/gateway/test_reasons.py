"""Every permission answer says why, and the agent is told exactly that: our agent puts the
reason in the tool's result ("rejected: …"), so no reject nobody made reads "by user"."""

from __future__ import annotations

import json
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

from agentao.gateway.config import Limits
from tests.gateway.conftest import LiveGateway
from tests.gateway.test_tasks import frames, start_task


def decision(seen: list[dict[str, Any]]) -> dict[str, Any]:
    return next(f for f in seen if f["type"] == "permission-response")


def tool_result(seen: list[dict[str, Any]]) -> str:
    """The text the agent gave as the tool's result (what the model reads)."""
    last = [f["toolCall"] for f in seen if f["type"] == "task-running" and "toolCall" in f][-1]
    assert last["status"] == "failed"
    return "".join(c["content"]["text"] for c in last["content"] if c["type"] == "content")


def run(gw: LiveGateway, prompt: str, **extra: Any) -> list[dict[str, Any]]:
    task = start_task(gw, prompt, **extra)
    with connect(gw.ws_url(task["stream_url"])) as ws:
        return frames(ws)


@pytest.mark.parametrize(
    ("policy", "reason"),
    [
        (
            None,
            "the gateway's permission policy for this request ('reject') approves no tool calls",
        ),
        (
            "reads",
            "the gateway's permission policy for this request ('reads') approves only read and "
            "search tools, not edit",
        ),
    ],
)
def test_a_policy_reject_names_the_policy(
    shared_gateway: LiveGateway, policy: str | None, reason: str
) -> None:
    extra = {"permission_policy": policy} if policy else {}
    seen = run(shared_gateway, "write the file", **extra)
    verdict = decision(seen)
    assert (verdict["by"], verdict["approved"], verdict["reason"]) == ("policy", False, reason)
    assert tool_result(seen) == f"rejected: {reason}"


def test_a_policy_approval_says_so_too(shared_gateway: LiveGateway) -> None:
    verdict = decision(run(shared_gateway, "read the notes", permission_policy="reads"))
    assert verdict["approved"] is True
    assert verdict["reason"].endswith("('reads') approves read and search tools")


def test_the_deadline_passing_with_nobody_answering_is_named(gateway_factory) -> None:
    gw = gateway_factory(limits=Limits(permission_deadline_seconds=0.25))
    seen = run(gw, "write the file", permission_policy="ask")
    verdict = decision(seen)
    reason = "nobody answered within 0.25 seconds (the gateway's permission deadline)"
    assert (verdict["by"], verdict["approved"], verdict["reason"]) == ("deadline", False, reason)
    assert tool_result(seen) == f"rejected: {reason}"


def _question(ws: ClientConnection) -> dict[str, Any]:
    return next(f for f in map(json.loads, ws) if f["type"] == "permission-request")


@pytest.mark.parametrize(
    ("channel", "who"),
    [
        ("web", "a person in the web UI"),
        ("http", "a person answering over HTTP"),
        ("stream", "a person watching the task stream"),
    ],
)
def test_a_person_is_named_with_the_way_they_answered(
    shared_gateway: LiveGateway, channel: str, who: str
) -> None:
    task = start_task(shared_gateway, "write the file", permission_policy="ask")
    with connect(shared_gateway.ws_url(task["stream_url"])) as ws:
        question = _question(ws)
        reject = next(o for o in question["options"] if o["kind"] == "reject_once")
        if channel == "stream":
            answer = {"type": "permission-response", "requestId": question["requestId"]}
            ws.send(json.dumps({**answer, "optionId": reject["optionId"]}))
        else:
            headers = {"X-Agentao-Client": "web"} if channel == "web" else {}
            with shared_gateway.http() as http:
                url = f"/v1/permissions/{question['requestId']}"
                reply = http.post(url, json={"optionId": None}, headers=headers)
            assert reply.status_code == 200, reply.text
        seen = frames(ws)
    verdict = decision(seen)
    reason = f"{who} chose {reject['name']}"
    assert (verdict["by"], verdict["approved"], verdict["reason"]) == ("human", False, reason)
    assert tool_result(seen) == f"rejected: {reason}"
