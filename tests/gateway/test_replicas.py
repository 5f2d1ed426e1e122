"""Gateway replicas on one PostgreSQL store: real `agentao serve` processes on loopback.

Each replica is its own process with its own agent processes and their own state
directory, as on separate machines; they share one real PostgreSQL database
(tests/postgres.py) for the gateway's store and for the agents' sessions
(`AGENTAO_STORE_URL`), so any replica's agent can `session/load` any session. The
lease is short here (2 s, heartbeat 0.3 s) so that failover is quick to watch.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets.sync.client as ws_client

from tests.gateway.conftest import DEFAULT_SCRIPT, ServedGateway
from tests.postgres import PostgresServer

pytestmark = pytest.mark.timeout(120)
LEASE_SECONDS = 2.0


class Replicas:
    """Replicas of one gateway: one database, each with its own port and agents."""

    def __init__(self, tmp: Path, store_url: str, lease_seconds: float = LEASE_SECONDS) -> None:
        self.tmp = tmp
        self.lease_seconds = lease_seconds
        self.store_url = store_url
        script = tmp / "script.json"
        script.write_text(json.dumps({"responses": DEFAULT_SCRIPT}))
        self.work = tmp / "work"
        self.work.mkdir()
        self.script = script
        self.started: list[ServedGateway] = []

    def _config(self, agent_home: Path) -> str:
        # Each replica's agents have their own state directory, as on separate machines;
        # they keep their sessions in the shared database, so any replica's agent loads any.
        return f"""
[server]
store = "{self.store_url}"

[limits]
lease_seconds = {self.lease_seconds}
heartbeat_seconds = 0.3

[agents.agentao]
command = ["{sys.executable}", "-m", "agentao", "--acp"]
cwd = "{self.work}"

[agents.agentao.env]
LLM_PROVIDER = "SCRIPTED"
AGENTAO_SCRIPT = "{self.script}"
AGENTAO_HOME = "{agent_home}"
AGENTAO_STORE_URL = "{self.store_url}"
"""

    def start(self) -> ServedGateway:
        home = self.tmp / f"replica-{len(self.started)}"
        home.mkdir()
        (home / "agents").mkdir()
        replica = ServedGateway(home, self._config(home / "agents"))
        self.started.append(replica)
        return replica

    def stop(self) -> None:
        for replica in self.started:
            if replica.proc.poll() is None:
                replica.stop()


@pytest.fixture
def replicas(tmp_path: Path, postgres_server: PostgresServer) -> Iterator[Replicas]:
    group = Replicas(tmp_path, postgres_server.create_database())
    yield group
    group.stop()


def _agents_of(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(c) for c in children]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _as_if_on_another_machine(store_url: str) -> None:
    import psycopg

    with psycopg.connect(store_url, autocommit=True) as conn:
        conn.execute("UPDATE gw_boots SET host = 'another-machine'")


def _until(check: Any, what: str, timeout: float = 60) -> Any:
    """Poll `check()` until it returns something truthy (the test's timeout bounds it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := check():
            return result
        time.sleep(0.05)
    raise AssertionError(f"never happened: {what}")


def test_a_conversation_live_on_one_replica_is_continued_through_another(
    replicas: Replicas,
) -> None:
    a, b = replicas.start(), replicas.start()
    first = a.openai().responses.create(model="agentao", input="hello")
    assert first.output_text == "Answer one."

    # B does not run it: the conversation is live on A, so B sends the client there...
    body = {"model": "agentao", "input": "and then?", "previous_response_id": first.id}
    refused = httpx.post(f"{b.url}/v1/responses", json=body, follow_redirects=False)
    assert refused.status_code == 307
    assert refused.headers["location"] == f"{a.url}/v1/responses"
    # ...and the OpenAI SDK follows: the same conversation, its next turn, on A.
    second = b.openai().responses.create(
        model="agentao", input="and then?", previous_response_id=first.id
    )
    assert second.output_text == "Answer two."
    # Either replica reads any response: the store is shared.
    assert a.openai().responses.retrieve(second.id).status == "completed"
    assert b.openai().responses.retrieve(first.id).output_text == "Answer one."


def test_a_chat_session_key_reaches_its_conversation_from_any_replica(
    replicas: Replicas,
) -> None:
    a, b = replicas.start(), replicas.start()
    key = {"X-Session-Id": "desk-7"}
    messages = [{"role": "user", "content": "hello"}]
    one = a.openai().chat.completions.create(model="agentao", messages=messages, extra_headers=key)
    two = b.openai().chat.completions.create(model="agentao", messages=messages, extra_headers=key)
    assert [one.choices[0].message.content, two.choices[0].message.content] == [
        "Answer one.",
        "Answer two.",
    ]


def test_a_watcher_on_one_replica_follows_a_turn_on_another(replicas: Replicas) -> None:
    a, b = replicas.start(), replicas.start()
    task = httpx.post(f"{a.url}/v1/tasks", json={"agent": "agentao", "prompt": "slow"}).json()
    frames: list[dict[str, Any]] = []
    with ws_client.connect(f"ws://127.0.0.1:{b.port}/v1/tasks/{task['id']}/stream") as socket:
        while not frames or frames[-1]["type"] not in ("task-ended", "task-error"):
            frame = json.loads(socket.recv(timeout=30))
            if frame["type"] != "ping":
                frames.append(frame)
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))  # all, in order
    assert frames[-1]["type"] == "task-ended"
    text = "".join(
        f["update"]["content"]["text"]
        for f in frames
        if f["type"] == "task-running" and f["update"].get("sessionUpdate") == "agent_message_chunk"
    )
    assert text == "tick " * 150


