"""Gateway replicas on one PostgreSQL store: real `agentao serve` processes on loopback.

Each replica is its own process with its own agent processes and their own state
directory, as on separate machines; they share one real PostgreSQL database
(tests/postgres.py) for the gateway's store and for the agents' sessions
(`AGENTAO_STORE_URL`), so any replica's agent can `session/load` any session. The
lease is short here (2 s, heartbeat 0.3 s) so that failover is quick to watch.

Starting a replica (a process, its migrations, its agents) is most of a short test's
time, so the tests that leave their replicas as they found them (no kill, stop, stall
or config of their own) share one pair per module: `pair` (keyless) and `keyed_pair`
(alice and bob). State does not leak between them: each test opens conversations of its
own, the agents' work directory is emptied before each test (a file a test waits for is
its own), and a test reads only the log lines written since it began (`Replicas.since`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
import websockets.sync.client as ws_client
from acp import text_block

from tests.gateway.acp_peers import SdkPeer
from tests.gateway.conftest import DEFAULT_SCRIPT, ServedGateway
from tests.postgres import PostgresServer

pytestmark = pytest.mark.timeout(120)
LEASE_SECONDS = 2.0


ALICE, BOB = "sk-alice-0123456789abcdef", "sk-bob-0123456789abcdef"
KEYS = f"""
[[keys]]
name = "alice"
key = "{ALICE}"
ceiling = "all"

[[keys]]
name = "bob"
key = "{BOB}"
ceiling = "all"
"""
# Two turns that each write a file (one answered over HTTP, one on a stream), then chat.
WRITE_TWICE: list[dict[str, Any]] = [
    {
        "match": "write",
        "tool_calls": [
            {"name": "write_file", "arguments": {"file_path": "one.txt", "content": "1\n"}}
        ],
    },
    {"match": "write", "text": "Wrote one.txt."},
    {
        "match": "write",
        "tool_calls": [
            {"name": "write_file", "arguments": {"file_path": "two.txt", "content": "2\n"}}
        ],
    },
    {"match": "write", "text": "Wrote two.txt."},
    *DEFAULT_SCRIPT,
]


class Replicas:
    """Replicas of one gateway: one database, each with its own port and agents."""

    def __init__(
        self,
        tmp: Path,
        store_url: str,
        lease_seconds: float = LEASE_SECONDS,
        *,
        server: str = "",
        limits: str = "",
        script: list[dict[str, Any]] = DEFAULT_SCRIPT,
    ) -> None:
        self.tmp = tmp
        self.lease_seconds = lease_seconds
        self.store_url = store_url
        self.server = server  # more of the config: keys, [server] settings
        self.limits = limits  # more [limits]
        self.script = tmp / "script.json"
        self.script.write_text(json.dumps({"responses": script}))
        self.work = tmp / "work"
        self.work.mkdir()
        self.started: list[ServedGateway] = []
        self._marks: dict[int, int] = {}

    def _config(self, agent_home: Path) -> str:
        # Each replica's agents have their own state directory, as on separate machines;
        # they keep their sessions in the shared database, so any replica's agent loads any.
        return f"""
[server]
store = "{self.store_url}"
{self.server}

[limits]
lease_seconds = {self.lease_seconds}
heartbeat_seconds = 0.3
{self.limits}

[agents.agentao]
command = ["{sys.executable}", "-m", "agentao", "--acp"]
cwd = "{self.work}"

[agents.agentao.env]
LLM_PROVIDER = "SCRIPTED"
AGENTAO_SCRIPT = "{self.script}"
AGENTAO_HOME = "{agent_home}"
AGENTAO_STORE_URL = "{self.store_url}"
"""

    def start(self, *, wait: bool = True) -> ServedGateway:
        """A new replica (with `wait` false, still starting: `ready()` waits for it)."""
        home = self.tmp / f"replica-{len(self.started)}"
        home.mkdir()
        (home / "agents").mkdir()
        # The agent asks before it writes a file, so a turn can wait on a person's answer.
        rules = [{"action": "ask", "tool": "write_file"}]
        (home / "agents" / "permissions.json").write_text(json.dumps({"rules": rules}))
        # One state directory for every replica's gateway process: keyless replicas run on
        # one machine (loopback only), and share the local token through it.
        replica = ServedGateway(
            home, self._config(home / "agents"), home=self.tmp / "gateway", wait=wait
        )
        self.started.append(replica)
        return replica

    def start_together(self, count: int = 2) -> list[ServedGateway]:
        """`count` new replicas, started at once (their migrations queue on the store's
        lock): a replica's start is mostly its imports, which the cores share."""
        starting = [self.start(wait=False) for _ in range(count)]
        return [replica.ready() for replica in starting]

    def stop(self) -> None:
        ServedGateway.stop_all(self.started)

    @classmethod
    @contextlib.contextmanager
    def pair(cls, tmp: Path, store_url: str, **settings: Any) -> Iterator[Replicas]:
        """Two replicas started together on a new database, stopped at the end: what a
        module's tests share (each takes it `fresh()`)."""
        group = cls(tmp, store_url, **settings)
        try:
            group.start_together()
            yield group
        finally:
            group.stop()

    def fresh(self) -> Replicas:
        """The shared pair made ready for the next test: an empty work directory, each
        replica's log read from here on (`since`), and its log in the test's report."""
        for path in self.work.iterdir():
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        self._marks = {id(r): len(r.lines) for r in self.started}
        ServedGateway.this_test.extend(r for r in self.started if r not in ServedGateway.this_test)
        return self

    def since(self, replica: ServedGateway) -> str:
        """What `replica` logged since this test began."""
        return "".join(replica.lines[self._marks.get(id(replica), 0) :])


