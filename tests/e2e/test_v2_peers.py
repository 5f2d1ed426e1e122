"""The real v2 peers of tests/peers work and speak ACP v2 (issue 22's test partners).

The official TypeScript SDK's v2 client (`v2_client.mjs`) drives the SDK's v2 agent
(`v2_agent.mjs`) over real pipes, and every message either side sends validates against the
official v2 schema (tests/schema_check.py). codex-acp 2.x answers `initialize` in version 2
and in version 1 from one install, and streams an answer from the fake LLM over v2.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from tests.fakes.fake_llm import FakeLLM, FakeReply
from tests.npm_peers import NpmPeers, codex_env
from tests.schema_check import check_recording

PEER_TIMEOUT = 60  # seconds: a stuck peer fails the test instead of hanging the suite
V1_SCHEMA = Path(__file__).resolve().parents[2] / "spec" / "acp-schema.v1.json"
TRANSCRIPTS = Path(__file__).resolve().parents[1] / "data" / "real-agent-transcripts"

READ_WITH_PERMISSION = [
    {"think": ["let me read it"]},
    {"tool": {"id": "read-1", "title": "Read hello.txt", "kind": "read", "status": "pending"}},
    {"ask": {"toolCallId": "read-1", "title": "Read hello.txt?"}},
    {"tool": {"id": "read-1", "status": "in_progress"}},
    {"tool": {"id": "read-1", "status": "completed", "content": "hi"}},
    {"say": ["It says ", "hi."]},
]


def run_client(peers: NpmPeers, agent: list[str], *args: str, env: dict[str, str] | None = None
               ) -> list[dict[str, Any]]:  # fmt: skip
    """Run v2_client.mjs against `agent`; the wire it printed, one dict a message."""
    done = subprocess.run(
        peers.client_command(agent, *args),
        capture_output=True, text=True, timeout=PEER_TIMEOUT, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def scripted_agent(peers: NpmPeers, tmp_path: Path, *turns: list[dict[str, Any]]) -> list[str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": list(turns)}))
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    return peers.agent_command("--script", str(script), "--state", str(state))


def updates(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        m["msg"]["params"]["update"]
        for m in lines
        if m["dir"] == "recv" and m["msg"].get("method") == "session/update"
    ]


def result_of(lines: list[dict[str, Any]], method: str) -> list[dict[str, Any]]:
    """Results of the client's `method` requests, in order (ids restart with each agent
    process, so each request takes the first answer with its id after it)."""
    waiting: set[Any] = set()
    results = []
    for line in lines:
        msg = line["msg"]
        if line["dir"] == "send" and msg.get("method") == method:
            waiting.add(msg["id"])
        elif line["dir"] == "recv" and "method" not in msg and msg.get("id") in waiting:
            waiting.discard(msg["id"])
            results.append(msg["result"])
    return results


def states(lines: list[dict[str, Any]]) -> list[str]:
    return [u["state"] for u in updates(lines) if u["sessionUpdate"] == "state_update"]


# --- the TS v2 client and the TS v2 agent -----------------------------------------------


def test_the_ts_v2_client_drives_the_ts_v2_agent(v2_peers: NpmPeers, tmp_path: Path) -> None:
    agent = scripted_agent(v2_peers, tmp_path, [{"say": ["Hel", "lo"]}], READ_WITH_PERMISSION)
    lines = run_client(v2_peers, agent, "--cwd", str(tmp_path), "--prompt", "hi",
                       "--prompt", "read hello.txt", "--resume")  # fmt: skip

    assert check_recording(lines, 2) == []
    (init, _again) = result_of(lines, "initialize")
    assert init["protocolVersion"] == 2 and init["capabilities"]["session"] == {}
    first, second = result_of(lines, "session/prompt")
    echoed = [u for u in updates(lines) if u["sessionUpdate"] == "user_message"]
    assert [u["messageId"] for u in echoed[:2]] == [first["messageId"], second["messageId"]]
    chunks = [u for u in updates(lines) if u["sessionUpdate"] == "agent_message_chunk"]
    assert "".join(c["content"]["text"] for c in chunks[:2]) == "Hello"
    assert len({c["messageId"] for c in chunks[:2]}) == 1
    tool = [u for u in updates(lines) if u["sessionUpdate"] == "tool_call_update"]
    assert [u["status"] for u in tool[:3]] == ["pending", "in_progress", "completed"]
    assert {u["toolCallId"] for u in tool} == {"read-1"}
    assert states(lines)[:6] == ["running", "idle", "running", "requires_action", "running", "idle"]


def test_resume_replays_the_session_in_a_second_agent_process(
    v2_peers: NpmPeers, tmp_path: Path
) -> None:
    agent = scripted_agent(v2_peers, tmp_path, [{"say": ["Hel", "lo"]}])
    lines = run_client(v2_peers, agent, "--cwd", str(tmp_path), "--prompt", "hi", "--resume")

    assert check_recording(lines, 2) == []
    resumed_at = next(n for n, m in enumerate(lines) if m["msg"].get("method") == "session/resume")
    live, replay = updates(lines[:resumed_at]), updates(lines[resumed_at:])
    kept = [u for u in live if u["sessionUpdate"] != "state_update"]
    assert replay == [*kept, {"sessionUpdate": "state_update", "state": "idle"}]
    assert result_of(lines, "session/resume") == [{}]


def test_a_rejected_permission_fails_the_tool_call(v2_peers: NpmPeers, tmp_path: Path) -> None:
    agent = scripted_agent(v2_peers, tmp_path, READ_WITH_PERMISSION)
    lines = run_client(v2_peers, agent, "--prompt", "read", "--permission", "reject")

    assert check_recording(lines, 2) == []
    tool = [u for u in updates(lines) if u["sessionUpdate"] == "tool_call_update"]
    assert [u["status"] for u in tool] == ["pending", "failed"]
    assert states(lines) == ["running", "requires_action", "running", "idle"]
    assert updates(lines)[-1]["stopReason"] == "end_turn"


def test_a_cancel_at_a_permission_ends_the_turn_cancelled(
    v2_peers: NpmPeers, tmp_path: Path
) -> None:
    agent = scripted_agent(v2_peers, tmp_path, READ_WITH_PERMISSION)
    lines = run_client(v2_peers, agent, "--prompt", "read", "--permission", "cancel")

    assert check_recording(lines, 2) == []
    sent = [m["msg"].get("method") for m in lines if m["dir"] == "send"]
    assert "session/cancel" in sent
    tool = [u for u in updates(lines) if u["sessionUpdate"] == "tool_call_update"]
    assert [u["status"] for u in tool] == ["pending", "cancelled"]
    assert updates(lines)[-1] == {**updates(lines)[-1], "state": "idle", "stopReason": "cancelled"}


def test_the_v2_checker_catches_what_the_schema_forbids(v2_peers: NpmPeers, tmp_path: Path) -> None:
    """The checker is not vacuous: a chunk without its messageId, a misspelt update kind
    and a prompt answer without a messageId are each caught (the real wire is the control)."""
    agent = scripted_agent(v2_peers, tmp_path, [{"say": ["Hel", "lo"]}])
    lines = run_client(v2_peers, agent, "--prompt", "hi")
    assert check_recording(lines, 2) == []

    chunk_at = next(n for n, m in enumerate(lines) if "agent_message_chunk" in json.dumps(m))
    no_id, misspelt, no_ack = (copy.deepcopy(lines) for _ in range(3))
    del no_id[chunk_at]["msg"]["params"]["update"]["messageId"]
    misspelt[chunk_at]["msg"]["params"]["update"]["sessionUpdate"] = "agent_mesage_chunk"
    ack_at = next(n for n, m in enumerate(lines) if "messageId" in m["msg"].get("result", {}))
    no_ack[ack_at]["msg"]["result"] = {}
    assert len(check_recording(no_id, 2)) == 1
    assert check_recording(misspelt, 2) == [
        f"#{chunk_at} recv session/update: update kind 'agent_mesage_chunk' not in the v2 schema"
    ]
    assert check_recording(no_ack, 2) == [
        f"#{ack_at} recv session/prompt: $: 'messageId' is a required property"
    ]


# --- codex-acp 2.x ----------------------------------------------------------------------


def initialize_codex(
    peers: NpmPeers, env: dict[str, str], params: dict[str, Any]
) -> dict[str, Any]:
    """One initialize exchange with a fresh codex-acp process, raw JSON over its pipes."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    with subprocess.Popen(
        [str(peers.codex_acp)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
    ) as agent:
        assert agent.stdin is not None and agent.stdout is not None
        agent.stdin.write(json.dumps(request) + "\n")
        agent.stdin.flush()
        answer = json.loads(agent.stdout.readline())
        agent.stdin.close()
        agent.wait(timeout=PEER_TIMEOUT)
    return answer


