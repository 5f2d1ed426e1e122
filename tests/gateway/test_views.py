"""The web UI's data (gateway/views.py): a conversation's stored frames folded once, in
Python, through the client's fold; and the raw update still passing through unchanged.

The agent is `raw_agent.py` (not ours) behind a real gateway: its "steps" turn sends one
tool call three times (pending, in_progress with a diff, completed with output), a plan
and a usage update, with vendor fields no schema knows.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import connect

from agentao.gateway.config import AgentSpec
from tests.gateway.acp_peers import RawPeer, reply_to, until
from tests.gateway.conftest import LiveGateway
from tests.gateway.raw_agent import STEPS_CALL, STEPS_OUTPUT, STEPS_PLAN
from tests.gateway.test_tasks import frames

RAW_AGENT = Path(__file__).with_name("raw_agent.py")
DIFF_LINES = ["@@ -1,2 +1,2 @@", "-remember the milk", "+remember the oat milk", " and the bread"]
TOOL_ITEM = {
    "kind": "tool_call",
    "toolCallId": STEPS_CALL,
    "title": "Edit notes.txt",  # announced once, kept through two updates that lack it
    "toolKind": "edit",
    "status": "completed",
    "diffs": [{"path": "notes.txt", "created": False, "lines": DIFF_LINES}],
    "output": STEPS_OUTPUT,
    "terminals": [],
    "input": {},
    "exitCode": None,
}


@pytest.fixture
def raw_gateway(gateway_factory: Any, tmp_path: Path) -> LiveGateway:
    spec = AgentSpec("raw", (sys.executable, str(RAW_AGENT)), cwd=str(tmp_path))
    return gateway_factory(agents=(spec,))


def run_steps(gw: LiveGateway) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Start the "steps" turn and watch its task stream to the end: (task, frames)."""
    with gw.http() as http:
        reply = http.post("/v1/tasks", json={"agent": "raw", "prompt": "steps please"})
    assert reply.status_code == 201, reply.text
    task = reply.json()
    with connect(gw.ws_url(task["stream_url"])) as ws:
        return task, frames(ws)


def view_of(gw: LiveGateway, conversation_id: str) -> dict[str, Any]:
    with gw.http() as http:
        reply = http.get(f"/v1/conversations/{conversation_id}/view")
    assert reply.status_code == 200, reply.text
    return reply.json()


def by_kind(items: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [item for item in items if item["kind"] == kind]


def test_a_tool_call_updated_three_times_is_folded_once(raw_gateway: LiveGateway) -> None:
    task, _ = run_steps(raw_gateway)
    view = view_of(raw_gateway, task["conversation_id"])
    items = view["items"]
    assert view["running"] == []
    (tool,) = by_kind(items, "tool_call")  # one item for the three updates
    assert tool == {"id": tool["id"], "turn": task["id"], **TOOL_ITEM}
    plan = next(item for item in items if item["id"] == "plan")
    assert plan["entries"] == STEPS_PLAN
    usage = next(item for item in items if item["id"] == "usage")["usage"]
    assert (usage["used"], usage["size"]) == (5000, 100000)
    (turn,) = by_kind(items, "turn")
    assert (turn["prompt"], turn["state"], turn["stopReason"]) == (
        "steps please",
        "ended",
        "end_turn",
    )
    assert turn["usage"]["inputTokens"] == 12  # the agent's own count, from task-ended
    (message,) = [m for m in by_kind(items, "message") if m["role"] == "agent"]
    assert message["text"] == "raw says hi (text)"


def test_the_live_view_stream_upserts_to_the_same_items(raw_gateway: LiveGateway) -> None:
    """What the web UI is sent live (keyed upserts) adds up to what GET answers."""
    task, _ = run_steps(raw_gateway)
    shown: dict[str, dict[str, Any]] = {}
    with connect(raw_gateway.ws_url(f"/v1/tasks/{task['id']}/view")) as ws:
        for message in ws:
            frame = json.loads(message)
            for item in frame["items"] if frame["type"] == "view" else ():
                old = shown.get(item["id"], {})
                if "append" in item:  # a message that grew: its new text only
                    item = {**old, **item, "text": old["text"] + item.pop("append")}
                shown[item["id"]] = {**old, **item}
    items = view_of(raw_gateway, task["conversation_id"])["items"]
    assert shown == {item["id"]: item for item in items}
    statuses = {item["status"] for item in shown.values() if item["kind"] == "tool_call"}
    assert statuses == {"completed"}


def test_unknown_update_fields_still_reach_the_task_stream(raw_gateway: LiveGateway) -> None:
    """Decoded once for the fold; passed through exactly as sent to the stream's readers."""
    _, seen = run_steps(raw_gateway)
    updates = [f["update"] for f in seen if f["type"] == "task-running"]
    tool = [u for u in updates if u.get("toolCallId") == STEPS_CALL]
    assert [u.get("x_vendor") for u in tool] == [{"step": 1}, None, {"step": 3}]
    assert {"sessionUpdate": "vendor_thing", "data": [1, 2, 3]} in updates
    chunk = next(u for u in updates if u["sessionUpdate"] == "agent_message_chunk")
    assert chunk["x_vendor"] == {"mood": "odd"}


async def test_unknown_update_fields_still_reach_a_remote_client(raw_gateway: LiveGateway) -> None:
    peer = RawPeer(f"http://127.0.0.1:{raw_gateway.port}/agents/raw/acp")
    try:
        assert (await peer.initialize()).status_code == 200
        async with peer.stream() as events:
            cwd = raw_gateway.config.agents[0].cwd
            new_id, _ = await peer.post("session/new", {"cwd": cwd, "mcpServers": []})
            sid = (await until(events, reply_to(new_id)))[-1].message["result"]["sessionId"]
        async with peer.stream(sid) as events:
            prompt = [{"type": "text", "text": "steps please"}]
            prompt_id, _ = await peer.post(
                "session/prompt", {"sessionId": sid, "prompt": prompt}, session=sid
            )
            seen = await until(events, reply_to(prompt_id))
    finally:
        await peer.close()
    updates = [e.message["params"]["update"] for e in seen if "method" in e.message]
    tool = [u for u in updates if u.get("toolCallId") == STEPS_CALL]
    assert [u.get("x_vendor") for u in tool] == [{"step": 1}, None, {"step": 3}]
    assert {"sessionUpdate": "vendor_thing", "data": [1, 2, 3]} in updates