@pytest.fixture
def replicas(tmp_path: Path, postgres_server: PostgresServer) -> Iterator[Replicas]:
    group = Replicas(tmp_path, postgres_server.create_database())
    yield group
    group.stop()


@pytest.fixture(scope="module")
def _shared_pair(
    tmp_path_factory: pytest.TempPathFactory, postgres_server: PostgresServer
) -> Iterator[Replicas]:
    with Replicas.pair(tmp_path_factory.mktemp("pair"), postgres_server.create_database()) as group:
        yield group


@pytest.fixture
def pair(_shared_pair: Replicas) -> Replicas:
    """Two keyless replicas, shared by the module's tests that leave them as they are."""
    return _shared_pair.fresh()


@pytest.fixture(scope="module")
def _shared_keyed_pair(
    tmp_path_factory: pytest.TempPathFactory, postgres_server: PostgresServer
) -> Iterator[Replicas]:
    tmp, store = tmp_path_factory.mktemp("keyed"), postgres_server.create_database()
    with Replicas.pair(tmp, store, server=KEYS, script=WRITE_TWICE) as group:
        yield group


@pytest.fixture
def keyed_pair(_shared_keyed_pair: Replicas) -> Replicas:
    """Two replicas with alice's and bob's keys, shared as `pair` is."""
    return _shared_keyed_pair.fresh()


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


@pytest.fixture
def keyed(tmp_path: Path, postgres_server: PostgresServer) -> Iterator[Replicas]:
    group = Replicas(tmp_path, postgres_server.create_database(), server=KEYS, script=WRITE_TWICE)
    yield group
    group.stop()


def test_a_request_reaching_another_replica_is_passed_to_the_holder_with_its_key(
    keyed_pair: Replicas,
) -> None:
    a, b = keyed_pair.started
    first = a.openai(ALICE).responses.create(model="agentao", input="hello")
    assert first.output_text == "Answer one."
    # B does not run it (A holds the conversation): it passes the request to A, the key
    # with it, and streams A's answer back. (A redirect would arrive at A without the key.)
    with b.openai(ALICE).responses.stream(
        model="agentao", input="and then?", previous_response_id=first.id
    ) as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        second = stream.get_final_response()
    assert "".join(deltas) == second.output_text == "Answer two."
    assert "passing POST /v1/responses to " + a.url in keyed_pair.since(b)
    # The holder checks the key again: another key's conversation is not found through B.
    with pytest.raises(openai.NotFoundError):
        b.openai(BOB).responses.create(
            model="agentao", input="mine now", previous_response_id=second.id
        )
    # A page on B's own origin may post to B; A is not asked to judge B's origin.
    body = {"model": "agentao", "input": "third", "previous_response_id": second.id}
    page = {"Authorization": f"Bearer {ALICE}", "Origin": b.url}
    third = httpx.post(f"{b.url}/v1/responses", json=body, headers=page, timeout=30)
    assert third.status_code == 200 and third.json()["output"][-1]["content"][0]["text"]
    # A request a replica already passed on is never passed on again (no ping-pong): the
    # conversation moved while it was on its way, so the client is asked to send it again.
    body["previous_response_id"] = third.json()["id"]
    passed = {"Authorization": f"Bearer {ALICE}", "Agentao-Forwarded-By": "boot_x"}
    again = httpx.post(f"{b.url}/v1/responses", json=body, headers=passed, timeout=30)
    assert again.status_code == 503 and again.headers["retry-after"] == "1"
    assert again.json()["error"]["code"] == "conversation_elsewhere"