def test_codex_acp_answers_initialize_in_version_2_and_in_version_1(
    v2_peers: NpmPeers, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    env = codex_env(tmp_path / "codex-home", fake_llm)
    info = {"name": "agentao-tests", "version": "0"}
    v2 = initialize_codex(v2_peers, env, {"protocolVersion": 2, "info": info, "capabilities": {}})
    v1 = initialize_codex(v2_peers, env, {"protocolVersion": 1, "clientCapabilities": {},
                                          "clientInfo": info})  # fmt: skip

    assert v2["result"]["protocolVersion"] == 2
    assert v2["result"]["info"]["name"] == "@agentclientprotocol/codex-acp"
    assert v2["result"]["info"]["version"].startswith("2.")
    assert "session" in v2["result"]["capabilities"]
    assert check_recording([{"dir": "send", "msg": {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": 2, "info": info}}},
                     {"dir": "recv", "msg": v2}], 2) == []  # fmt: skip
    assert v1["result"]["protocolVersion"] == 1
    assert "agentCapabilities" in v1["result"] and "capabilities" not in v1["result"]
    defs = json.loads(V1_SCHEMA.read_text())["$defs"]
    v1_answer = Draft202012Validator({"$defs": defs, "$ref": "#/$defs/InitializeResponse"})
    assert [e.message for e in v1_answer.iter_errors(v1["result"])] == []


def codex_replies(fake: FakeLLM) -> None:
    """Answer codex's side requests (a session title, on another model) apart from the
    turn's queue, so the queued replies go to the turn."""
    fake.respond = lambda body: FakeReply(["A title"]) if body.get("model") != fake.model else None


def test_codex_acp_streams_a_prompt_over_v2_from_the_fake_llm(
    v2_peers: NpmPeers, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    env = codex_env(tmp_path / "codex-home", fake_llm)
    codex_replies(fake_llm)
    fake_llm.reply("Hello ", "from ", "the fake.")
    ws = tmp_path / "ws"
    ws.mkdir()
    lines = run_client(v2_peers, [str(v2_peers.codex_acp)], "--cwd", str(ws),
                       "--prompt", "say hello", env=env)  # fmt: skip

    assert check_recording(lines, 2) == []
    chunks = [u for u in updates(lines) if u["sessionUpdate"] == "agent_message_chunk"]
    # codex may join deltas that arrive together; the text and its one message are what hold
    assert "".join(c["content"]["text"] for c in chunks) == "Hello from the fake."
    assert len({c["messageId"] for c in chunks}) == 1
    (ack,) = result_of(lines, "session/prompt")
    echo = [u for u in updates(lines) if u["sessionUpdate"].startswith("user_message")]
    assert {u["messageId"] for u in echo} == {ack["messageId"]}
    assert states(lines) == ["running", "idle"]
    assert updates(lines)[-1]["stopReason"] == "end_turn"
    turn = [r for r in fake_llm.requests if r.body.get("model") == fake_llm.model]
    assert [r.path for r in turn] == ["/v1/responses"]


def test_the_ts_v2_agent_refuses_version_1(v2_peers: NpmPeers) -> None:
    """A v2-only agent asked for version 1 answers -32022 (unsupported protocol version)."""
    ask_v1 = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": 1, "clientCapabilities": {}}}  # fmt: skip
    done = subprocess.run(
        v2_peers.agent_command(), input=json.dumps(ask_v1) + "\n",
        capture_output=True, text=True, timeout=PEER_TIMEOUT,
    )  # fmt: skip
    answer = json.loads(done.stdout.splitlines()[0])
    assert answer["error"]["code"] == -32022
    assert answer["error"]["data"] == {"requested": 1, "supported": [2]}


def test_the_recorded_codex_v2_transcript_follows_the_v2_schema() -> None:
    """tests/data/real-agent-transcripts/codex-acp-v2.jsonl, test data for the client and
    the gateway, is what the schema allows (a v2 hello, a read, a permission)."""
    path = TRANSCRIPTS / "codex-acp-v2.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]

    assert check_recording(lines, 2) == []
    methods = {m["msg"].get("method") for m in lines}
    assert {"initialize", "session/new", "session/prompt", "session/request_permission"} <= methods
    assert "requires_action" in states(lines)
    assert "/tmp/" not in path.read_text() and "127.0.0.1" not in path.read_text()