@pytest.mark.parametrize("where", ["same machine", "another machine"])
def test_a_killed_replica_fails_over_without_losing_a_completed_turn(
    replicas: Replicas, where: str
) -> None:
    a, b = replicas.start(), replicas.start()
    first = a.openai().responses.create(model="agentao", input="hello")
    agents = _agents_of(a.proc.pid)
    running = a.openai().responses.create(
        model="agentao", input="slow", previous_response_id=first.id, background=True
    )
    _until(lambda: b.openai().responses.retrieve(running.id).status == "in_progress", "in progress")
    if where == "another machine":  # B cannot look at A's process: only A's silence tells
        _as_if_on_another_machine(replicas.store_url)
    a.kill()

    # Within about a lease, the other replica answers for the turn that died with A...
    settled = _until(
        lambda: (r := b.openai().responses.retrieve(running.id)).status != "in_progress" and r,
        "the dead replica's response settled",
    )
    assert settled.status == "failed" and settled.error.code == "gateway_stopped"
    if where == "another machine":
        assert "stopped answering (no heartbeat for 2 s)" in settled.error.message
    else:  # its pid is gone: no need to wait for the lease
        assert "exited before it finished" in settled.error.message
    # ...A's agent processes are gone with it (none orphaned)...
    _until(lambda: not any(_alive(pid) for pid in agents), "A's agents exited")
    # ...and the conversation goes on at B from its last completed turn.
    after = b.openai().responses.create(
        model="agentao", input="where were we?", previous_response_id=first.id
    )
    assert after.status == "completed" and after.output_text
    conversation = httpx.get(f"{b.url}/v1/conversations").json()["data"][0]
    assert conversation["turn_count"] == 2  # hello, then where were we (the killed one: not)


KILL_ROUNDS = 20


def test_twenty_kills_mid_turn_lose_no_completed_turn(replicas: Replicas) -> None:
    """Round after round, the replica running a turn is SIGKILLed and a new one started:
    every completed turn stays, no response stays in progress, no agent is left behind."""
    live = [replicas.start(), replicas.start()]
    previous = live[0].openai().responses.create(model="agentao", input="hello")
    completed, killed, agents = [previous.id], [], []
    for round_ in range(KILL_ROUNDS):
        runner, survivor = live
        turn = runner.openai().responses.create(
            model="agentao", input=f"turn {round_}", previous_response_id=previous.id
        )
        completed.append(turn.id)
        agents += _agents_of(runner.proc.pid)
        doomed = runner.openai().responses.create(
            model="agentao", input="slow", previous_response_id=turn.id, background=True
        )
        killed.append(doomed.id)
        _until(lambda d=doomed, s=survivor: _status(s, d.id) == "in_progress", "it runs")
        runner.kill()
        _until(lambda d=doomed, s=survivor: _status(s, d.id) == "failed", "settled")
        previous = turn
        live = [survivor, replicas.start()]
    reader = live[0].openai()
    assert {reader.responses.retrieve(r).status for r in completed} == {"completed"}
    assert {reader.responses.retrieve(r).status for r in killed} == {"failed"}
    _until(lambda: not any(_alive(pid) for pid in agents), "every killed replica's agents exited")
    last = reader.responses.create(
        model="agentao", input="still there?", previous_response_id=previous.id
    )
    conversation = httpx.get(f"{live[0].url}/v1/conversations/{last.x_conversation_id}").json()
    assert conversation["turn_count"] == len(completed) + 1  # every completed turn, no other