# B's config, as during a rollout: alice may not ask for "ask", and titles are short.
STRICT_KEYS = KEYS.replace(
    'name = "alice"\nkey = "' + ALICE + '"\nceiling = "all"',
    'name = "alice"\nkey = "' + ALICE + '"\nceiling = "reject"',
)


def test_a_request_for_a_conversation_held_elsewhere_is_passed_on_before_any_route_runs(
    keyed: Replicas,
) -> None:
    a = keyed.start()
    keyed.server, keyed.limits = STRICT_KEYS, "max_title_chars = 5"
    b = keyed.start()
    first = a.openai(ALICE).responses.create(model="agentao", input="hello")
    conversation = first.model_extra["x_conversation_id"]
    # Each of these B's own routes would refuse once they read the body (the policy is
    # above alice's ceiling on B, the title too long for B); A, the holder, accepts them.
    # So B reads only the name of the conversation, and passes the rest on untouched.
    second = b.openai(ALICE).responses.create(
        model="agentao",
        input="and then?",
        previous_response_id=first.id,
        extra_body={"x_permission_policy": "ask"},
    )
    assert second.output_text == "Answer two."
    auth = {"Authorization": f"Bearer {ALICE}"}
    renamed = httpx.post(
        f"{b.url}/v1/conversations/{conversation}", json={"title": "Kept long"}, headers=auth
    )
    assert renamed.status_code == 200 and renamed.json()["title"] == "Kept long"
    # The control: the same requests for a conversation B holds, or nobody does, are B's
    # to answer, and B refuses them.
    with pytest.raises(openai.PermissionDeniedError, match="above this key's ceiling"):
        b.openai(ALICE).responses.create(
            model="agentao", input="new", extra_body={"x_permission_policy": "ask"}
        )
    own = b.openai(ALICE).responses.create(model="agentao", input="mine").model_extra
    url = f"{b.url}/v1/conversations/{own['x_conversation_id']}"
    refused = httpx.post(url, json={"title": "Kept long"}, headers=auth)
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "title"
    assert 'ceiling = "reject"' in STRICT_KEYS


def test_a_rename_through_another_replica_survives_the_holder_s_next_turn(
    pair: Replicas,
) -> None:
    a, b = pair.started
    first = a.openai().responses.create(model="agentao", input="hello")
    conversation = first.model_extra["x_conversation_id"]
    url = f"{b.url}/v1/conversations/{conversation}"
    assert httpx.post(url, json={"title": "Mine"}, headers=b.auth).status_code == 200
    # A holds the conversation and its record: the person's title is A's to keep, so
    # A's next turn does not write its own older copy over it.
    a.openai().responses.create(model="agentao", input="again", previous_response_id=first.id)
    shown = httpx.get(url, headers=b.auth).json()
    assert (shown["title"], shown["title_by"], shown["turn_count"]) == ("Mine", "person", 2)


def test_a_fork_asked_of_another_replica_is_made_by_the_holder(pair: Replicas) -> None:
    """Edit and resend (forks.py) binds the conversation's session: the holder's to do."""
    a, b = pair.started
    first = a.openai().responses.create(model="agentao", input="hello")
    conversation = first.model_extra["x_conversation_id"]
    url = f"{b.url}/v1/conversations/{conversation}"
    (task,) = httpx.get(f"{url}/tasks", headers=b.auth).json()["data"]
    fork = httpx.post(f"{url}/fork", json={"before_task": task["id"]}, headers=b.auth)
    assert fork.status_code == 201, fork.text
    assert fork.json()["forked_from"]["conversation_id"] == conversation


def test_a_response_running_on_one_replica_is_cancelled_through_another(
    keyed_pair: Replicas,
) -> None:
    a, b = keyed_pair.started
    running = a.openai(ALICE).responses.create(model="agentao", input="slow", background=True)
    _until(lambda: a.openai(ALICE).responses.retrieve(running.id).status == "in_progress", "runs")
    cancelled = b.openai(ALICE).responses.cancel(running.id)
    assert cancelled.status == "cancelled"
    assert a.openai(ALICE).responses.retrieve(running.id).status == "cancelled"


