"""agentao.client over ACP v2, and its fallback to v1: real agents over real pipes.

The client offers v2 and falls back to v1 (client.py "Protocol versions"). Against the
scripted TS v2 agent (tests/peers/v2_agent.mjs, the official SDK's v2 API) and codex-acp
2.x (tests/npm_peers.py) it speaks v2: the prompt's `{messageId}` ack, the turn's end on
the idle `state_update`, keyed tool-call upserts, permission requests in v2's shape, cancel
and resume with replay, all as the same typed events and view as v1. Against v1 agents
(our fake agents, agentao's own `agentao --acp`, codex-acp told `protocol=1`) it speaks
exactly v1. Every line the client sends over v2 (and every one it receives) is checked
against the official v2 schema (tests/schema_check.py); the v1 ones against v1.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentao.client import (
    AgentCommand,
    AgentDisconnected,
    Client,
    ClientPolicy,
    HandshakeError,
    PermissionDecision,
    TurnEnd,
    Update,
)
from tests.fakes.fake_llm import FakeLLM, FakeReply
from tests.npm_peers import NpmPeers, codex_env
from tests.schema_check import check_recording

FAKES = Path(__file__).resolve().parent.parent / "fakes" / "fake_agents"
DEMO = Path(__file__).resolve().parents[2] / "src" / "agentao" / "cli" / "demo_script.json"
pytestmark = pytest.mark.timeout(90)


def script_agent(peers: NpmPeers, tmp_path: Path, *turns: list[dict[str, Any]]) -> AgentCommand:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": list(turns)}))
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    return AgentCommand(tuple(peers.agent_command("--script", str(script), "--state", str(state))))


def recording(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def sent(lines: list[dict[str, Any]], method: str) -> list[dict[str, Any]]:
    return [x["msg"] for x in lines if x["dir"] == "send" and x["msg"].get("method") == method]


def sends(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [x for x in lines if x["dir"] == "send"]


def split_by_version(lines: list[dict[str, Any]]) -> tuple[list[dict], list[dict]]:
    """A recording cut where the second `initialize` (the v1 fallback) was sent."""
    starts = [i for i, x in enumerate(lines) if x["msg"].get("method") == "initialize"]
    cut = starts[1] if len(starts) > 1 else len(lines)
    return lines[:cut], lines[cut:]


async def events_of(session, prompt: str) -> list[Any]:
    return [event async for event in session.prompt(prompt)]


# --- the TS v2 agent ------------------------------------------------------------------


async def test_a_v2_prompt_streams_the_same_typed_events_and_view(
    v2_peers: NpmPeers, tmp_path: Path
) -> None:
    turn = [
        {"think": ["hmm"]},
        {"say": ["Hel", "lo"]},
        {"tool": {"id": "t1", "title": "Read a.txt", "kind": "read", "status": "in_progress"}},
        {"tool": {"id": "t1", "status": "completed", "content": "the text"}},
        {"say": ["Done."]},
    ]
    record = tmp_path / "wire.jsonl"
    async with Client(script_agent(v2_peers, tmp_path, turn), record=str(record)) as client:
        assert client.protocol_version == 2
        assert client.agent_info.name == "agentao-test-v2-agent"
        assert client.supports("resume") and client.supports("close")
        session = await client.new_session(str(tmp_path))
        events = await events_of(session, "hi")

    end = events[-1]
    assert isinstance(end, TurnEnd) and end.stop_reason == "end_turn"
    assert end.usage.total_tokens == 15  # the idle state_update's usage
    kinds = [e.kind for e in events if isinstance(e, Update)]
    # the upsert's first sight is a v1 `tool_call`, the patch a `tool_call_update`
    assert [k for k in kinds if k.startswith("tool")] == ["tool_call", "tool_call_update"]
    assert kinds[0] == "state_update" and kinds[-1] == "state_update"
    assert [e.text for e in events if isinstance(e, Update) and e.text] == [
        "hi", "hmm", "Hel", "lo", "Done."
    ]  # fmt: skip
    items = [{k: v for k, v in i.items() if k != "id"} for i in session.view.items()]
    assert [(i["kind"], i.get("role"), i.get("text")) for i in items if i["kind"] == "message"] == [
        ("message", "user", "hi"),
        ("message", "thought", "hmm"),
        ("message", "agent", "Hello"),
        ("message", "agent", "Done."),  # another messageId: another message
    ]
    (tool,) = [i for i in items if i["kind"] == "tool_call"]
    assert (tool["title"], tool["status"], tool["output"]) == (
        "Read a.txt",
        "completed",
        "the text",
    )
    assert session.view.state == "idle"
    lines = recording(record)
    assert check_recording(lines, 2) == []
    (init,) = sent(lines, "initialize")
    assert set(init["params"]) == {"protocolVersion", "info", "capabilities"}


@pytest.mark.parametrize(("approve", "status", "after"), [("all", "pending", "after"),
                                                          ("none", "failed", None)])  # fmt: skip
async def test_a_v2_permission_request_is_answered_by_the_policy(
    v2_peers: NpmPeers, tmp_path: Path, approve: str, status: str, after: str | None
) -> None:
    turn = [
        {"tool": {"id": "w1", "title": "Write b.txt", "kind": "edit", "status": "pending"}},
        {"ask": {"toolCallId": "w1", "title": "Write b.txt?"}},
        {"say": ["after"]},
    ]
    record = tmp_path / "wire.jsonl"
    agent = script_agent(v2_peers, tmp_path, turn)
    async with Client(agent, policy=ClientPolicy(approve=approve), record=str(record)) as client:
        session = await client.new_session(str(tmp_path))
        events = await events_of(session, "write")

    (decision,) = [e for e in events if isinstance(e, PermissionDecision)]
    assert decision.approved is (approve == "all")
    assert (decision.request.tool_call_id, decision.request.title) == ("w1", "Write b.txt")
    states = [e.value.state for e in events if isinstance(e, Update) and e.kind == "state_update"]
    assert states == ["running", "requires_action", "running", "idle"]
    assert session.tool_calls["w1"].status == status
    assert session.view.text == (after or "")
    assert isinstance(events[-1], TurnEnd) and events[-1].stop_reason == "end_turn"
    lines = recording(record)
    assert check_recording(lines, 2) == []
    (answer,) = [x["msg"] for x in lines if x["dir"] == "send" and "result" in x["msg"]]
    assert answer["result"]["outcome"]["optionId"] == ("allow" if approve == "all" else "reject")


async def test_a_v2_mode_change_reads_as_v1s_and_moves_the_sessions_mode(
    v2_peers: NpmPeers, tmp_path: Path
) -> None:
    """v2 says a mode change only as a `config_option_update` of its mode option: the
    client reads it as v1's (options by `id`) and as a `current_mode_update` after it."""
    modes = [{"value": "ask", "name": "Ask"}, {"value": "code", "name": "Code"}]
    option = {"configId": "approvals", "name": "Mode", "category": "mode", "type": "select",
              "currentValue": "ask", "options": modes}  # fmt: skip
    turn = [{"set": {"configId": "approvals", "value": "code"}}, {"say": ["done"]}]
    script = tmp_path / "modes.json"
    script.write_text(json.dumps({"turns": [turn], "config": [option]}))
    agent = AgentCommand(tuple(v2_peers.agent_command("--script", str(script))))
    async with Client(agent) as client:
        session = await client.new_session(str(tmp_path))
        assert (session.modes, session.current_mode) == (["ask", "code"], "ask")
        events = await events_of(session, "go")
    kinds = [e.kind for e in events if isinstance(e, Update)]
    assert kinds.index("config_option_update") + 1 == kinds.index("current_mode_update")
    (options,) = [e for e in events if isinstance(e, Update) and e.kind == "config_option_update"]
    assert options.value.config_options[0].id == "approvals"  # decoded as v1's
    assert session.current_mode == "code"


