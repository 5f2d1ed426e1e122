"""The gateway's pool drives ACP v2 agents natively (gateway/agent_protocol.py, pool.py).

Real gateway, real agent processes in their bubblewrap sandboxes: the official TS SDK's v2
agent (tests/peers/v2_agent.mjs, which speaks only v2) and codex-acp 2.6.0 over v2 against
the fake LLM. Through every face: the OpenAI Chat Completions API (the real `openai`
client, streaming and not), the task stream, and remote ACP clients of v1 (the prompt's
reply when the agent goes idle, with its stop reason) and v2 (the bridge, from the log);
a permission round trip, a cancel, a conversation coming back after a gateway restart
(`session/resume` with replay), and what a read-only key ceiling leaves such an agent,
which asks nobody before it touches a file: its sandbox. Everything the gateway sends the
agent is recorded (tests/fakes/tee_agent.py) and checked against the v2 schema.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import openai
import pytest
from websockets.sync.client import connect
from websockets.typing import Subprotocol

from agentao.gateway.ceilings import CeilingRules
from agentao.gateway.config import AgentSpec, ApiKey, ConfigError, Limits, config_from_dict
from agentao.gateway.confine import AgentSandbox
from tests.e2e.test_v2_peers import codex_replies
from tests.fakes.fake_llm import FakeLLM
from tests.gateway.conftest import LiveGateway, key_protocol, scripted_spec
from tests.gateway.test_remote_v2 import INIT_V1, HttpV2, is_update, states, update_of, updates
from tests.npm_peers import PEERS_DIR, NpmPeers, codex_env
from tests.schema_check import check_recording

pytestmark = pytest.mark.timeout(90)
needs_bwrap = pytest.mark.skipif(  # under CI (any CI value) a missing bwrap fails the test
    shutil.which("bwrap") is None and not os.environ.get("CI"),
    reason="bubblewrap is not installed (CI installs it)",
)
TEE = Path(__file__).resolve().parents[1] / "fakes" / "tee_agent.py"
AGENT = "v2"
HELLO = "Hello from the v2 agent."
ASK_TURN = [
    {"tool": {"id": "t1", "title": "Write hello.txt", "kind": "edit", "status": "pending"}},
    {"ask": {"toolCallId": "t1", "title": "Write hello.txt?"}},
    {"tool": {"id": "t1", "status": "completed", "content": "wrote it"}},
    {"say": ["Wrote ", "hello.txt."]},
]


def _key(name: str, ceiling: str) -> ApiKey:
    digest = hashlib.sha256(f"sk-{name}".encode()).hexdigest()
    return ApiKey(name, digest, ceiling=ceiling, policy=ceiling)  # type: ignore[arg-type]


KEYS = (_key("admin", "all"), _key("reader", "reads"))


def ts_spec(tmp: Path, peers: NpmPeers, turns: list[list[dict[str, Any]]], **kw: Any) -> AgentSpec:
    """The TS v2 agent playing `turns`, its sessions kept in a state directory (so another
    process resumes them), every line it reads and writes recorded in `tmp/agent.jsonl`."""
    work, state = tmp / "work", tmp / "agent-state"
    for folder in (work, state):
        folder.mkdir(parents=True, exist_ok=True)
    script = state / "script.json"
    script.write_text(json.dumps({"turns": turns}))
    agent = peers.agent_command("--script", str(script), "--state", str(state))
    command = (sys.executable, str(TEE), str(state / "agent.jsonl"), "--", *agent)
    sandbox = AgentSandbox(read=(str(PEERS_DIR), str(TEE.parent)), write=(str(state),))
    return AgentSpec(AGENT, command, cwd=str(work), sandbox=sandbox, **kw)


def processes(gw: LiveGateway) -> list[list[dict[str, Any]]]:
    """What each agent process the gateway started read and wrote, in start order."""
    path = Path(gw.config.agents[0].sandbox.write[0]) / "agent.jsonl"
    runs: list[list[dict[str, Any]]] = []
    for line in map(json.loads, path.read_text().splitlines()):
        if line["dir"] == "start":
            runs.append([])
        else:
            runs[-1].append(line)
    return runs


def recording(gw: LiveGateway) -> list[dict[str, Any]]:
    """The lines of the processes that spoke v2 (under `auto`, the pool's first process
    offered v1, which the TS agent refused: that one is checked as v1, `schema_errors`)."""
    return [line for run in processes(gw) if _version(run) == 2 for line in run]


def schema_errors(gw: LiveGateway) -> list[str]:
    """Everything the gateway and the agent sent each other that is off their version's
    schema, each process by the version its `initialize` asked for."""
    return [e for run in processes(gw) for e in check_recording(run, _version(run))]


def _version(run: list[dict[str, Any]]) -> int:
    return int(run[0]["msg"]["params"]["protocolVersion"]) if run else 2


def sent_methods(gw: LiveGateway) -> list[str]:
    return [m["msg"].get("method", "") for m in recording(gw) if m["dir"] == "send"]


def chat(gw: LiveGateway, text: str, key: str = "sk-admin", **kw: Any) -> Any:
    return gw.openai(key).chat.completions.create(
        model=AGENT, messages=[{"role": "user", "content": text}], **kw
    )


# ---- the OpenAI face -------------------------------------------------------------------------


def test_openai_chat_over_a_v2_only_agent(
    gateway_factory: Any, tmp_path: Path, v2_peers: NpmPeers
) -> None:
    spec = ts_spec(tmp_path, v2_peers, [[{"say": ["Hel", "lo"]}], [{"think": ["hmm"]}]])
    gw = gateway_factory(keys=KEYS, agents=(spec,))
    reply = chat(gw, "hi")
    assert reply.choices[0].message.content == "Hello"
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage is not None and reply.usage.total_tokens == 15  # from the idle update
    stream = list(chat(gw, "again", stream=True, stream_options={"include_usage": True}))
    deltas = [c.choices[0].delta for c in stream if c.choices]
    reasoning = "".join(getattr(d, "reasoning_content", None) or "" for d in deltas)
    assert "hmm" in reasoning
    assert [c.choices[0].finish_reason for c in stream if c.choices][-1] == "stop"
    client = gw.gateway.pools[AGENT].workers[0].client
    assert client.protocol_version == 2  # natively, not through a fallback
    # auto: each process offered v1 first, which the agent refused, then spoke v2
    workers = len(gw.gateway.pools[AGENT].workers)  # one per key ceiling
    assert sorted(_version(run) for run in processes(gw)) == [1] * workers + [2] * workers
    assert schema_errors(gw) == []  # everything the gateway sent, too


def test_a_permission_round_trip_and_the_refusal(
    gateway_factory: Any, tmp_path: Path, v2_peers: NpmPeers
) -> None:
    spec = ts_spec(tmp_path, v2_peers, [ASK_TURN, ASK_TURN])
    gw = gateway_factory(keys=KEYS, agents=(spec,))
    allowed = chat(gw, "write", extra_headers={"X-Permission-Policy": "all"}, stream=True)
    deltas = [c.choices[0].delta for c in allowed if c.choices]
    assert "".join(d.content or "" for d in deltas) == "Wrote hello.txt."
    reasoning = "".join(getattr(d, "reasoning_content", None) or "" for d in deltas)
    assert "Running: Write hello.txt" in reasoning, reasoning
    refused = chat(gw, "write", extra_headers={"X-Permission-Policy": "reject"})
    assert refused.choices[0].message.content == ""  # the agent ended the turn, refused
    answers = [
        m["msg"]["result"]["outcome"]
        for m in recording(gw)
        if m["dir"] == "send" and "result" in m["msg"] and "outcome" in m["msg"]["result"]
    ]
    assert [a["optionId"] for a in answers] == ["allow", "reject"]
    assert schema_errors(gw) == []


def test_a_client_that_leaves_cancels_the_v2_turn(
    gateway_factory: Any, tmp_path: Path, v2_peers: NpmPeers
) -> None:
    turns = [[{"say": ["working"]}, {"wait_for_cancel": True}], [{"say": ["next"]}]]
    gw = gateway_factory(keys=KEYS, agents=(ts_spec(tmp_path, v2_peers, turns),))
    with chat(gw, "long", stream=True, extra_headers={"X-Session-Id": "c1"}) as stream:
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                break  # the client goes away mid-turn
    # The next request waits for the cancelling turn (cancel_grace_seconds), then runs.
    after = chat(gw, "next", extra_headers={"X-Session-Id": "c1"})
    assert after.choices[0].message.content == "next"
    assert "session/cancel" in sent_methods(gw)
    assert schema_errors(gw) == []


# ---- the task stream, and remote ACP clients of both versions ---------------------------------


def test_the_task_stream_reads_a_v2_agent_in_the_one_shape(
    gateway_factory: Any, tmp_path: Path, v2_peers: NpmPeers
) -> None:
    gw = gateway_factory(keys=KEYS, agents=(ts_spec(tmp_path, v2_peers, [ASK_TURN]),))
    with gw.http("sk-admin") as http:
        body = {"agent": AGENT, "prompt": "write", "permission_policy": "all"}
        task = http.post("/v1/tasks", json=body, headers={"X-Permission-Policy": "all"})
        assert task.status_code == 201, task.text
        url = gw.ws_url(task.json()["stream_url"])
    protocols = [Subprotocol("agentao.v1"), Subprotocol(key_protocol("sk-admin"))]
    with connect(url, subprotocols=protocols) as ws:
        frames = [json.loads(m) for m in ws]
    assert frames[-1]["type"] == "task-ended", frames[-1]
    assert frames[-1]["stopReason"] == "end_turn"
    kinds = [f["update"]["sessionUpdate"] for f in frames if f["type"] == "task-running"]
    # v1's shape, as from a v1 agent: a tool_call first, no state_update, no prompt echo
    assert kinds[0] == "tool_call" and "tool_call_update" in kinds, kinds
    assert "state_update" not in kinds and "user_message_chunk" not in kinds
    assert not any("messageId" in f.get("update", {}) for f in frames)


def test_the_web_uis_view_of_a_v2_agents_turn(
    gateway_factory: Any, tmp_path: Path, v2_peers: NpmPeers
) -> None:
    """The view (gateway/views.py) folds the log as for a v1 agent: one tool call item for
    its updates, the agent's message, the turn with the stop reason and usage of the idle."""
    gw = gateway_factory(agents=(ts_spec(tmp_path, v2_peers, [ASK_TURN]),))
    with gw.http() as http:
        body = {"agent": AGENT, "prompt": "write"}
        task = http.post("/v1/tasks", json=body, headers={"X-Permission-Policy": "all"}).json()
        with connect(gw.ws_url(task["stream_url"])) as ws:
            assert [json.loads(m) for m in ws][-1]["type"] == "task-ended"
        view = http.get(f"/v1/conversations/{task['conversation_id']}/view").json()
    items = view["items"]
    (tool,) = [i for i in items if i["kind"] == "tool_call"]
    assert (tool["title"], tool["status"]) == ("Write hello.txt", "completed"), tool
    said = [i["text"] for i in items if i["kind"] == "message" and i["role"] == "agent"]
    assert said == ["Wrote hello.txt."]
    (turn,) = [i for i in items if i["kind"] == "turn"]
    assert (turn["prompt"], turn["stopReason"]) == ("write", "end_turn")
    assert turn["usage"]["totalTokens"] == 15


