"""A v2 agent's own terminal through the gateway (agent_terminals.py, remote/bridge.py).

Real gateway; behind it our own agent under `protocol = 2`, every line it reads and
writes recorded (tests/fakes/tee_agent.py). Its shell command prints a line, then holds a
FIFO open until it is killed. While it runs: a remote v1 reader of the session gets that
line as the tool call's text (and the web UI's view of the stored log shows it), and a remote v2 client the agent's real `terminal_update`
(cancellable) and `terminal_output_chunk`, the terminal in the call's content. The v2
client's `terminal/cancel` reaches the agent (an unknown id is -32602 with nothing sent;
another key's session is not found), the command dies, the turn goes on. Every message
the gateway sends a client is checked against its version's schema.
"""

from __future__ import annotations

import base64
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentao.gateway.config import AgentSandbox, AgentSpec
from tests.gateway.conftest import LiveGateway, scripted_spec
from tests.gateway.test_remote_v2 import (
    INIT_V1,
    HttpV2,
    Message,
    is_update,
    peer_for,
    update_of,
    updates,
    v1_text,
)
from tests.gateway.test_tool_call_cancel import (
    _allow,
    _auth,
    _key,
    _open_session,
    _read,
    _read_to_eof,
    agent_received,
)
from tests.gateway.test_v2_pool import TEE, needs_bwrap
from tests.waiting import until

pytestmark = [pytest.mark.timeout(60), needs_bwrap]
# prints a line (not in the command's own text), then holds the FIFO open while it runs
LIVE = "printf 'live-%s\\n' output; exec 3>held.fifo; echo started >&3; sleep 60"
SCRIPT = [
    {
        "match": "hold",
        "tool_calls": [{"name": "run_shell_command", "arguments": {"command": LIVE}, "id": "s1"}],
    },
    {"match": "hold", "text": "Stopped."},
]


def _v2_agent(tmp: Path) -> AgentSpec:
    spec = replace(scripted_spec(tmp, SCRIPT), protocol=2)
    logs = tmp / "agent-log"
    logs.mkdir(exist_ok=True)
    command = (sys.executable, str(TEE), str(logs / "agent.jsonl"), "--", *spec.command)
    sandbox = AgentSandbox(read=(str(TEE.parent),), write=(str(logs),))
    return replace(spec, command=command, sandbox=sandbox)


def _chunk_of(text: bytes) -> Any:
    data = base64.b64encode(text).decode()
    return lambda m: (
        update_of(m).get("sessionUpdate") == "terminal_output_chunk"
        and update_of(m).get("data") == data
    )


def _web_view_shows(gw: LiveGateway, text: str) -> list[dict[str, Any]]:
    """The tool call items of the web UI's view (the stored log, folded) showing `text`."""
    with httpx.Client(base_url=gw.url, headers=_auth("alice")) as http:
        conversation = http.get("/v1/conversations").json()["data"][0]["id"]
        items = http.get(f"/v1/conversations/{conversation}/view").json()["items"]
    return [i for i in items if i["kind"] == "tool_call" and text in i.get("output", "")]


def _v1_live(message: Message) -> bool:
    update = update_of(message)
    return update.get("toolCallId") == "s1" and "live-output" in str(update.get("content"))


@pytest.mark.parametrize("scheme", ["ws"])
async def test_a_v2_agents_terminal_reaches_v1_and_v2_readers_live_and_cancels(
    gateway_factory: Any, tmp_path: Path, scheme: str
) -> None:
    keys = (_key("alice"), _key("bob"))
    gw: LiveGateway = gateway_factory(agents=(_v2_agent(tmp_path),), keys=keys)
    cwd = gw.config.agents[0].cwd
    fifo = Path(cwd) / "held.fifo"
    os.mkfifo(fifo)
    alice, bob = peer_for(gw, scheme, _auth("alice")), peer_for(gw, scheme, _auth("bob"))
    watcher = HttpV2(f"http://127.0.0.1:{gw.port}/acp", INIT_V1, _auth("alice"))
    try:
        sid = await _open_session(alice, cwd)
        await watcher.open()
        loaded = {"sessionId": sid, "cwd": cwd, "mcpServers": []}
        assert "result" in await watcher.call("session/load", loaded)
        await watcher.watch(sid)
        await bob.open()
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "hold it"}]}
        await alice.call("session/prompt", prompt, sid)
        held = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the command's end meets it
        try:
            await _allow(alice)
            started = await _read(held)  # the command runs, and runs until it is killed
            chunk = await alice.wait_for(_chunk_of(b"live-output\n"))
            v1_live = await watcher.wait_for(_v1_live)
            shown = await until(lambda: _web_view_shows(gw, "live-output"), "the web UI's view")
            terms = [u for u in updates(alice.received) if u["sessionUpdate"] == "terminal_update"]
            term = terms[0]
            tid = term["terminalId"]
            unknown = await alice.call("terminal/cancel", {"sessionId": sid, "terminalId": "t9"})
            theirs = await bob.call("terminal/cancel", {"sessionId": sid, "terminalId": tid})
            accepted = await alice.call("terminal/cancel", {"sessionId": sid, "terminalId": tid})
            assert "result" in accepted, accepted  # (else the command runs on)
            rest = await _read_to_eof(held)  # EOF: every writer killed
        finally:
            os.close(held)
        idle = await alice.wait_for(is_update("state_update", state="idle"))
        await watcher.wait_for(lambda m: "Stopped." in v1_text(watcher.received))
        assert alice.errors() == [] and bob.errors() == []
        assert [e for e in watcher.errors(1) if "LoadSessionResponse" not in e] == []
    finally:
        await alice.close()
        await bob.close()
        await watcher.close()
    assert started == b"started\n" and rest == b""
    assert term["command"] == LIVE and term["capabilities"] == {"cancel": {}}, term
    assert update_of(chunk)["terminalId"] == tid
    assert [i["toolCallId"] for i in shown] == ["s1"]  # the web UI, while it ran
    assert {"type": "terminal", "terminalId": tid} in update_of(v1_live)["content"]
    assert accepted["result"] == {} and update_of(idle)["stopReason"] == "end_turn"
    ends = [u for u in updates(alice.received) if "exitStatus" in u]
    assert ends and ends[-1]["exitStatus"].get("signal"), ends  # killed
    calls = [u for u in updates(alice.received) if u.get("toolCallId") == "s1"]
    assert {"type": "terminal", "terminalId": tid} in calls[-1]["content"], calls[-1]
    assert unknown["error"]["code"] == -32602 and unknown["error"]["data"]["reason"] == "unknown"
    assert theirs["error"]["code"] == -32002, theirs  # not found: not bob's to see
    assert [m["params"] for m in agent_received(tmp_path, "terminal/cancel")] == [
        {"sessionId": sid, "terminalId": tid}
    ]