async def test_a_v2_cancel_ends_the_turn_idle_cancelled(v2_peers: NpmPeers, tmp_path: Path) -> None:
    turn = [{"say": ["working"]}, {"wait_for_cancel": True}]
    record = tmp_path / "wire.jsonl"
    async with Client(script_agent(v2_peers, tmp_path, turn), record=str(record)) as client:
        session = await client.new_session(str(tmp_path))
        prompt = session.prompt("go")
        events = []
        async for event in prompt:
            events.append(event)
            if isinstance(event, Update) and event.text == "working":
                await prompt.cancel()

    end = events[-1]
    assert isinstance(end, TurnEnd) and end.stop_reason == "cancelled" and not end.forced
    lines = recording(record)
    assert len(sent(lines, "session/cancel")) == 1
    assert check_recording(lines, 2) == []


async def test_a_v2_agent_that_dies_mid_turn_ends_it_with_agent_disconnected(
    v2_peers: NpmPeers, tmp_path: Path
) -> None:
    """The prompt was acknowledged, so no request is pending for EOF to fail: the turn
    must still end (with what came before), never wait for an idle that cannot come."""
    turn = [{"say": ["working"]}, {"wait_for_cancel": True}]
    async with Client(script_agent(v2_peers, tmp_path, turn)) as client:
        session = await client.new_session(str(tmp_path))
        seen = []
        with pytest.raises(AgentDisconnected) as failed:
            async for event in session.prompt("go"):
                seen.append(event)
                if isinstance(event, Update) and event.text == "working":
                    os.kill(client.process.pid, signal.SIGKILL)
    assert failed.value.exit_code == -signal.SIGKILL
    assert [e.text for e in seen if isinstance(e, Update) and e.text] == ["go", "working"]


