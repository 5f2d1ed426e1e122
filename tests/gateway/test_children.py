"""Subagents through the gateway (issue 25): the gateway's client opts in, so a child's
updates are frames of its parent's running task, each naming the child
(`childSessionId`); a child's permission question reaches the person on the parent's task
stream; the OpenAI faces answer with the parent's words only. Our agent, scripted: a
response with `match` answers the child whose task names that word."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from websockets.sync.client import connect

from tests.gateway.acp_peers import SdkPeer
from tests.gateway.conftest import scripted_spec
from tests.gateway.test_tasks import frames, start_task
from tests.waiting import until as wait_until

pytestmark = pytest.mark.timeout(60)

WRITE = {"name": "write_file", "arguments": {"file_path": "kid.txt", "content": "x"}}  # asks


def task(word: str, title: str) -> dict[str, Any]:
    arguments = {"description": title, "prompt": f"{word}: do it"}
    return {"id": f"t-{word}", "name": "task", "arguments": arguments}


DELEGATE = [
    {"tool_calls": [task("alpha", "survey")]},
    {"match": "alpha", "text": "the child's words"},
    {"text": "parent done"},
]
ASKING_CHILD = [
    {"tool_calls": [task("beta", "scribe")]},
    {"match": "beta", "tool_calls": [WRITE]},
    {"match": "beta", "text": "child wrote"},
    {"text": "parent done"},
]


def gateway(gateway_factory, tmp_path: Path, script: list[dict[str, Any]], protocol=None):
    return gateway_factory(agents=(scripted_spec(tmp_path, script, protocol=protocol),))


def running(seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in seen if f["type"] == "task-running"]


@pytest.mark.parametrize("protocol", [None, 2], ids=["v1", "v2"])
def test_a_childs_updates_are_frames_of_the_parent_task_naming_the_child(
    gateway_factory, tmp_path: Path, protocol: int | None
) -> None:
    gw = gateway(gateway_factory, tmp_path, DELEGATE, protocol)
    started = start_task(gw, "delegate it")
    with connect(gw.ws_url(started["stream_url"])) as ws:
        seen = frames(ws)
    assert seen[-1]["type"] == "task-ended"
    announced = [f for f in running(seen) if f["update"]["sessionUpdate"] == "subagent_update"]
    child = announced[0]["update"]["sessionId"]
    assert announced[0]["update"]["title"] == "survey"
    assert "childSessionId" not in announced[0]  # the announcement is the parent's own
    childs = [f for f in running(seen) if f.get("childSessionId") == child]
    text = [f["update"]["content"]["text"] for f in childs if "content" in f["update"]]
    assert "the child's words" in "".join(text)
    parents = [f for f in running(seen) if "childSessionId" not in f]
    said = "".join(
        f["update"]["content"]["text"]
        for f in parents
        if f["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    assert said == "parent done"


def test_a_chat_completion_answers_with_the_parents_words_only(
    gateway_factory, tmp_path: Path
) -> None:
    gw = gateway(gateway_factory, tmp_path, DELEGATE)
    reply = gw.openai().chat.completions.create(
        model="agentao", messages=[{"role": "user", "content": "delegate it"}]
    )
    assert reply.choices[0].message.content == "parent done"


@pytest.mark.parametrize("protocol", [None, 2], ids=["v1", "v2"])
def test_a_childs_question_reaches_the_person_on_the_parent_task(
    gateway_factory, tmp_path: Path, protocol: int | None
) -> None:
    gw = gateway(gateway_factory, tmp_path, ASKING_CHILD, protocol)
    started = start_task(gw, "delegate it", permission_policy="ask")
    with connect(gw.ws_url(started["stream_url"])) as ws:
        seen = []
        for message in ws:
            frame = json.loads(message)
            seen.append(frame)
            if frame["type"] == "permission-request":
                break
        question = seen[-1]
        announced = next(
            f for f in running(seen) if f["update"]["sessionUpdate"] == "subagent_update"
        )
        assert question["childSessionId"] == announced["update"]["sessionId"]
        allow = next(o for o in question["options"] if o["kind"] == "allow_once")
        answer = {"type": "permission-response", "requestId": question["requestId"]}
        ws.send(json.dumps({**answer, "optionId": allow["optionId"]}))
        seen += frames(ws)
    verdict = next(f for f in seen if f["type"] == "permission-response")
    assert (verdict["by"], verdict["approved"]) == ("human", True)
    assert verdict["childSessionId"] == question["childSessionId"]
    assert seen[-1]["type"] == "task-ended"
    assert (tmp_path / "work" / "kid.txt").read_text() == "x"
    with gw.http() as http:
        view = http.get(f"/v1/conversations/{started['conversation_id']}/view").json()
    asked = next(i for i in view["items"] if i["kind"] == "permission")
    assert asked["childSessionId"] == question["childSessionId"]
    child = next(i for i in view["items"] if i["kind"] == "subagent")
    assert [i["title"] for i in child["items"] if i["kind"] == "tool_call"] == ["Write kid.txt"]
    assert [i["title"] for i in view["items"] if i["kind"] == "tool_call"] == ["Subagent: scribe"]


def test_cancelling_the_parent_task_ends_the_child_asking(gateway_factory, tmp_path: Path) -> None:
    gw = gateway(gateway_factory, tmp_path, ASKING_CHILD)
    started = start_task(gw, "delegate it", permission_policy="ask")
    with connect(gw.ws_url(started["stream_url"])) as ws:
        for message in ws:
            if json.loads(message)["type"] == "permission-request":
                break
        ws.send(json.dumps({"type": "cancel"}))
        rest = frames(ws)
    assert rest[-1]["type"] == "task-ended" and rest[-1]["stopReason"] == "cancelled"
    verdict = next(f for f in rest if f["type"] == "permission-response")
    assert verdict["by"] == "cancelled" and "childSessionId" in verdict
    ends = [f["update"] for f in running(rest) if f["update"]["sessionUpdate"] == "subagent_update"]
    assert ends[-1]["state"]["state"] == "idle"
    assert not (tmp_path / "work" / "kid.txt").exists()


async def test_a_remote_acp_client_is_told_only_the_parents_words(
    gateway_factory, tmp_path: Path
) -> None:
    gw = gateway(gateway_factory, tmp_path, DELEGATE)
    peer = await SdkPeer.connect(f"http://127.0.0.1:{gw.port}/acp")
    try:
        await peer.initialize()
        cwd = gw.config.agents[0].cwd
        sid = (await peer.conn.new_session(cwd=cwd, mcp_servers=[])).session_id
        done = await peer.conn.prompt(session_id=sid, prompt=[text_block("delegate it")])
        assert done.stop_reason == "end_turn"
        # The SDK handles each update in a task of its own and the reply at once: wait for them.
        await wait_until(lambda: peer.texts().endswith("parent done"), "the parent's answer")
        assert peer.texts() == "parent done"
    finally:
        await peer.close()


def test_the_view_folds_a_child_as_an_item_of_the_parent_turn(
    gateway_factory, tmp_path: Path
) -> None:
    gw = gateway(gateway_factory, tmp_path, DELEGATE)
    started = start_task(gw, "delegate it")
    with connect(gw.ws_url(started["stream_url"])) as ws:
        frames(ws)
    with gw.http() as http:
        view = http.get(f"/v1/conversations/{started['conversation_id']}/view").json()
    items = view["items"]
    child = next(i for i in items if i["kind"] == "subagent")
    assert child["title"] == "survey" and child["turn"] == started["id"]
    assert child["state"] == {"state": "idle", "stopReason": "end_turn"}
    said = [i["text"] for i in child["items"] if i["kind"] == "message"]
    assert said == ["the child's words"]
    (call,) = [i for i in items if i["kind"] == "tool_call"]
    assert child["toolCallId"] == call["toolCallId"]
    parents = [i["text"] for i in items if i["kind"] == "message" and i["role"] == "agent"]
    assert parents == ["parent done"]


def test_an_anthropic_message_answers_with_the_parents_words_only(
    gateway_factory, tmp_path: Path
) -> None:
    gw = gateway(gateway_factory, tmp_path, DELEGATE)
    body = {
        "model": "agentao",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "delegate it"}],
    }
    with gw.http() as http:
        reply = http.post("/v1/messages", json=body)
    assert reply.status_code == 200, reply.text
    text = [b["text"] for b in reply.json()["content"] if b["type"] == "text"]
    assert text == ["parent done"]
