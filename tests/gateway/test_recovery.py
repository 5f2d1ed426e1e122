"""After a crash: nothing stays in flight forever, and cancel says what state a response is in.

Real `agentao serve` processes, killed with SIGKILL; the real `openai` SDK reads what
the next gateway on the same store answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from websockets.sync.client import connect

from tests.gateway.conftest import ON_EACH_STORE, LiveGateway, ServedGateway, served_config

# The test cluster trusts loopback, so a password in the URL is accepted and ignored: it is
# there to be looked for in the log, where it must never appear.
URL_PASSWORD = "never-logged-pw"


def store_config(tmp_path: Path, store: str) -> str:
    """`served_config` with `[server] store` set: a SQLite path or a PostgreSQL URL."""
    if store.startswith("postgresql://"):
        store = store.replace("postgresql://postgres@", f"postgresql://postgres:{URL_PASSWORD}@")
    return f'[server]\nstore = "{store}"\n' + served_config(tmp_path)


def wait_for_frame(gw: ServedGateway, task_id: str, kind: str) -> dict[str, Any]:
    """The first task-stream frame of `kind` (stored before it is sent: once seen, it and
    everything queued before it are in the store)."""
    with connect(ws_url(gw, task_id), subprotocols=gw.ws_protocols) as ws:
        for message in ws:
            frame = json.loads(message)
            if frame["type"] == kind:
                return frame
    raise AssertionError(f"the task stream closed without a {kind} frame")


def all_frames(gw: ServedGateway, task_id: str) -> list[dict[str, Any]]:
    with connect(ws_url(gw, task_id), subprotocols=gw.ws_protocols) as ws:
        return [f for f in map(json.loads, ws) if f["type"] != "ping"]


def start_slow(client: openai.OpenAI, **extra: Any) -> tuple[str, str, Any]:
    """(response id, task id, stream or None): a long turn, running when this returns."""
    raw = client.responses.with_raw_response.create(model="agentao", input="slow please", **extra)
    task_id = raw.headers["x-task-id"]
    if extra.get("stream"):
        stream = raw.parse()
        created = next(iter(stream))
        assert created.type == "response.created"
        return created.response.id, task_id, stream
    return raw.parse().id, task_id, None


def ws_url(gw: ServedGateway, task_id: str) -> str:
    return f"ws://127.0.0.1:{gw.port}/v1/tasks/{task_id}/stream"


@ON_EACH_STORE
def test_after_kill_9_a_restarted_gateway_settles_what_was_in_flight(
    tmp_path: Path, gateway_store: str
) -> None:
    config = store_config(tmp_path, gateway_store)
    first = ServedGateway(tmp_path, config)
    try:
        client = first.openai()
        streamed, streamed_task, stream = start_slow(client, stream=True)
        background, background_task, _ = start_slow(client, background=True)
        for task_id in (streamed_task, background_task):
            wait_for_frame(first, task_id, "task-running")  # rows and frames stored
    finally:
        first.kill()
    stream.close()

    second = ServedGateway(tmp_path, config)  # same state directory, same store
    try:
        client = second.openai()
        for response_id in (streamed, background):
            response = client.responses.retrieve(response_id)
            assert response.status == "failed"  # a poller stops here
            assert response.error.code == "gateway_stopped"
            assert f"pid {first.proc.pid}" in response.error.message
            with pytest.raises(openai.BadRequestError) as info:
                client.responses.cancel(response_id)
            assert info.value.body["code"] == "response_failed"
            assert info.value.body["param"] == "response_id"
            assert "failed" in info.value.body["message"]
        for task_id in (streamed_task, background_task):
            task = httpx.get(f"{second.url}/v1/tasks/{task_id}", headers=second.auth).json()
            assert task["status"] == "error" and "exited" in task["error"]
            frames = all_frames(second, task_id)  # ends, instead of waiting forever
            assert frames[-1]["type"] == "task-error"
            assert frames[-1]["error"]["code"] == "gateway_stopped"
            assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
        # The conversation goes on from the failed response's predecessor state.
        again = client.responses.create(model="agentao", input="hello")
        assert again.status == "completed"
    finally:
        second.stop()
    assert not any(URL_PASSWORD in line for line in first.lines + second.lines)
    if gateway_store.startswith("postgresql://"):  # the URL is logged, its password redacted
        assert any("store: postgresql://[redacted]@" in line for line in first.lines)


def test_a_gateway_sharing_the_store_leaves_a_live_owner_alone(tmp_path: Path) -> None:
    config = served_config(tmp_path)
    owner, other = ServedGateway(tmp_path, config), ServedGateway(tmp_path, config)
    try:
        response_id, task_id, _ = start_slow(owner.openai(), background=True)
        wait_for_frame(owner, task_id, "task-running")
        seen = other.openai()
        assert seen.responses.retrieve(response_id).status == "in_progress"
        with pytest.raises(openai.ConflictError) as info:
            seen.responses.cancel(response_id)
        assert info.value.body["code"] == "response_elsewhere"
        assert (
            httpx.get(f"{other.url}/v1/tasks/{task_id}", headers=other.auth).json()["status"]
            == "running"
        )

        owner.kill()  # now the other one answers for it, at the next read
        response = seen.responses.retrieve(response_id)
        assert response.status == "failed" and response.error.code == "gateway_stopped"
        assert (
            httpx.get(f"{other.url}/v1/tasks/{task_id}", headers=other.auth).json()["status"]
            == "error"
        )
    finally:
        owner.kill()
        other.stop()


def test_cancel_says_what_state_a_response_is_in(shared_gateway: LiveGateway) -> None:
    client = shared_gateway.openai()
    completed = client.responses.create(model="agentao", input="hi", background=False)
    incomplete = client.responses.create(model="agentao", input="cutoff please")
    assert (completed.status, incomplete.status) == ("completed", "incomplete")
    for response in (completed, incomplete):
        with pytest.raises(openai.BadRequestError) as info:
            client.responses.cancel(response.id)
        error = info.value.body
        assert error["code"] == f"response_{response.status}"
        assert error["param"] == "response_id"
        assert f"Cannot cancel a {response.status} response" in error["message"]
    with pytest.raises(openai.NotFoundError):
        client.responses.cancel("resp_" + "0" * 32)
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.cancel("resp_\x01")
    assert info.value.body["param"] == "response_id"
