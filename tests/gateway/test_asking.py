"""The agent's own questions (`ask_user`) at the gateway's desk (issue 25; asking.py).

Our agent, scripted to call `ask_user`, through a real gateway: the question is a
`question-request` frame of the task, answered over HTTP (`POST /v1/questions/{id}`)
or the task's WebSocket; the agent gets the answer, or "(user unavailable)" at the
deadline; only the owner may answer; a child's (a subagent's) names the child."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

from agentao.client.serving import ASK_USER_UNAVAILABLE
from agentao.gateway.config import ApiKey
from agentao.gateway.limits import Limits
from tests.gateway.conftest import LiveGateway, scripted_spec
from tests.gateway.test_children import task
from tests.gateway.test_tasks import frames, start_task

pytestmark = pytest.mark.timeout(60)

ASK = {"id": "ask-1", "name": "ask_user", "arguments": {"question": "which colour?"}}
ASKING = [{"tool_calls": [ASK]}, {"text": "painted it"}]
CURIOUS_CHILD = [
    {"tool_calls": [task("gamma", "painter")]},
    {"match": "gamma", "tool_calls": [ASK]},
    {"match": "gamma", "text": "child painted"},
    {"text": "parent done"},
]
ALICE = {"Authorization": "Bearer sk-alice"}


def _sha(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def until_question(ws: ClientConnection) -> list[dict[str, Any]]:
    """The frames up to and with the first `question-request`."""
    seen = []
    for message in ws:
        frame = json.loads(message)
        if frame["type"] != "ping":
            seen.append(frame)
        if frame["type"] == "question-request":
            return seen
    raise AssertionError(f"no question-request in {[f['type'] for f in seen]}")


def told(rest: list[dict[str, Any]]) -> str:
    """What the agent's ask_user tool returned, as its tool call's update says."""
    updates = [f["update"] for f in rest if f["type"] == "task-running"]
    done = [u for u in updates if u.get("toolCallId") == "ask-1" and u.get("status") == "completed"]
    assert done, updates
    return json.dumps(done[-1])


def answered(rest: list[dict[str, Any]]) -> dict[str, Any]:
    [verdict] = [f for f in rest if f["type"] == "question-response"]
    assert rest[-1]["type"] == "task-ended" and rest[-1]["stopReason"] == "end_turn", rest[-1]
    return verdict


@pytest.mark.parametrize("protocol", [None, 2], ids=["v1", "v2"])
def test_a_question_on_the_task_stream_is_answered_over_http(
    gateway_factory: Callable[..., LiveGateway], tmp_path: Path, protocol: int | None
) -> None:
    gw = gateway_factory(agents=(scripted_spec(tmp_path, ASKING, protocol=protocol),))
    started = start_task(gw, "paint it")
    with connect(gw.ws_url(started["stream_url"])) as ws:
        question = until_question(ws)[-1]
        assert question["question"] == "which colour?" and "childSessionId" not in question
        with gw.http() as http:
            path = f"/v1/questions/{question['requestId']}"
            reply = http.post(path, json={"answer": "cobalt blue"})
            assert reply.status_code == 200, reply.text
            late = http.post(path, json={"answer": "red"})  # the first answer won
            assert late.status_code == 404 and late.json()["error"]["code"] == "question_not_found"
        rest = frames(ws)
    verdict = answered(rest)
    assert verdict["requestId"] == question["requestId"]
    assert (verdict["answer"], verdict["by"]) == ("cobalt blue", "human")
    assert "cobalt blue" in told(rest)


def test_a_question_is_answered_on_the_tasks_websocket(
    gateway_factory: Callable[..., LiveGateway], tmp_path: Path
) -> None:
    gw = gateway_factory(agents=(scripted_spec(tmp_path, ASKING),))
    started = start_task(gw, "paint it")
    with connect(gw.ws_url(started["stream_url"])) as ws:
        question = until_question(ws)[-1]
        answer = {"type": "question-response", "requestId": question["requestId"]}
        ws.send(json.dumps({**answer, "answer": 7}))  # not text: refused, still open
        assert json.loads(ws.recv())["type"] == "error"
        ws.send(json.dumps({**answer, "answer": "green"}))
        rest = frames(ws)
    assert (answered(rest)["answer"], answered(rest)["by"]) == ("green", "human")
    assert "green" in told(rest)


def test_an_unanswered_question_ends_at_the_deadline_with_no_answer(
    gateway_factory: Callable[..., LiveGateway], tmp_path: Path
) -> None:
    limits = Limits(permission_deadline_seconds=0.5)
    gw = gateway_factory(agents=(scripted_spec(tmp_path, ASKING),), limits=limits)
    started = start_task(gw, "paint it")
    with connect(gw.ws_url(started["stream_url"])) as ws:
        until_question(ws)
        rest = frames(ws)
    verdict = answered(rest)
    assert (verdict["answer"], verdict["by"]) == (None, "deadline")
    assert ASK_USER_UNAVAILABLE in told(rest)


def test_an_answer_past_the_limit_is_refused_and_the_question_stays_open(
    gateway_factory: Callable[..., LiveGateway], tmp_path: Path
) -> None:
    gw = gateway_factory(
        agents=(scripted_spec(tmp_path, ASKING),), limits=Limits(max_answer_chars=10)
    )
    started = start_task(gw, "paint it")
    with connect(gw.ws_url(started["stream_url"])) as ws:
        question = until_question(ws)[-1]
        with gw.http() as http:
            path = f"/v1/questions/{question['requestId']}"
            long = http.post(path, json={"answer": "x" * 11})
            assert long.status_code == 413 and long.json()["error"]["code"] == "answer_too_long"
            assert http.post(path, json={}).status_code == 400  # no answer at all
            assert http.post(path, json={"answer": "teal"}).status_code == 200
        rest = frames(ws)
    assert answered(rest)["answer"] == "teal"


def test_another_key_cannot_answer_the_question(
    gateway_factory: Callable[..., LiveGateway], tmp_path: Path
) -> None:
    """Attack: Bob learns Alice's question id and answers it; it is not found for him
    (404, told apart from nothing), the agent never gets his words, Alice's answer wins."""
    keys = (ApiKey("alice", _sha("sk-alice")), ApiKey("bob", _sha("sk-bob")))
    gw = gateway_factory(agents=(scripted_spec(tmp_path, ASKING),), keys=keys)
    with gw.http("sk-alice") as http:
        reply = http.post("/v1/tasks", json={"agent": "agentao", "prompt": "paint it"})
    started = reply.json()
    with connect(gw.ws_url(started["stream_url"]), additional_headers=ALICE) as ws:
        question = until_question(ws)[-1]
        path = f"/v1/questions/{question['requestId']}"
        with gw.http("sk-bob") as bob:
            stolen = bob.post(path, json={"answer": "rm -rf /"})
            assert bob.get("/v1/questions").json()["data"] == []  # nor listed for him
            held = bob.post(f"{path}/presence")  # nor kept open by him
        assert stolen.status_code == 404, stolen.text
        assert stolen.json()["error"]["code"] == "question_not_found"
        assert held.status_code == 404 and held.json()["error"]["code"] == "question_not_found"
        with gw.http("sk-alice") as alice:
            assert alice.post(path, json={"answer": "ochre"}).status_code == 200
        rest = frames(ws)
    assert answered(rest)["answer"] == "ochre"
    assert "rm -rf" not in told(rest)


