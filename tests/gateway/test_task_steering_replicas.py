"""Steering a task that runs on another replica (gateway/steer.py): `POST .../steer` is passed
to the replica running it by the holder step, and a watcher's `steer` frame on another
replica's stream goes there too; another key's words go nowhere."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import websockets.sync.client as ws_client

from tests.gateway.test_replicas import ALICE, BOB, KEYS, WRITE_TWICE, Replicas, _frames_until
from tests.postgres import PostgresServer

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def keyed_replicas(tmp_path: Path, postgres_server: PostgresServer) -> Iterator[Replicas]:
    store = postgres_server.create_database()
    with Replicas.pair(tmp_path, store, server=KEYS, script=WRITE_TWICE) as group:
        yield group


def test_a_task_on_one_replica_is_steered_through_another(keyed_replicas: Replicas) -> None:
    a, b = keyed_replicas.started
    auth = {"Authorization": f"Bearer {ALICE}"}
    task = {"agent": "agentao", "prompt": "please write", "permission_policy": "ask"}
    started = httpx.post(f"{a.url}/v1/tasks", json=task, headers=auth).json()
    key = "agentao.key." + base64.urlsafe_b64encode(ALICE.encode()).decode().rstrip("=")
    url = f"ws://127.0.0.1:{b.port}/v1/tasks/{started['id']}/stream"
    with ws_client.connect(url, subprotocols=["agentao.v1", key]) as socket:
        frames = _frames_until(socket, "permission-request")  # A's turn waits on a person
        steer = f"{b.url}/v1/tasks/{started['id']}/steer"
        bob = httpx.post(
            steer, json={"text": "write evil"}, headers={"Authorization": f"Bearer {BOB}"}
        )
        assert bob.status_code == 404
        over_http = httpx.post(steer, json={"text": "write it small"}, headers=auth)
        assert over_http.status_code == 200, over_http.text
        assert over_http.json()["outcome"] == "injected"
        socket.send(json.dumps({"type": "steer", "text": "write it neat"}))
        assert _frames_until(socket, "steered")[-1] == {"type": "steered", "outcome": "injected"}
        allow = next(o for o in frames[-1]["options"] if o["kind"] == "allow_once")
        answer = {"type": "permission-response", "requestId": frames[-1]["requestId"]}
        socket.send(json.dumps({**answer, "optionId": allow["optionId"]}))
        frames += _frames_until(socket, "task-ended")
    said = [
        f["update"]["content"]["text"]
        for f in frames
        if f["type"] == "task-running" and f["update"]["sessionUpdate"] == "user_message_chunk"
    ]
    assert said == ["write it small", "write it neat"]  # in A's log, read on B