async def test_a_remote_v1_client_on_a_v2_agent_gets_v1(
    gateway_factory: Any, tmp_path: Path, v2_peers: NpmPeers
) -> None:
    gw = gateway_factory(agents=(ts_spec(tmp_path, v2_peers, [ASK_TURN]),))
    cwd = gw.config.agents[0].cwd
    v1 = HttpV2(f"http://127.0.0.1:{gw.port}/acp", INIT_V1)
    try:
        init = await v1.open()
        assert init["result"]["protocolVersion"] == 1, init
        assert init["result"]["agentCapabilities"]["loadSession"] is True
        opened = await v1.call("session/new", {"cwd": cwd, "mcpServers": []})
        sid = opened["result"]["sessionId"]
        await v1.watch(sid)
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "write"}]}
        asked_at = len(v1.received)
        replied = asyncio.ensure_future(v1.call("session/prompt", prompt, sid))
        asked = await v1.wait_for(
            lambda m: m.get("method") == "session/request_permission", asked_at
        )
        assert "toolCall" in asked["params"] and "subject" not in asked["params"]
        answer = {"outcome": {"outcome": "selected", "optionId": "allow"}}
        await v1.send({"jsonrpc": "2.0", "id": asked["id"], "result": answer}, sid)
        result = await replied
        assert result["result"]["stopReason"] == "end_turn"  # the reply came at idle
        kinds = [u["sessionUpdate"] for u in updates(v1.received)]
        assert kinds.count("tool_call") == 1 and "state_update" not in kinds, kinds
        said = "".join(
            u["content"]["text"]
            for u in updates(v1.received)
            if u["sessionUpdate"] == "agent_message_chunk"
        )
        assert said == "Wrote hello.txt."
        assert v1.errors(version=1) == []  # every message v1, by its schema
    finally:
        await v1.close()