async def test_a_v2_session_resumes_with_replay_in_a_second_process(
    v2_peers: NpmPeers, tmp_path: Path
) -> None:
    agent = script_agent(v2_peers, tmp_path, [{"say": ["remember me"]}])
    async with Client(agent) as client:
        session = await client.new_session(str(tmp_path))
        await events_of(session, "first")
        first_view = session.view.items()
        session_id = session.id
    record = tmp_path / "resume.jsonl"
    async with Client(agent, record=str(record)) as client:
        resumed = await client.resume_session(session_id, str(tmp_path), replay=True)
        replayed = resumed.drain()

    assert [e.text for e in replayed if isinstance(e, Update) and e.text] == [
        "first",
        "remember me",
    ]
    assert resumed.view.items() == first_view
    (resume,) = sent(recording(record), "session/resume")
    assert resume["params"]["replayFrom"] == {"type": "start"}
    assert check_recording(recording(record), 2) == []


# --- v1 agents: the fallback --------------------------------------------------------------


def scenario(*args: str) -> AgentCommand:
    return AgentCommand((sys.executable, str(FAKES / "scenario.py"), *args))


@pytest.mark.parametrize("refusal", [[], ["--refuse-v2", "-32602"], ["--refuse-v2", "-32022"]])
async def test_a_v1_agent_gets_exactly_the_v1_handshake(tmp_path: Path, refusal: list[str]) -> None:
    """A v1 agent that answers 1 to the v2 offer, or refuses it: the client initializes as
    v1 (today's clientCapabilities) and speaks v1."""
    record = tmp_path / "wire.jsonl"
    async with Client(scenario(*refusal), record=str(record)) as client:
        assert client.protocol_version == 1
        session = await client.new_session(str(tmp_path))
        events = await events_of(session, "caps")

    caps = json.loads([e.text for e in events if isinstance(e, Update) and e.text][-1])
    assert caps == {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}
    offer, rest = split_by_version(recording(record))
    assert check_recording(sends(offer), 2) == [] and check_recording(rest, 1) == []
    (v1_init,) = sent(rest, "initialize")
    assert v1_init["params"]["protocolVersion"] == 1


async def test_an_agent_that_takes_one_initialize_is_started_again_as_v1(tmp_path: Path) -> None:
    """It answers the v2 offer with version 1, then refuses the v1 initialize: the client
    starts it again and speaks v1 only, with today's capabilities."""
    record = tmp_path / "wire.jsonl"
    async with Client(scenario("--one-initialize"), record=str(record)) as client:
        assert client.protocol_version == 1
        session = await client.new_session(str(tmp_path))
        events = await events_of(session, "caps")

    caps = json.loads([e.text for e in events if isinstance(e, Update) and e.text][-1])
    assert caps == {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}
    lines = recording(record)
    assert [m["params"]["protocolVersion"] for m in sent(lines, "initialize")] == [2, 1, 1]
    assert check_recording(sends(lines[:1]), 2) == []


