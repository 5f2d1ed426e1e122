"""Edit and resend over HTTP (gateway/forks.py): `POST /v1/conversations/{id}/fork
{before_task}` makes a new conversation on the agent's fork of the session before that turn,
so the next model request holds exactly the turns before it. A real gateway, our agent over
real pipes, and the fake LLM, whose recorded requests show what the model was told."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from websockets.sync.client import connect

from agentao.gateway.auth import WS_PROTOCOL
from agentao.gateway.config import AgentSpec, ApiKey
from tests.e2e.test_agent_fork import _user_texts
from tests.fakes import sdk_agent
from tests.fakes.fake_llm import FakeLLM
from tests.gateway.conftest import LiveGateway, key_protocol, llm_spec


def _key(name: str) -> ApiKey:
    return ApiKey(name, hashlib.sha256(f"sk-{name}".encode()).hexdigest(), ceiling="all")


def _turn(gw: LiveGateway, http: httpx.Client, prompt: str, conv: str | None) -> dict[str, Any]:
    body = {"agent": "agentao", "prompt": prompt, "conversation_id": conv}
    task = http.post("/v1/tasks", json=body)
    assert task.status_code == 201, task.text
    secret = http.headers["Authorization"].removeprefix("Bearer ")
    protocols = [WS_PROTOCOL, key_protocol(secret)]
    with connect(gw.ws_url(task.json()["stream_url"]), subprotocols=protocols) as ws:  # type: ignore[arg-type]
        for _ in ws:  # read until the turn ends (the server closes the stream)
            pass
    return task.json()


def _turn_the_agent_dies_in(gw: LiveGateway, http: httpx.Client, prompt: str, conv: str) -> None:
    """A turn whose agent process is killed once the answer streams: no turn is stored
    there, while the conversation keeps the task (ended in error)."""
    task = http.post(
        "/v1/tasks", json={"agent": "agentao", "prompt": prompt, "conversation_id": conv}
    )
    secret = http.headers["Authorization"].removeprefix("Bearer ")
    protocols = [WS_PROTOCOL, key_protocol(secret)]
    with connect(gw.ws_url(task.json()["stream_url"]), subprotocols=protocols) as ws:  # type: ignore[arg-type]
        for message in ws:
            if "partial" in message and json.loads(message)["type"] != "task-started":
                os.kill(gw.agent_pid(), signal.SIGKILL)
                break
        for _ in ws:
            pass
    assert http.get(f"/v1/tasks/{task.json()['id']}").json()["status"] == "error"
    gw.wait_live()


def _gateway(factory: Callable[..., LiveGateway], llm: FakeLLM, tmp: Path) -> LiveGateway:
    return factory(agents=(llm_spec(tmp, llm.env()),), keys=(_key("alice"), _key("bob")))


def test_a_fork_before_turn_3_of_4_tells_the_model_turns_1_and_2_only(
    gateway_factory: Callable[..., LiveGateway], fake_llm: FakeLLM, tmp_path: Path
) -> None:
    gw = _gateway(gateway_factory, fake_llm, tmp_path)
    for n in range(1, 5):
        fake_llm.reply(f"answer {n}")
    fake_llm.reply("edited answer")
    with httpx.Client(base_url=gw.url, headers={"Authorization": "Bearer sk-alice"}) as alice:
        tasks = [_turn(gw, alice, "message 1", None)]
        conv = tasks[0]["conversation_id"]
        tasks += [_turn(gw, alice, f"message {n}", conv) for n in (2, 3, 4)]
        fork = alice.post(f"/v1/conversations/{conv}/fork", json={"before_task": tasks[2]["id"]})
        assert fork.status_code == 201, fork.text
        forked = fork.json()
        edited = _turn(gw, alice, "message 3, edited", forked["id"])
        source_tasks = alice.get(f"/v1/conversations/{conv}/tasks").json()["data"]
    assert forked["id"] != conv and edited["conversation_id"] == forked["id"]
    assert forked["forked_from"] == {"conversation_id": conv, "before_task": tasks[2]["id"]}
    told = fake_llm.requests[-1].body
    assert _user_texts(told) == ["message 1", "message 2", "message 3, edited"]
    said = " ".join(str(m.get("content")) for m in told["messages"])
    assert "answer 2" in said and "answer 3" not in said
    assert [t["prompt"] for t in source_tasks] == [f"message {n}" for n in range(1, 5)]


def test_a_task_the_agent_kept_no_turn_for_does_not_shift_the_fork(
    gateway_factory: Callable[..., LiveGateway], fake_llm: FakeLLM, tmp_path: Path
) -> None:
    gw = _gateway(gateway_factory, fake_llm, tmp_path)
    fake_llm.reply("answer 1")
    fake_llm.hang("partial")
    for answer in ("answer 3", "answer 4", "edited answer"):
        fake_llm.reply(answer)
    with httpx.Client(base_url=gw.url, headers={"Authorization": "Bearer sk-alice"}) as alice:
        conv = _turn(gw, alice, "message 1", None)["conversation_id"]
        _turn_the_agent_dies_in(gw, alice, "message 2", conv)
        _turn(gw, alice, "message 3", conv)
        fourth = _turn(gw, alice, "message 4", conv)
        # Read at once: a stream ends only once its task's row says so (one batch).
        tasks = alice.get(f"/v1/conversations/{conv}/tasks").json()["data"]
        fork = alice.post(f"/v1/conversations/{conv}/fork", json={"before_task": fourth["id"]})
        _turn(gw, alice, "message 4, edited", fork.json()["id"])
        lost = alice.post(f"/v1/conversations/{conv}/fork", json={"before_task": tasks[1]["id"]})
    assert [t["status"] for t in tasks] == ["ended", "error", "ended", "ended"]
    assert _user_texts(fake_llm.requests[-1].body) == [
        "message 1",
        "message 3",
        "message 4, edited",
    ]
    assert lost.status_code == 409 and lost.json()["error"]["code"] == "fork_point_not_found"


def test_only_the_owner_forks_and_bad_fork_points_are_refused(
    gateway_factory: Callable[..., LiveGateway], fake_llm: FakeLLM, tmp_path: Path
) -> None:
    gw = _gateway(gateway_factory, fake_llm, tmp_path)
    fake_llm.reply("answer")
    with (
        httpx.Client(base_url=gw.url, headers={"Authorization": "Bearer sk-alice"}) as alice,
        httpx.Client(base_url=gw.url, headers={"Authorization": "Bearer sk-bob"}) as bob,
    ):
        task = _turn(gw, alice, "alice's secret plan", None)
        conv, before = task["conversation_id"], {"before_task": task["id"]}
        theirs = bob.post(f"/v1/conversations/{conv}/fork", json=before)
        unknown = alice.post(f"/v1/conversations/{conv}/fork", json={"before_task": "task_x"})
        bad = alice.post(f"/v1/conversations/{conv}/fork", json={"before_task": "../x"})
        missing = alice.post(f"/v1/conversations/{conv}/fork", json={})
        mine = bob.get("/v1/conversations").json()["data"]
        owners = alice.post(f"/v1/conversations/{conv}/fork", json=before)
    assert theirs.status_code == 404 and theirs.json()["error"]["type"] == "not_found_error"
    assert theirs.json()["error"]["message"] == "no such conversation"  # as if none existed
    assert "secret" not in theirs.text
    assert owners.status_code == 201  # the same request, from its owner
    assert unknown.status_code == 404 and unknown.json()["error"]["param"] == "before_task"
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_id"
    assert missing.status_code == 400
    assert mine == []  # bob made nothing
    assert len(fake_llm.requests) == 1  # no refused fork reached the model


def test_an_agent_that_cannot_fork_at_a_turn_is_a_501(
    gateway_factory: Callable[..., LiveGateway], tmp_path: Path
) -> None:
    """A third-party agent (the official SDK's) advertises no fork at a turn: a fork at
    its end only would keep the very turn being edited, so nothing is asked of it."""
    spec = AgentSpec("sdk-agent", (sys.executable, sdk_agent.__file__), cwd=str(tmp_path))
    gw = gateway_factory(agents=(spec,), keys=(_key("alice"),))
    with httpx.Client(base_url=gw.url, headers={"Authorization": "Bearer sk-alice"}) as alice:
        body = {"agent": "sdk-agent", "prompt": "hi"}
        task = alice.post("/v1/tasks", json=body).json()
        fork = alice.post(
            f"/v1/conversations/{task['conversation_id']}/fork", json={"before_task": task["id"]}
        )
    assert fork.status_code == 501 and fork.json()["error"]["code"] == "fork_unsupported"