async def test_a_remote_v2_client_on_a_v2_agent_gets_v2(
    gateway_factory: Any, tmp_path: Path, v2_peers: NpmPeers
) -> None:
    gw = gateway_factory(agents=(ts_spec(tmp_path, v2_peers, [ASK_TURN]),))
    cwd = gw.config.agents[0].cwd
    v2 = HttpV2(f"http://127.0.0.1:{gw.port}/acp")
    try:
        assert (await v2.open())["result"]["protocolVersion"] == 2
        sid = (await v2.call("session/new", {"cwd": cwd}))["result"]["sessionId"]
        await v2.watch(sid)
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "write"}]}
        ack = await v2.call("session/prompt", prompt, sid)
        assert "messageId" in ack["result"], ack
        asked = await v2.wait_for(lambda m: m.get("method") == "session/request_permission")
        assert asked["params"]["subject"]["type"] == "tool_call"
        answer = {"outcome": {"outcome": "selected", "optionId": "allow"}}
        await v2.send({"jsonrpc": "2.0", "id": asked["id"], "result": answer}, sid)
        idle = await v2.wait_for(is_update("state_update", state="idle"))
        assert update_of(idle)["stopReason"] == "end_turn"
        assert states(v2.received) == ["running", "requires_action", "running", "idle"]
        echoes = [u for u in updates(v2.received) if u["sessionUpdate"] == "user_message_chunk"]
        assert len(echoes) == 1  # the bridge's echo; the agent's own is not logged twice
        assert v2.errors() == []
    finally:
        await v2.close()