def test_a_childs_question_names_the_child(
    gateway_factory: Callable[..., LiveGateway], tmp_path: Path
) -> None:
    gw = gateway_factory(agents=(scripted_spec(tmp_path, CURIOUS_CHILD),))
    started = start_task(gw, "delegate it")
    with connect(gw.ws_url(started["stream_url"])) as ws:
        seen = until_question(ws)
        question = seen[-1]
        announced = next(
            f["update"]
            for f in seen
            if f["type"] == "task-running" and f["update"]["sessionUpdate"] == "subagent_update"
        )
        assert question["childSessionId"] == announced["sessionId"]
        assert question["childTitle"] == "painter"
        answer = {"type": "question-response", "requestId": question["requestId"]}
        ws.send(json.dumps({**answer, "answer": "violet"}))
        rest = frames(ws)
    verdict = answered(rest)
    assert (verdict["answer"], verdict["childSessionId"]) == ("violet", question["childSessionId"])
    assert "violet" in told(rest)


def test_a_question_still_open_when_its_turn_ends_is_closed_in_the_log_ahead_of_the_end(
    gateway_factory: Callable[..., LiveGateway], tmp_path: Path
) -> None:
    """Whichever the event loop gets to first, the question's end or the turn's: here the
    asking never hears of the cancel (shielded), as when it is scheduled after the turn
    ended; the log still closes the question, `cancelled`, before the turn's end frame."""
    limits = Limits(permission_deadline_seconds=120)
    gw = gateway_factory(agents=(scripted_spec(tmp_path, ASKING),), limits=limits)
    desk = gw.gateway.questions
    ask = desk._ask

    async def deaf(*args: Any) -> str:
        return await asyncio.shield(ask(*args))

    desk._ask = deaf
    started = start_task(gw, "paint it")
    with connect(gw.ws_url(started["stream_url"])) as ws:
        question = until_question(ws)[-1]
        ws.send(json.dumps({"type": "cancel"}))
        rest = frames(ws)
    assert rest[-1]["type"] == "task-ended" and rest[-1]["stopReason"] == "cancelled"
    [verdict] = [f for f in rest if f["type"] == "question-response"]
    assert (verdict["requestId"], verdict["by"]) == (question["requestId"], "cancelled")
    with gw.http() as http:
        assert http.get("/v1/questions").json()["data"] == []


def test_a_question_open_when_the_turn_is_cancelled_ends_cancelled(
    gateway_factory: Callable[..., LiveGateway], tmp_path: Path
) -> None:
    gw = gateway_factory(agents=(scripted_spec(tmp_path, ASKING),))
    started = start_task(gw, "paint it")
    with connect(gw.ws_url(started["stream_url"])) as ws:
        question = until_question(ws)[-1]
        ws.send(json.dumps({"type": "cancel"}))
        rest = frames(ws)
    assert rest[-1]["type"] == "task-ended" and rest[-1]["stopReason"] == "cancelled"
    [verdict] = [f for f in rest if f["type"] == "question-response"]
    assert (verdict["requestId"], verdict["answer"], verdict["by"]) == (
        question["requestId"],
        None,
        "cancelled",
    )
    with gw.http() as http:
        assert http.get("/v1/questions").json()["data"] == []
        late = http.post(f"/v1/questions/{question['requestId']}", json={"answer": "x"})
    assert late.status_code == 404