def test_a_question_asked_on_one_replica_is_answered_through_another(keyed_pair: Replicas) -> None:
    a, b = keyed_pair.started
    auth = {"Authorization": f"Bearer {ALICE}"}
    task = {"agent": "agentao", "prompt": "please write", "permission_policy": "ask"}
    first = httpx.post(f"{a.url}/v1/tasks", json=task, headers=auth).json()
    # B lists the question A's turn waits on, and B takes the person's answer to A.
    asked = _until(lambda: _questions(b, ALICE), "B lists A's question")
    assert [q["taskId"] for q in asked] == [first["id"]]
    assert _questions(b, BOB) == []  # another key's questions are not listed...
    answer = f"{b.url}/v1/permissions/{asked[0]['requestId']}"
    allow = {"optionId": _allow(asked[0])}
    bob = httpx.post(answer, json=allow, headers={"Authorization": f"Bearer {BOB}"})
    assert bob.json()["error"]["code"] == "permission_request_not_found"  # ...nor answered
    assert httpx.post(answer, json=allow, headers=auth).json()["accepted"] is True
    _until(lambda: (keyed_pair.work / "one.txt").exists(), "A's turn wrote the file")

    # A watcher on B answers on its stream; a cancel from it reaches A as well.
    task["conversation_id"] = first["conversation_id"]
    second = _until(lambda: _started(a, task, auth), "the second turn started")
    key = "agentao.key." + base64.urlsafe_b64encode(ALICE.encode()).decode().rstrip("=")
    url = f"ws://127.0.0.1:{b.port}/v1/tasks/{second['id']}/stream"
    with ws_client.connect(url, subprotocols=["agentao.v1", key]) as socket:
        frames = _frames_until(socket, "permission-request")
        socket.send(
            json.dumps(
                {
                    "type": "permission-response",
                    "requestId": frames[-1]["requestId"],
                    "optionId": _allow(frames[-1]),
                }
            )
        )
        frames += _frames_until(socket, "task-ended")
    answered = next(f for f in frames if f["type"] == "permission-response")
    assert answered["approved"] is True
    assert (keyed_pair.work / "two.txt").read_text() == "2\n"

    slow = {"agent": "agentao", "prompt": "slow", "conversation_id": first["conversation_id"]}
    third = _until(lambda: _started(a, slow, auth), "the third turn started")
    url = f"ws://127.0.0.1:{b.port}/v1/tasks/{third['id']}/stream"
    with ws_client.connect(url, subprotocols=["agentao.v1", key]) as socket:
        _frames_until(socket, "task-running")
        socket.send(json.dumps({"type": "cancel"}))
        ended = _frames_until(socket, "task-ended")[-1]
    assert ended["stopReason"] == "cancelled"


def _questions(replica: ServedGateway, key: str) -> list[dict[str, Any]]:
    auth = {"Authorization": f"Bearer {key}"}
    return httpx.get(f"{replica.url}/v1/permissions", headers=auth).json()["data"]


def _allow(question: dict[str, Any]) -> str:
    return next(o["optionId"] for o in question["options"] if o["kind"] == "allow_once")


def _started(replica: ServedGateway, task: dict[str, Any], auth: dict[str, str]) -> Any:
    """The task started (a 409 while the conversation's last turn is finishing)."""
    reply = httpx.post(f"{replica.url}/v1/tasks", json=task, headers=auth)
    return reply.json() if reply.status_code == 201 else None


def _frames_until(socket: Any, kind: str) -> list[dict[str, Any]]:
    frames: list[dict[str, Any]] = []
    while not frames or frames[-1]["type"] != kind:
        frame = json.loads(socket.recv(timeout=30))
        assert frame["type"] not in ("error", "task-error"), frame
        if frame["type"] != "ping":
            frames.append(frame)
    return frames


def test_the_web_ui_s_login_cookie_is_good_on_every_keyless_replica_and_passed_on(
    pair: Replicas,
) -> None:
    a, b = pair.started
    link = a.wait_for_line("/login?token=").split("web UI: ", 1)[1].split()[0]
    cookies = httpx.get(link).cookies  # logged in through A's one-time link
    ui = {"X-Agentao-Client": "web", "Origin": b.url}
    first = a.openai().responses.create(model="agentao", input="hello")
    assert httpx.get(f"{b.url}/v1/conversations", headers=ui, cookies=cookies).status_code == 200
    # B passes the UI's request on to A, the holder, which checks the session again.
    body = {"model": "agentao", "input": "and then?", "previous_response_id": first.id}
    passed = httpx.post(f"{b.url}/v1/responses", json=body, headers=ui, cookies=cookies, timeout=30)
    assert passed.status_code == 200, passed.text
    assert passed.json()["output"][-1]["content"][0]["text"] == "Answer two."
    assert "passing POST /v1/responses to " + a.url in pair.since(b)