# ---- confinement: a v2 agent asks nobody before it touches a file --------------------------


@needs_bwrap
def test_a_read_only_ceiling_holds_a_v2_agent_by_its_sandbox(
    gateway_factory: Any, tmp_path: Path, v2_peers: NpmPeers
) -> None:
    """The TS agent reads and writes files itself (no client fs/* the gateway could
    refuse): under a `reads` key its workspace is read-only and nothing outside it is
    there; an `all` key's process (the control) writes the same file."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("operator's secret")
    spec = ts_spec(tmp_path / "gw", v2_peers, [])
    work = Path(spec.cwd)
    (work / "notes.txt").write_text("remember the milk")
    tries = {
        "read": [str(work / "notes.txt"), str(outside / "secret.txt")],
        "write": [str(work / "planted.txt")],
    }
    script = Path(spec.sandbox.write[0]) / "script.json"
    script.write_text(json.dumps({"turns": [[{"fs": tries}]]}))  # each process's first turn
    gw = gateway_factory(keys=KEYS, agents=(spec,))

    seen = json.loads(chat(gw, "touch", key="sk-reader").choices[0].message.content)
    assert seen["write"][str(work / "planted.txt")] == "EROFS", seen
    assert not (work / "planted.txt").exists()
    assert seen["read"][str(outside / "secret.txt")] == "ENOENT", seen
    assert seen["read"][str(work / "notes.txt")] == "ok: remember the milk"  # it may read

    control = json.loads(chat(gw, "touch", key="sk-admin").choices[0].message.content)
    assert control["write"][str(work / "planted.txt")] == "ok", control
    assert control["read"][str(outside / "secret.txt")] == "ENOENT"  # outside: never there


# ---- a conversation coming back after a restart: session/resume (v2 has no load) ------------


def test_a_conversation_comes_back_after_a_restart_by_resume(
    gateway_factory: Any, tmp_path: Path, v2_peers: NpmPeers
) -> None:
    spec = ts_spec(tmp_path, v2_peers, [[{"say": ["first"]}]])
    first = gateway_factory(agents=(spec,))
    said = chat(first, "one", extra_headers={"X-Session-Id": "kept"})
    assert said.choices[0].message.content == "first"
    first.stop()

    again = gateway_factory(agents=(spec,))  # the same store; its agent a new process
    reply = chat(again, "two", extra_headers={"X-Session-Id": "kept"})
    assert reply.choices[0].message.content == "first"  # a new process plays from the top
    last = processes(again)[-1]
    asked = [m["msg"] for m in last if m["dir"] == "send" and "method" in m["msg"]]
    resume = next(m for m in asked if m["method"] == "session/resume")
    assert resume["params"]["replayFrom"] == {"type": "start"}
    assert "session/new" not in [m["method"] for m in asked]  # the same agent session
    assert schema_errors(again) == []


# ---- codex-acp 2.6.0, told to speak v2 (it speaks both; `auto` would drive it in v1) ---------


def codex_spec(tmp: Path, peers: NpmPeers, fake: FakeLLM, protocol: int) -> AgentSpec:
    """codex-acp against the fake LLM, its CODEX_HOME a path its sandbox may write."""
    work, home = tmp / "codex-work", tmp / "codex-home"
    work.mkdir(parents=True, exist_ok=True)
    env = codex_env(home, fake)
    sandbox = AgentSandbox(read=(str(PEERS_DIR),), write=(str(home),))
    command = (str(peers.codex_acp),)
    return AgentSpec("codex", command, cwd=str(work), env=tuple(env.items()), sandbox=sandbox,
                     protocol=protocol)  # fmt: skip


@pytest.mark.parametrize("protocol", [2, 1])
def test_codex_acp_through_the_gateway_in_either_version(
    gateway_factory: Any, tmp_path: Path, v2_peers: NpmPeers, fake_llm: FakeLLM, protocol: int
) -> None:
    """The same chat, the same answer: over v2 natively, and (the control) over v1."""
    codex_replies(fake_llm)
    fake_llm.reply("Hello ", "from ", "the fake.")
    fake_llm.reply("Streamed ", "too.")
    gw = gateway_factory(agents=(codex_spec(tmp_path, v2_peers, fake_llm, protocol),))
    client = gw.openai()
    messages = [{"role": "user", "content": "say hello"}]
    reply = client.chat.completions.create(model="codex", messages=messages)
    text = reply.choices[0].message.content or ""
    # codex's warning about the fake model's metadata: over v2 a notice, over v1 text
    assert text == "Hello from the fake." if protocol == 2 else text.endswith("the fake.")
    assert reply.choices[0].finish_reason == "stop"
    stream = client.chat.completions.create(
        model="codex", messages=[{"role": "user", "content": "stream"}], stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices).endswith("too.")
    assert gw.gateway.pools["codex"].workers[0].client.protocol_version == protocol


# ---- the setting -------------------------------------------------------------------------------


def _protocol(value: Any) -> int | None:
    agent = {"command": "agent --acp", **({} if value is None else {"protocol": value})}
    return config_from_dict({"agents": {"a": agent}}).agents[0].protocol


def test_the_protocol_setting_is_auto_unless_named() -> None:
    assert _protocol(None) is None and _protocol("auto") is None
    assert _protocol("1") == 1 and _protocol(2) == 2
    for bad in ("3", True, "v2"):
        with pytest.raises(ConfigError, match=r"agents\.a\.protocol must be one of"):
            _protocol(bad)


def test_an_agent_told_to_speak_v1_that_speaks_only_v2_is_not_served(
    gateway_factory: Any, tmp_path: Path, v2_peers: NpmPeers
) -> None:
    """`protocol = "1"` is the operator's word: no fallback, a clear 503 (and `auto`, the
    control, serves the same agent: every test above)."""
    spec = ts_spec(tmp_path, v2_peers, [], protocol=1)
    gw = gateway_factory(agents=(spec,), limits=Limits(start_timeout_seconds=1.0))
    with pytest.raises(openai.APIStatusError) as refused:
        chat(gw, "hi", key="")
    assert refused.value.status_code == 503
    assert "agent_unavailable" in refused.value.response.text
    assert [_version(run) for run in processes(gw)][:1] == [1]  # only v1 was offered
    assert 2 not in [_version(run) for run in processes(gw)]


def test_a_ceilings_start_mode_is_set_as_v2s_mode_option(
    gateway_factory: Any, tmp_path: Path, v2_peers: NpmPeers, fake_llm: FakeLLM
) -> None:
    """v2 has no session/set_mode: the mode named for a ceiling is set through the
    session's config option of category `mode`, and codex then works in it."""
    codex_replies(fake_llm)
    fake_llm.reply("ok")
    spec = codex_spec(tmp_path, v2_peers, fake_llm, 2)
    ruled = replace(spec, ceilings=(("all", CeilingRules(mode="read-only")),))
    gw = gateway_factory(agents=(ruled,))
    chat_codex = gw.openai().chat.completions.create
    assert chat_codex(model="codex", messages=[{"role": "user", "content": "hi"}])
    turn = [r for r in fake_llm.requests if r.body.get("model") == fake_llm.model]
    told = json.dumps(turn[-1].body)
    assert "`sandbox_mode` is `read-only`" in told, "codex was not put in the ceiling's mode"


