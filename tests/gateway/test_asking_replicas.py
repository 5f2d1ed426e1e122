"""The agent's `ask_user` on replicas (issue 25; asking.py): a question asked by a turn
on replica A is listed on B (it is in the log) and answered through B, over HTTP (the
holder step passes `POST /v1/questions/{id}` to A) and on a task stream watched on B (B
passes the answer on); another key's answer is refused there too. Two real gateway
processes on one real PostgreSQL database, our agent scripted."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets.sync.client as ws_client

from tests.gateway.test_replicas import ALICE, BOB, KEYS, Replicas, _frames_until, _until
from tests.postgres import PostgresServer

pytestmark = pytest.mark.timeout(120)


def ask(word: str) -> list[dict[str, Any]]:
    call = {"id": f"ask-{word}", "name": "ask_user", "arguments": {"question": f"{word}?"}}
    return [{"match": word, "tool_calls": [call]}, {"match": word, "text": f"{word} done"}]


@pytest.fixture
def replicas(tmp_path: Path, postgres_server: PostgresServer) -> Iterator[Replicas]:
    store = postgres_server.create_database()
    with Replicas.pair(tmp_path, store, server=KEYS, script=ask("first") + ask("second")) as pair:
        yield pair


def questions(url: str, key: str) -> list[dict[str, Any]]:
    auth = {"Authorization": f"Bearer {key}"}
    return httpx.get(f"{url}/v1/questions", headers=auth).json()["data"]


def test_a_question_asked_on_one_replica_is_answered_through_another(
    replicas: Replicas,
) -> None:
    a, b = replicas.started
    auth = {"Authorization": f"Bearer {ALICE}"}
    started = httpx.post(
        f"{a.url}/v1/tasks", json={"agent": "agentao", "prompt": "first"}, headers=auth
    ).json()
    asked = _until(lambda: questions(b.url, ALICE), "B lists A's question")
    assert [(q["taskId"], q["question"]) for q in asked] == [(started["id"], "first?")]
    assert questions(b.url, BOB) == []  # another key's question is not listed...
    path = f"{b.url}/v1/questions/{asked[0]['requestId']}"
    bob = httpx.post(path, json={"answer": "no"}, headers={"Authorization": f"Bearer {BOB}"})
    assert bob.status_code == 404  # ...nor answered
    assert httpx.post(path, json={"answer": "amber"}, headers=auth).status_code == 200
    events = f"{a.url}/v1/tasks/{started['id']}/events"
    _until(lambda: any(e["type"] == "task-ended" for e in _events(events, auth)), "A ended")
    [answered] = [e for e in _events(events, auth) if e["type"] == "question-response"]
    assert (answered["answer"], answered["by"]) == ("amber", "human")

    second = httpx.post(
        f"{a.url}/v1/tasks", json={"agent": "agentao", "prompt": "second"}, headers=auth
    ).json()
    key = "agentao.key." + base64.urlsafe_b64encode(ALICE.encode()).decode().rstrip("=")
    url = f"ws://127.0.0.1:{b.port}/v1/tasks/{second['id']}/stream"
    with ws_client.connect(url, subprotocols=["agentao.v1", key]) as socket:
        question = _frames_until(socket, "question-request")[-1]
        reply = {"type": "question-response", "requestId": question["requestId"]}
        socket.send(json.dumps({**reply, "answer": "jade"}))
        rest = _frames_until(socket, "task-ended")
    [answered] = [f for f in rest if f["type"] == "question-response"]
    assert answered["answer"] == "jade"


def _events(url: str, auth: dict[str, str]) -> list[dict[str, Any]]:
    return httpx.get(url, headers=auth).json()["data"]