async def test_given_streams_are_not_reopened(tmp_path: Path) -> None:
    """The same agent on streams the caller owns: no second process to start, a clear error."""
    import asyncio

    proc = await asyncio.create_subprocess_exec(
        *scenario("--one-initialize").argv, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    client = Client()
    try:
        with pytest.raises(HandshakeError, match="after answering the v2 offer"):
            await client.start((proc.stdout, proc.stdin))
    finally:
        proc.kill()
        await proc.wait()


@pytest.mark.parametrize(("protocol", "served"), [(None, False), (1, True)])
async def test_a_v2_agent_gets_no_file_through_the_client(
    tmp_path: Path, protocol: int | None, served: bool
) -> None:
    """v2 has no client `fs/*`: a v2 agent asking for a file inside the session's own
    directory gets -32601. The control: the same agent over v1 gets the file."""
    (tmp_path / "inside.txt").write_text("inside\n")
    async with Client(scenario("--v2"), protocol=protocol) as client:
        assert client.protocol_version == (protocol or 2)
        session = await client.new_session(str(tmp_path))
        events = await events_of(session, f"fs-read {tmp_path / 'inside.txt'}")
    answer = json.loads([e.text for e in events if isinstance(e, Update) and e.text][-1])
    assert answer == ({"content": "inside\n"} if served else {**answer, "code": -32601})
    assert isinstance(events[-1], TurnEnd) and events[-1].stop_reason == "end_turn"


async def test_protocol_1_sends_one_v1_initialize(tmp_path: Path) -> None:
    """The control: told to speak v1, the client never offers 2."""
    record = tmp_path / "wire.jsonl"
    async with Client(scenario(), record=str(record), protocol=1) as client:
        assert client.protocol_version == 1
    (init,) = sent(recording(record), "initialize")
    assert init["params"]["protocolVersion"] == 1


async def test_protocol_2_refuses_a_v1_agent(tmp_path: Path) -> None:
    with pytest.raises(HandshakeError, match="told 2"):
        async with Client(scenario(), protocol=2):
            pass


async def test_an_unknown_protocol_is_a_handshake_error(tmp_path: Path) -> None:
    with pytest.raises(HandshakeError, match="protocol 3"):
        async with Client(scenario(), protocol=3):
            pass


async def test_a_v2_answer_without_sessions_gets_the_v1_initialize(tmp_path: Path) -> None:
    """Version 2 without `capabilities.session` offers no session surface: the client
    initializes again as v1 (the agent settles the version again) and speaks v1."""
    record = tmp_path / "wire.jsonl"
    async with Client(scenario("--v2-without-sessions"), record=str(record)) as client:
        assert client.protocol_version == 1
        session = await client.new_session(str(tmp_path))
        events = await events_of(session, "hello")
    assert isinstance(events[-1], TurnEnd) and events[-1].stop_reason == "end_turn"
    offer, rest = split_by_version(recording(record))
    assert offer[1]["msg"]["result"]["protocolVersion"] == 2
    assert check_recording(offer, 2) == [] and check_recording(rest, 1) == []


def shown(items: list[dict[str, Any]], root: str) -> list[dict[str, Any]]:
    """View items without what differs between two runs: ids, the temporary root."""
    text = json.dumps([{k: v for k, v in i.items() if k != "toolCallId"} for i in items])
    return json.loads(text.replace(root, "<ws>"))


async def test_our_agent_over_v2_and_v1_folds_into_the_same_view(tmp_path: Path) -> None:
    """agentao --acp serves v2 sessions: the client speaks v2 with it by default, and the
    demo turn (a plan, a file written and edited, a command) is the same view as over v1;
    over v2 the command is the agent's own terminal, its output and exit folded in."""
    views, terminals = {}, {}
    for run in (None, 1):
        ws, home = tmp_path / f"ws-{run}", tmp_path / f"home-{run}"
        ws.mkdir(exist_ok=True)
        home.mkdir(exist_ok=True)
        env = {"LLM_PROVIDER": "SCRIPTED", "AGENTAO_SCRIPT": str(DEMO), "AGENTAO_HOME": str(home)}
        record = tmp_path / f"wire-{run}.jsonl"
        policy = ClientPolicy(approve="all")
        agent = AgentCommand.ours(env=env)
        async with Client(agent, policy=policy, record=str(record), protocol=run) as client:
            assert client.protocol_version == (run or 2)
            session = await client.new_session(str(ws))
            end = await session.prompt("greeting, please").run()
        assert end.stop_reason == "end_turn"
        assert check_recording(recording(record), run or 2) == []
        views[run] = (shown(session.view.items(), str(ws)), session.view.plan)
        terminals[run] = session.view.terminals
    (v2_items, v2_plan), (v1_items, v1_plan) = views[None], views[1]
    assert v2_plan == v1_plan and len(v2_items) == len(v1_items)
    assert terminals[1] == {}  # v1: the command ran in the client's terminal
    (terminal,) = terminals[None].values()  # v2: the agent's own, folded into the view
    assert terminal.exited and terminal.exit_code == 0 and terminal.command
    for over_v2, over_v1 in zip(v2_items, v1_items, strict=True):
        if over_v1.get("toolKind") == "execute":  # v1: the client's terminal; v2: the agent's
            assert over_v2["terminals"] == [terminal.terminal_id]
            assert over_v2["output"] == terminal.text  # streamed live, and text at the end
            over_v1 = {**over_v1, "terminals": over_v2["terminals"], "output": over_v2["output"]}
        if over_v1.get("diffs"):  # v2 says a written file was added; v1 sends oldText ""
            over_v1 = {**over_v1, "diffs": [{**d, "created": True} for d in over_v1["diffs"]]}
            over_v2 = {**over_v2, "diffs": [{**d, "created": True} for d in over_v2["diffs"]]}
        assert over_v2 == over_v1


# --- codex-acp 2.x, over v2 and over v1 ---------------------------------------------------


def codex(peers: NpmPeers, tmp_path: Path, fake: FakeLLM) -> AgentCommand:
    # codex asks another model for a session title: answered apart from the turn's queue
    fake.respond = lambda body: FakeReply(["A title"]) if body.get("model") != fake.model else None
    env = codex_env(tmp_path / "codex-home", fake)
    return AgentCommand((str(peers.codex_acp),), env=env, inherit_env=False)


@pytest.mark.parametrize("protocol", [None, 1])
async def test_codex_acp_streams_a_prompt_into_the_same_view(
    v2_peers: NpmPeers, tmp_path: Path, fake_llm: FakeLLM, protocol: int | None
) -> None:
    fake_llm.reply("Hello ", "from ", "the fake.")
    ws = tmp_path / "ws"
    ws.mkdir()
    record = tmp_path / "wire.jsonl"
    agent = codex(v2_peers, tmp_path, fake_llm)
    async with Client(agent, record=str(record), protocol=protocol) as client:
        assert client.protocol_version == (protocol or 2)
        session = await client.new_session(str(ws))
        events = await events_of(session, "say hello")

    assert isinstance(events[-1], TurnEnd) and events[-1].stop_reason == "end_turn"
    assert session.view.commands  # v2: from session/new's result; v1: an update
    items = session.view.items()
    messages = [(i["role"], i["text"]) for i in items if i["kind"] == "message"]
    user, agent = messages
    assert user == ("user", "say hello")  # v1: our prompt; v2: codex's echo of it
    assert agent[0] == "agent" and agent[1].endswith("Hello from the fake.")
    # codex's own difference: its model warning is a v2 `notice`, but v1 message text
    warning = "Model metadata for `fake-model` not found"
    notices = [i["title"] for i in items if i["kind"] == "notice"]
    if protocol == 1:
        assert warning in agent[1] and notices == []
    else:
        assert agent[1] == "Hello from the fake." and warning in notices[0]
    lines = recording(record)
    # what we send follows the schema; codex's v1 `session/new` carries a `models` of its own
    assert check_recording(sends(lines) if protocol == 1 else lines, protocol or 2) == []


# --- agentao run --protocol ---------------------------------------------------------------


def agentao_run(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "agentao", "run", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("flag", "versions"), [([], [2, 1]), (["--protocol", "1"], [1])])
def test_agentao_run_offers_v2_unless_told_protocol_1(
    tmp_path: Path, flag: list[str], versions: list[int]
) -> None:
    record = tmp_path / "wire.jsonl"
    agent = f"{sys.executable} {FAKES / 'scenario.py'}"
    done = agentao_run("--agent", agent, "--record", str(record), *flag, "hello")
    assert done.returncode == 0, done.stderr
    initialized = [m["params"]["protocolVersion"] for m in sent(recording(record), "initialize")]
    assert initialized == versions


def test_agentao_run_protocol_2_drives_a_v2_agent(v2_peers: NpmPeers, tmp_path: Path) -> None:
    agent = " ".join(script_agent(v2_peers, tmp_path, [{"say": ["from v2"]}]).argv)
    record = tmp_path / "wire.jsonl"
    done = agentao_run("--agent", agent, "--protocol", "2", "--record", str(record), "hi")
    assert done.returncode == 0, done.stderr
    assert "from v2" in done.stdout and "end_turn" in done.stdout
    assert check_recording(recording(record), 2) == []


def test_agentao_run_refuses_an_unknown_protocol() -> None:
    done = agentao_run("--protocol", "3", "hi")
    assert done.returncode == 2 and "--protocol" in done.stderr