# ---- our own agent, which speaks both, driven in v2 when the operator names it -------------


@needs_bwrap
def test_our_agent_named_protocol_2_is_driven_in_v2_through_every_face(
    gateway_factory: Any, tmp_path: Path
) -> None:
    """`protocol = "2"` on an agent that speaks both (ours): the pool's process speaks v2, a
    file write asks its permission in v2's shape and is answered by the request's policy,
    the task stream and the OpenAI answer read it in the one (v1) shape, and the write is
    the agent's own, inside its sandbox (no fs/* reaches the gateway)."""
    spec = replace(scripted_spec(tmp_path), protocol=2)
    gw = gateway_factory(agents=(spec,))
    reply = gw.openai().chat.completions.create(
        model=spec.name,
        messages=[{"role": "user", "content": "write"}],
        extra_headers={"X-Permission-Policy": "all"},
    )
    assert reply.choices[0].message.content == "Wrote hello.txt."
    assert (Path(spec.cwd) / "hello.txt").read_text() == "hi\n"
    client = gw.gateway.pools[spec.name].workers[0].client
    assert client.protocol_version == 2
    with gw.http() as http:
        task = http.post(
            "/v1/tasks",
            json={"agent": spec.name, "prompt": "read"},
            headers={"X-Permission-Policy": "all"},
        ).json()
    with connect(gw.ws_url(task["stream_url"])) as ws:
        frames = [json.loads(m) for m in ws]
    assert frames[-1]["type"] == "task-ended" and frames[-1]["stopReason"] == "end_turn"
    # the policy answered the agent's v2 question at once: its answer is in the log
    (answered,) = [f for f in frames if f["type"] == "permission-response"]
    assert answered["optionId"] == "allow", answered
    kinds = [f["update"]["sessionUpdate"] for f in frames if f["type"] == "task-running"]
    # v1's shape, as from our agent over v1: the call opened once, no v2 state or echo
    assert kinds.count("tool_call") == 1 and "tool_call_update" in kinds, kinds
    assert "state_update" not in kinds and "user_message_chunk" not in kinds
    assert not any("messageId" in f.get("update", {}) for f in frames)
