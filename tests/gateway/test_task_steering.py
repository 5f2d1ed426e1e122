"""Steering a running task (gateway/steer.py): a watcher's `steer` frame on the task stream
and `POST /v1/tasks/{id}/steer` send words to the running turn's agent; they land in the
task's frames (the agent's `user_message_chunk`), so every reader sees them. An agent that
does not steer, a task that is not running, bad words and another key's task are refused."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from agentao.gateway.config import AgentSpec, ApiKey, Limits
from tests.fakes.fake_llm import FakeLLM
from tests.gateway.conftest import LiveGateway, llm_spec
from tests.gateway.test_tasks import frames

pytestmark = pytest.mark.timeout(60)
RAW_AGENT = Path(__file__).with_name("raw_agent.py")  # an agent that does not steer


def _key(name: str) -> ApiKey:
    return ApiKey(name, hashlib.sha256(f"sk-{name}".encode()).hexdigest())


def start(gw: LiveGateway, prompt: str, key: str | None = None, **extra: Any) -> dict[str, Any]:
    with gw.http(key) as http:
        reply = http.post(
            "/v1/tasks", json={"agent": extra.pop("agent", "agentao"), "prompt": prompt, **extra}
        )
    assert reply.status_code == 201, reply.text
    return reply.json()


def next_of(ws: ClientConnection, kind: str) -> dict[str, Any]:
    return next(f for f in map(json.loads, ws) if f["type"] == kind)


def user_lines(seen: list[dict[str, Any]]) -> list[str]:
    return [
        f["update"]["content"]["text"]
        for f in seen
        if f["type"] == "task-running" and f["update"]["sessionUpdate"] == "user_message_chunk"
    ]


def test_a_watcher_steers_the_running_task(
    gateway_factory: Any, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    gw = gateway_factory(agents=(llm_spec(tmp_path, fake_llm.env()),))
    gate = fake_llm.hold("Working on it.")
    fake_llm.reply("Bye then.")
    task = start(gw, "do the thing")
    with connect(gw.ws_url(task["stream_url"])) as ws:
        fake_llm.wait_requests(1)  # the turn runs: its model request is held
        ws.send(json.dumps({"type": "steer", "text": "and then say bye"}))
        assert next_of(ws, "steered") == {"type": "steered", "outcome": "injected"}
        gate.set()
        seen = frames(ws)
    assert seen[-1]["type"] == "task-ended" and seen[-1]["stopReason"] == "end_turn"
    assert user_lines(seen) == ["and then say bye"]  # where the agent read them
    assert fake_llm.requests[1].body["messages"][-1] == {
        "role": "user",
        "content": "and then say bye",
    }
    with gw.http() as http:  # every reader: the stored frames too
        stored = http.get(f"/v1/tasks/{task['id']}/events").json()["data"]
        assert user_lines(stored) == ["and then say bye"]
        over = http.post(f"/v1/tasks/{task['id']}/steer", json={"text": "too late"})
    assert over.status_code == 409 and over.json()["error"]["code"] == "task_not_running"


def test_steering_over_http_and_bad_words(
    gateway_factory: Any, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    gw = gateway_factory(
        agents=(llm_spec(tmp_path, fake_llm.env()),), limits=Limits(max_request_bytes=2000)
    )
    gate = fake_llm.hold("Working on it.")
    fake_llm.reply("Fine.")
    task = start(gw, "do the thing")
    fake_llm.wait_requests(1)
    path = f"/v1/tasks/{task['id']}/steer"
    with gw.http() as http:
        empty = http.post(path, json={"text": "  "})
        assert empty.status_code == 400 and empty.json()["error"]["code"] == "invalid_value"
        assert http.post(path, json={"text": 3}).status_code == 400
        steered = http.post(path, json={"text": "use tabs"})
        assert steered.status_code == 200, steered.text
        assert steered.json()["outcome"] == "injected"
    with connect(gw.ws_url(task["stream_url"])) as ws:  # the frame has no body limit of its own
        ws.send(json.dumps({"type": "steer", "text": "é" * 1500}))
        error = next_of(ws, "error")
        assert error["code"] == "steering_too_large" and "max_request_bytes" in error["message"]
        gate.set()
        seen = frames(ws)
    assert user_lines(seen) == ["use tabs"]


def test_an_agent_that_does_not_steer_is_a_409(gateway_factory: Any, tmp_path: Path) -> None:
    spec = AgentSpec("raw", (sys.executable, str(RAW_AGENT)), cwd=str(tmp_path))
    gw = gateway_factory(agents=(spec,))
    task = start(gw, "edit please", agent="raw", permission_policy="ask")
    with connect(gw.ws_url(task["stream_url"])) as ws:
        question = next_of(ws, "permission-request")  # the turn waits for a human
        ws.send(json.dumps({"type": "steer", "text": "also this"}))
        assert next_of(ws, "error")["code"] == "steering_unsupported"
        with gw.http() as http:
            reply = http.post(f"/v1/tasks/{task['id']}/steer", json={"text": "also this"})
        assert reply.status_code == 409 and reply.json()["error"]["code"] == "steering_unsupported"
        ws.send(
            json.dumps(
                {
                    "type": "permission-response",
                    "requestId": question["requestId"],
                    "optionId": None,
                }
            )
        )
        seen = frames(ws)
    assert seen[-1]["type"] == "task-ended" and user_lines(seen) == []


def test_another_key_cannot_steer_my_task(
    gateway_factory: Any, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    gw = gateway_factory(
        agents=(llm_spec(tmp_path, fake_llm.env()),), keys=(_key("alice"), _key("bob"))
    )
    gate = fake_llm.hold("Working on it.")
    task = start(gw, "do the thing", key="sk-alice")
    fake_llm.wait_requests(1)
    with gw.http("sk-bob") as bob:
        refused = bob.post(f"/v1/tasks/{task['id']}/steer", json={"text": "rm -rf"})
    assert refused.status_code == 404
    url = gw.ws_url(task["stream_url"])
    with pytest.raises(InvalidStatus) as handshake:  # nor can he watch it to steer from there
        connect(url, additional_headers={"Authorization": "Bearer sk-bob"})
    assert handshake.value.response.status_code == 404
    with connect(url, additional_headers={"Authorization": "Bearer sk-alice"}) as ws:
        gate.set()
        seen = frames(ws)
    assert seen[-1]["type"] == "task-ended" and user_lines(seen) == []
    assert len(fake_llm.requests) == 1  # no words reached her turn