def _status(replica: ServedGateway, response_id: str) -> str:
    return replica.openai().responses.retrieve(response_id).status


def test_a_replica_that_stalls_past_its_lease_cannot_write_over_the_new_owner(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    # A longer lease: B's "gone quiet" answer (after 3 heartbeats) has seconds to be seen.
    replicas = Replicas(tmp_path, postgres_server.create_database(), lease_seconds=6.0)
    try:
        _stall_and_fence(replicas)
    finally:
        replicas.stop()


def _stall_and_fence(replicas: Replicas) -> None:
    a, b = replicas.start(), replicas.start()
    first = a.openai().responses.create(model="agentao", input="hello")
    task = httpx.post(
        f"{a.url}/v1/tasks",
        json={"agent": "agentao", "prompt": "slow", "conversation_id": first.x_conversation_id},
    ).json()
    os.kill(a.proc.pid, signal.SIGSTOP)  # A stalls mid-turn (its agent goes on)
    try:
        # While A's lease runs, B sends nobody to a holder gone quiet: 503, come back later.
        body = {"model": "agentao", "input": "go on", "previous_response_id": first.id}
        wait = _until(
            lambda: (r := httpx.post(f"{b.url}/v1/responses", json=body)).status_code == 503 and r,
            "B saw A go quiet",
        )
        assert wait.json()["error"]["code"] == "conversation_elsewhere"
        assert 1 <= int(wait.headers["retry-after"]) <= replicas.lease_seconds
        # A is silent past its lease: B takes the conversation over and runs a turn on it.
        after = _until(lambda: _continued(b, first.id), "B took the conversation over", timeout=60)
        again = b.openai().responses.create(
            model="agentao", input="and more", previous_response_id=after.id
        )
        assert after.output_text and again.output_text
    finally:
        os.kill(a.proc.pid, signal.SIGCONT)
    # A wakes up and its turn ends, but its lease is gone: its result is not kept...
    task_row = _until(lambda: _ended_by_a(b, task["id"]), "A's turn ended")
    assert task_row["status"] == "error" and "took this conversation over" in task_row["error"]
    # ...so the conversation is the new owner's: hello on A, then B's two turns. (A's
    # stale copy would have written 2 over it.)
    conversation = httpx.get(f"{b.url}/v1/conversations/{first.x_conversation_id}").json()
    assert conversation["turn_count"] == 3


def _ended_by_a(b: ServedGateway, task_id: str) -> dict[str, Any] | None:
    """The task's row once A itself ended it (B had settled it as A's when A went quiet)."""
    row = httpx.get(f"{b.url}/v1/tasks/{task_id}").json()
    return row if row["status"] == "ended" or "took" in (row.get("error") or "") else None


def _continued(b: ServedGateway, previous: str) -> Any:
    try:
        return b.openai().responses.create(
            model="agentao", input="go on", previous_response_id=previous
        )
    except Exception:  # 307 to a stalled A, or 503 until its lease expires
        return None


def test_readiness_says_whether_the_store_answers(replicas: Replicas) -> None:
    a = replicas.start()
    assert httpx.get(f"{a.url}/readyz").json() == {"status": "ready", "problems": []}


def test_a_replica_that_stops_leaves_its_conversations_to_the_others(
    replicas: Replicas,
) -> None:
    a, b = replicas.start(), replicas.start()
    first = a.openai().responses.create(model="agentao", input="hello")
    a.proc.send_signal(signal.SIGINT)  # an orderly stop releases its leases at once
    a.proc.wait(timeout=20)
    after = b.openai().responses.create(
        model="agentao", input="again", previous_response_id=first.id
    )
    assert after.status == "completed"


def test_replicas_need_a_lease_longer_than_the_heartbeat(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("[limits]\nlease_seconds = 1\nheartbeat_seconds = 2\n")
    done = _run_serve("--config", str(config), "--port", "0")
    assert done.returncode == 2 and "heartbeat_seconds" in done.stderr


def _run_serve(*args: str) -> Any:
    import subprocess

    return subprocess.run(
        [sys.executable, "-m", "agentao", "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "CI": "true"},
    )