def test_with_redirects_a_replica_sends_the_client_to_the_holder(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    replicas = Replicas(
        tmp_path, postgres_server.create_database(), server='cross_replica = "redirect"'
    )
    try:
        a, b = replicas.start_together()
        first = a.openai().responses.create(model="agentao", input="hello")
        body = {"model": "agentao", "input": "and then?", "previous_response_id": first.id}
        refused = httpx.post(
            f"{b.url}/v1/responses", json=body, headers=b.auth, follow_redirects=False
        )
        assert refused.status_code == 307
        assert refused.headers["location"] == f"{a.url}/v1/responses"
        # A client that sends its credentials again to the new origin (HTTP clients drop
        # `Authorization` on such a redirect, the keyless gateway's local token too)
        # continues the same conversation, its next turn, on A.
        second = httpx.post(refused.headers["location"], json=body, headers=b.auth, timeout=30)
        assert second.json()["output"][-1]["content"][0]["text"] == "Answer two."
        assert b.openai().responses.retrieve(first.id).output_text == "Answer one."
    finally:
        replicas.stop()


def test_a_chat_session_key_reaches_its_conversation_from_any_replica(
    pair: Replicas,
) -> None:
    a, b = pair.started
    key = {"X-Session-Id": "desk-7"}
    messages = [{"role": "user", "content": "hello"}]
    one = a.openai().chat.completions.create(model="agentao", messages=messages, extra_headers=key)
    two = b.openai().chat.completions.create(model="agentao", messages=messages, extra_headers=key)
    assert [one.choices[0].message.content, two.choices[0].message.content] == [
        "Answer one.",
        "Answer two.",
    ]


def test_an_anthropic_session_key_reaches_its_conversation_from_any_replica(
    pair: Replicas,
) -> None:
    """`POST /v1/messages` names its conversation as chat does (`X-Session-Id`): B passes
    the request to A, which holds it, and the same agent session answers."""
    a, b = pair.started
    key = {"X-Session-Id": "desk-9"}
    said = []
    for replica in (a, b):
        client = anthropic.Anthropic(base_url=replica.url, api_key=replica.token, max_retries=0)
        message = client.messages.create(
            model="agentao",
            max_tokens=64,
            messages=[{"role": "user", "content": "hi"}],
            extra_headers=key,
        )
        said.append(message.content[0].text)
    assert said == ["Answer one.", "Answer two."]
    assert "passing POST /v1/messages to " + a.url in pair.since(b)


def test_a_chat_without_a_key_is_passed_to_the_holder_once_its_transcript_names_it(
    pair: Replicas,
) -> None:
    a, b = pair.started
    messages: list[Any] = [{"role": "user", "content": "hello"}]
    one = a.openai().chat.completions.create(model="agentao", messages=messages)
    messages += [
        {"role": "assistant", "content": one.choices[0].message.content},
        {"role": "user", "content": "and then?"},
    ]
    # No key: B finds the conversation by the transcript's hash, then A (the holder) runs
    # the turn on the same agent session, which says its second answer.
    two = b.openai().chat.completions.create(model="agentao", messages=messages)
    assert two.choices[0].message.content == "Answer two."
    assert "passing POST /v1/chat/completions to " + a.url in pair.since(b)


def test_a_watcher_on_one_replica_follows_a_turn_on_another(pair: Replicas) -> None:
    a, b = pair.started
    slow = {"agent": "agentao", "prompt": "slow"}
    task = httpx.post(f"{a.url}/v1/tasks", json=slow, headers=a.auth).json()
    frames: list[dict[str, Any]] = []
    url = f"ws://127.0.0.1:{b.port}/v1/tasks/{task['id']}/stream"
    with ws_client.connect(url, subprotocols=b.ws_protocols) as socket:
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
    a, b = replicas.start_together()
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
    conversation = httpx.get(f"{b.url}/v1/conversations", headers=b.auth).json()["data"][0]
    assert conversation["turn_count"] == 2  # hello, then where were we (the killed one: not)


# Each round is the same kill of the replica running a turn, then a new replica: eight
# rounds make each of the chain's replicas the runner, the survivor and a newcomer, and
# settle one killed boot after another into the same database; more rounds (there were
# 20) repeat that path and prove nothing more, at 1.5 s each.
KILL_ROUNDS = 8


def test_repeated_kills_mid_turn_lose_no_completed_turn(replicas: Replicas) -> None:
    """Round after round, the replica running a turn is SIGKILLed and a new one started:
    every completed turn stays, no response stays in progress, no agent is left behind."""
    live = replicas.start_together()
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
        newcomer = replicas.start(wait=False)  # it starts up while the kill is settled
        _until(lambda d=doomed, s=survivor: _status(s, d.id) == "failed", "settled")
        previous = turn
        live = [survivor, newcomer.ready()]
    reader = live[0].openai()
    assert {reader.responses.retrieve(r).status for r in completed} == {"completed"}
    assert {reader.responses.retrieve(r).status for r in killed} == {"failed"}
    _until(lambda: not any(_alive(pid) for pid in agents), "every killed replica's agents exited")
    last = reader.responses.create(
        model="agentao", input="still there?", previous_response_id=previous.id
    )
    conversation = httpx.get(
        f"{live[0].url}/v1/conversations/{last.x_conversation_id}", headers=live[0].auth
    ).json()
    assert conversation["turn_count"] == len(completed) + 1  # every completed turn, no other


def _status(replica: ServedGateway, response_id: str) -> str:
    return replica.openai().responses.retrieve(response_id).status


# Long enough that B sees A gone quiet (3 heartbeats: 0.9 s) with 3 s to spare before A's
# lease runs out (6 s before: the test waits out the whole lease).
STALL_LEASE_SECONDS = 4.0


def test_a_replica_that_stalls_past_its_lease_cannot_write_over_the_new_owner(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    # A longer lease: B's "gone quiet" answer (after 3 heartbeats) has seconds to be seen.
    replicas = Replicas(tmp_path, postgres_server.create_database(), STALL_LEASE_SECONDS)
    try:
        _stall_and_fence(replicas)
    finally:
        replicas.stop()


def _stall_and_fence(replicas: Replicas) -> None:
    a, b = replicas.start_together()
    first = a.openai().responses.create(model="agentao", input="hello")
    task = httpx.post(
        f"{a.url}/v1/tasks",
        json={"agent": "agentao", "prompt": "slow", "conversation_id": first.x_conversation_id},
        headers=a.auth,
    ).json()
    os.kill(a.proc.pid, signal.SIGSTOP)  # A stalls mid-turn (its agent goes on)
    try:
        # While A's lease runs, B sends nobody to a holder gone quiet: 503, come back later.
        body = {"model": "agentao", "input": "go on", "previous_response_id": first.id}
        wait = _until(
            lambda: (
                (r := httpx.post(f"{b.url}/v1/responses", json=body, headers=b.auth)).status_code
                == 503
                and r
            ),
            "B saw A go quiet",
        )
        assert wait.json()["error"]["code"] == "conversation_elsewhere"
        assert 1 <= int(wait.headers["retry-after"]) <= replicas.lease_seconds
        # A is silent past its lease: B takes the conversation over and runs a turn on it.
        after = _until(lambda: _continued(b, first.id), "B took the conversation over", timeout=60)
        # Its turn went through: no frame of the settled A numbered into B's log meanwhile.
        assert after.status == "completed", after.error
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
    conversation = httpx.get(
        f"{b.url}/v1/conversations/{first.x_conversation_id}", headers=b.auth
    ).json()
    assert conversation["turn_count"] == 3


def _ended_by_a(b: ServedGateway, task_id: str) -> dict[str, Any] | None:
    """The task's row once A itself ended it (B had settled it as A's when A went quiet)."""
    row = httpx.get(f"{b.url}/v1/tasks/{task_id}", headers=b.auth).json()
    return row if row["status"] == "ended" or "took" in (row.get("error") or "") else None


def _continued(b: ServedGateway, previous: str) -> Any:
    try:
        return b.openai().responses.create(
            model="agentao", input="go on", previous_response_id=previous
        )
    except Exception:  # 307 to a stalled A, or 503 until its lease expires
        return None


def test_readiness_says_whether_the_store_answers(pair: Replicas) -> None:
    a = pair.started[0]
    assert httpx.get(f"{a.url}/readyz").json() == {"status": "ready", "problems": []}


def test_a_replica_that_stops_leaves_its_conversations_to_the_others(
    replicas: Replicas,
) -> None:
    a, b = replicas.start_together()
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


async def test_a_remote_acp_client_on_one_replica_shares_a_session_live_on_another(
    keyed_pair: Replicas,
) -> None:
    a, b = keyed_pair.started
    auth = {"Authorization": f"Bearer {ALICE}"}
    at_a, sid = await _session_on(a, keyed_pair.work, answer="wait")
    at_b = await SdkPeer.connect(f"{b.url}/acp", headers=auth)
    try:
        # B loads the session A holds: the history as the gateway logged it.
        await at_b.initialize()
        await at_b.conn.load_session(session_id=sid, cwd=str(keyed_pair.work), mcp_servers=[])
        # The SDK runs each notification's handler as a task of its own and resolves the
        # reply at once: the replay (sent before the reply) may be handled just after it.
        await _eventually(lambda: at_b.texts(sid) == "Answer one.")
        assert at_b.kinds()[0] == "user_message_chunk"

        # B's prompt runs on A; A's question reaches B's client (A's own client leaves it
        # open), B's answer reaches A's agent, and the question is withdrawn from A's.
        done = await at_b.conn.prompt(session_id=sid, prompt=[text_block("please write")])
        assert done.stop_reason == "end_turn"
        assert (keyed_pair.work / "one.txt").read_text() == "1\n"
        await _eventually(lambda: at_b.texts(sid).endswith("Wrote one.txt."))
        await _eventually(lambda: at_a.texts(sid).endswith("Wrote one.txt."))  # one live session
        assert len(at_a.asked) == len(at_b.asked) == 1
        await _eventually(lambda: _withdrawn(keyed_pair.store_url, at_a))

        # A turn A's client starts is seen live at B, and B's cancel stops it on A.
        running = asyncio.ensure_future(
            at_a.conn.prompt(session_id=sid, prompt=[text_block("slow")])
        )
        await _eventually(lambda: "tick" in at_b.texts(sid))
        await at_b.conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(running, 30)).stop_reason == "cancelled"
        # B's mode change is the holder's to make (remote/far.py): A's client sees it.
        before = at_a.kinds().count("current_mode_update")
        await at_b.conn.set_session_mode(session_id=sid, mode_id="plan")
        await _eventually(lambda: at_a.kinds().count("current_mode_update") > before)
    finally:
        await at_a.close()
        await at_b.close()


async def test_a_remote_session_whose_holder_stopped_moves_to_the_client_s_replica(
    keyed: Replicas,
) -> None:
    a, b = keyed.start_together()
    auth = {"Authorization": f"Bearer {ALICE}"}
    at_a, sid = await _session_on(a, keyed.work)
    at_b = await SdkPeer.connect(f"{b.url}/acp", headers=auth)
    try:
        await at_b.initialize()
        await at_b.conn.load_session(session_id=sid, cwd=str(keyed.work), mcp_servers=[])
        await at_a.close()
        a.stop()  # an orderly stop gives its conversations up
        done = await at_b.conn.prompt(session_id=sid, prompt=[text_block("again")])
        # (B's agent answers from its own copy of the script: its first answer again.)
        assert done.stop_reason == "end_turn" and at_b.texts(sid) == "Answer one." * 2
        async with httpx.AsyncClient(headers=auth) as http:
            listed = (await http.get(f"{b.url}/v1/conversations")).json()["data"]
        assert [c["turn_count"] for c in listed] == [2]  # the turn on A, then B's
    finally:
        await at_b.close()


async def _eventually(check: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "never happened"
        await asyncio.sleep(0.05)


async def _session_on(replica: ServedGateway, work: Path, **kw: Any) -> tuple[SdkPeer, str]:
    """An SDK client of `replica` as alice, with a session opened there and one turn done."""
    peer = await SdkPeer.connect(
        f"{replica.url}/acp", headers={"Authorization": f"Bearer {ALICE}"}, **kw
    )
    await peer.initialize()
    sid = (await peer.conn.new_session(cwd=str(work), mcp_servers=[])).session_id
    done = await peer.conn.prompt(session_id=sid, prompt=[text_block("hello")])
    assert done.stop_reason == "end_turn"
    return peer, sid


def _withdrawn(store_url: str, peer: SdkPeer) -> bool:
    """Whether the gateway took a question back from `peer` (the SDK's client has no
    handler for `$/cancel_request`, so it is read from the store)."""
    import psycopg

    with psycopg.connect(store_url, autocommit=True) as conn:
        rows = conn.execute(
            # (An agent update is stored as a reference to the log, with no body.)
            "SELECT body FROM gw_acp_messages WHERE connection_id = %s "
            "AND log_conversation IS NULL",
            (peer.transport._connection_id,),
        ).fetchall()
    return any(json.loads(bytes(r[0])).get("method") == "$/cancel_request" for r in rows)


async def test_a_remote_session_another_replica_took_over_is_followed_there(
    keyed: Replicas,
) -> None:
    a, b = keyed.start_together()
    auth = {"Authorization": f"Bearer {ALICE}"}
    at_a, sid = await _session_on(a, keyed.work)
    try:
        async with httpx.AsyncClient(headers=auth, timeout=30) as http:
            conv = (await http.get(f"{a.url}/v1/conversations")).json()["data"][0]["id"]
            # A stalls past its lease: B takes the conversation over and runs a turn on it.
            os.kill(a.proc.pid, signal.SIGSTOP)
            try:
                brief = {"agent": "agentao", "prompt": "brief", "conversation_id": conv}
                task = await _eventually_started(http, b, brief)
                await _eventually(lambda: _ended(b, task["id"]))
            finally:
                os.kill(a.proc.pid, signal.SIGCONT)
        # A's client prompts again: A finds B holding it, and the client follows it there.
        done = await at_a.conn.prompt(session_id=sid, prompt=[text_block("again")])
        assert done.stop_reason == "end_turn"
        assert at_a.texts(sid) == "Answer one.Answer one."  # B's agent: its own script copy
    finally:
        await at_a.close()


async def _eventually_started(
    http: httpx.AsyncClient, replica: ServedGateway, task: dict[str, Any]
) -> dict[str, Any]:
    """The task started (503 while the stalled holder's lease runs out)."""
    for _ in range(600):
        reply = await http.post(f"{replica.url}/v1/tasks", json=task)
        if reply.status_code == 201:
            return reply.json()
        await asyncio.sleep(0.05)
    raise AssertionError(f"never started: {reply.status_code} {reply.text}")


def _ended(replica: ServedGateway, task_id: str) -> bool:
    auth = {"Authorization": f"Bearer {ALICE}"}
    return httpx.get(f"{replica.url}/v1/tasks/{task_id}", headers=auth).json()["status"] == "ended"


class CountingReplica:
    """A replica that only counts what it is asked: a loopback HTTP server entered in the
    store's list of live replicas (its heartbeat an hour ahead), answering every request
    as a replica that knows nothing of it would (400 `permission_request_not_found`)."""

    def __init__(self, store_url: str) -> None:
        import http.server
        import threading

        self.asked: list[str] = []
        asked = self.asked

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                asked.append(f"{self.command} {self.path}")
                self.rfile.read(int(self.headers.get("content-length") or 0))
                body = b'{"error": {"code": "permission_request_not_found", "message": "no"}}'
                self.send_response(400)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.store_url = store_url
        self._store(
            "INSERT INTO gw_replicas (boot_id, url, heartbeat_at) "
            "VALUES ('boot_counting', %s, extract(epoch from now()) + 3600)",
            self.url,
        )

    def _store(self, sql: str, *args: Any) -> None:
        import psycopg

        with psycopg.connect(self.store_url, autocommit=True) as conn:
            conn.execute(sql, args)

    def close(self) -> None:
        """Leaves the replicas (the pair it joined serves other tests) and stops."""
        self._store("DELETE FROM gw_replicas WHERE boot_id = 'boot_counting'")
        self.server.shutdown()
        self.server.server_close()


def test_a_question_s_answer_goes_to_the_holder_found_in_the_log_asking_nobody_else(
    keyed_pair: Replicas,
) -> None:
    a, b = keyed_pair.started
    counting = CountingReplica(keyed_pair.store_url)
    try:
        auth = {"Authorization": f"Bearer {ALICE}"}
        task = {"agent": "agentao", "prompt": "please write", "permission_policy": "ask"}
        first = httpx.post(f"{a.url}/v1/tasks", json=task, headers=auth).json()
        # B lists A's question from the log; another key lists nothing, answers nothing.
        asked = _until(lambda: _questions(b, ALICE), "B lists A's question")
        assert [(q["taskId"], q["conversationId"]) for q in asked] == [
            (first["id"], first["conversation_id"])
        ]
        assert asked[0]["tool"]["title"] and asked[0]["deadline"] > 0
        assert _questions(b, BOB) == []
        answer = f"{b.url}/v1/permissions/{asked[0]['requestId']}"
        allow = {"optionId": _allow(asked[0])}
        bob = httpx.post(answer, json=allow, headers={"Authorization": f"Bearer {BOB}"})
        assert bob.status_code == 400
        assert bob.json()["error"]["code"] == "permission_request_not_found"
        # An id no log holds: the same 400, from B alone.
        nobody = httpx.post(f"{b.url}/v1/permissions/perm_nobody", json=allow, headers=auth)
        assert nobody.json()["error"]["code"] == "permission_request_not_found"
        # A page on B that shows it holds its deadline off: passed to A, whose desk has it.
        moved = httpx.post(f"{answer}/presence", headers=auth)
        assert moved.status_code == 200, moved.text
        assert moved.json()["deadline"] >= asked[0]["deadline"]
        # The owner's answer: one forward, B to A (the holder, found in the log).
        assert httpx.post(answer, json=allow, headers=auth).json()["accepted"] is True
        _until(lambda: (keyed_pair.work / "one.txt").exists(), "A's turn wrote the file")
        passed = [
            line
            for line in keyed_pair.since(b).splitlines()
            if "passing POST /v1/permissions/" in line
        ]
        assert len(passed) == 2 and all(a.url in line for line in passed)
        assert sum("/presence" in line for line in passed) == 1
        _until(lambda: _questions(b, ALICE) == [], "the answered question is no longer open")
        # Nothing went to the third replica: not the listings, not the answers.
        assert counting.asked == []
    finally:
        counting.close()
