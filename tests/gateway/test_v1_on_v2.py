"""A remote v1 client on a v2 agent through the gateway gets v1 (gateway/remote/v1_calls.py).

Real gateway, real agent processes in their sandboxes: the official TS SDK's v2 agent
(tests/peers/v2_agent.mjs, which speaks only v2, here with a mode option and a grouped
config option) and codex-acp 2.6.0 over v2. A raw v1 client over HTTP/SSE and over
WebSocket opens a session (v1's `modes` and `configOptions`), sets the mode (v2's
`session/set_config_option` of the mode option reaches the agent; a mode above its key's
ceiling is refused and nothing is sent), sets a config option, sees the agent change its
mode as v1 `config_option_update` and `current_mode_update`, and loads the session on
another connection at the mode it is in. Every message it gets is checked against v1's
schema, everything the agent got against v2's (tests/schema_check.py).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agentao.gateway.ceilings import CeilingRules
from tests.fakes.fake_llm import FakeLLM
from tests.gateway.conftest import LiveGateway, scripted_spec
from tests.gateway.test_remote_v2 import INIT_V1, HttpV2, WsV2, peer_for, updates
from tests.gateway.test_v2_pool import _key, codex_spec, processes, schema_errors, ts_spec
from tests.npm_peers import NpmPeers

pytestmark = pytest.mark.timeout(90)

MODE_ID = "approvals"  # the mode option's id: any id, its category says it is the mode
MODES = [{"value": m, "name": m.title()} for m in ("ask", "code", "yolo")]
EFFORT = [{"value": "low", "name": "Low"}, {"value": "high", "name": "High"}]
CONFIG = [
    {"configId": MODE_ID, "name": "Mode", "category": "mode", "type": "select",
     "currentValue": "ask", "options": MODES},
    {"configId": "effort", "name": "Effort", "type": "select", "currentValue": "low",
     "options": [{"groupId": "levels", "name": "Levels", "options": EFFORT}]},
]  # fmt: skip
COMMANDS = [{"type": "command", "name": "plan", "description": "Plan first",
             "input": {"type": "text", "hint": "what to plan"}},
            {"type": "_macro", "name": "m", "description": "v2's custom kind: v1 has none"}]  # fmt: skip
# The agent switches itself back to `ask` in its turn (a plan mode ending, say).
TURN = [{"set": {"configId": MODE_ID, "value": "ask"}}, {"say": ["done"]}]
# `ask` keys may switch between ask and code (not yolo), and set any config option but
# the mode: the mode option is held to the modes (else a config change would reach yolo).
RULES = CeilingRules(modes=frozenset({"ask", "code"}), options={"*": frozenset({"*"})})
KEYS = (_key("admin", "all"), _key("asker", "ask"))
ASKER = {"Authorization": "Bearer sk-asker"}
# The gateway's one known addition to v1, on v1 agents too (service.py `_reopen`): the
# official SDK's client opens a session's stream when a message names the session.
LOAD_NAMES_ITS_SESSION = "session/load: root field 'sessionId' not in LoadSessionResponse"


def ts_agent(tmp: Path, peers: NpmPeers) -> Any:
    spec = ts_spec(tmp, peers, [])
    script = Path(spec.sandbox.write[0]) / "script.json"
    script.write_text(json.dumps({"turns": [TURN], "config": CONFIG, "commands": COMMANDS}))
    return replace(spec, ceilings=(("ask", RULES),))


def v1_peer(gw: LiveGateway, scheme: str) -> HttpV2 | WsV2:
    url = f"{scheme}://127.0.0.1:{gw.port}/acp"
    if scheme == "http":
        return HttpV2(url, INIT_V1, headers=ASKER)
    peer = WsV2(url, ASKER)
    peer.init = INIT_V1
    return peer


def agent_got(gw: LiveGateway, method: str) -> list[dict[str, Any]]:
    """The params of every `method` request the agent processes were sent."""
    return [
        line["msg"]["params"]
        for run in processes(gw)
        for line in run
        if line["dir"] == "send" and line["msg"].get("method") == method
    ]


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_a_v1_client_sets_modes_and_options_on_a_v2_agent_in_v1(
    gateway_factory: Any, tmp_path: Path, v2_peers: NpmPeers, scheme: str
) -> None:
    gw = gateway_factory(keys=KEYS, agents=(ts_agent(tmp_path, v2_peers),))
    cwd = gw.config.agents[0].cwd
    v1 = v1_peer(gw, scheme)
    try:
        assert (await v1.open())["result"]["protocolVersion"] == 1
        before = len(v1.received)
        opened = (await v1.call("session/new", {"cwd": cwd, "mcpServers": []}))["result"]
        sid = opened["sessionId"]
        await v1.watch(sid)
        # the result's commands first, as the update a v1 agent sends (v1's results have none)
        (commands,) = updates(v1.received[before:])
        assert commands["availableCommands"] == [
            {"name": "plan", "description": "Plan first", "input": {"hint": "what to plan"}}
        ]
        assert "availableCommands" not in opened
        assert opened["modes"] == {
            "currentModeId": "ask",
            "availableModes": [{"id": m["value"], "name": m["name"]} for m in MODES],
        }
        mode, effort = opened["configOptions"]
        assert (mode["id"], effort["id"]) == (MODE_ID, "effort") and "configId" not in mode
        assert effort["options"][0]["group"] == "levels"

        # the mode: allowed, then above the key's ceiling (refused, nothing sent)
        changed = await v1.call("session/set_mode", {"sessionId": sid, "modeId": "code"}, sid)
        assert changed.get("result") == {}, changed
        sent = {"sessionId": sid, "configId": MODE_ID, "type": "id", "value": "code"}
        assert agent_got(gw, "session/set_config_option") == [sent]
        refused = await v1.call("session/set_mode", {"sessionId": sid, "modeId": "yolo"}, sid)
        assert refused["error"]["code"] == -32600, refused
        assert refused["error"]["data"]["reason"] == "above_ceiling"
        as_option = {"sessionId": sid, "configId": MODE_ID, "value": "yolo"}
        refused = await v1.call("session/set_config_option", as_option, sid)
        assert refused["error"]["data"]["reason"] == "above_ceiling", refused
        assert len(agent_got(gw, "session/set_config_option")) == 1  # nothing sent

        # a config option, in v1's params and shape
        params = {"sessionId": sid, "configId": "effort", "value": "high"}
        answer = (await v1.call("session/set_config_option", params, sid))["result"]
        by_id = {o["id"]: o for o in answer["configOptions"]}
        assert (
            by_id["effort"]["currentValue"] == "high" and by_id[MODE_ID]["currentValue"] == "code"
        )
        assert agent_got(gw, "session/set_config_option")[-1]["type"] == "id"

        # the agent changes its mode itself: v1's config_option_update and current_mode_update
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
        assert (await v1.call("session/prompt", prompt, sid))["result"]["stopReason"] == "end_turn"
        # (the turn's updates came before its reply, on the same stream)
        moved = [u for u in updates(v1.received) if u["sessionUpdate"] == "current_mode_update"]
        assert moved == [{"sessionUpdate": "current_mode_update", "currentModeId": "ask"}]
        (options,) = [
            u for u in updates(v1.received) if u["sessionUpdate"] == "config_option_update"
        ]
        assert [o["id"] for o in options["configOptions"]] == [MODE_ID, "effort"]

        # another v1 connection loads the session: v1's result, at the mode it is in
        other = v1_peer(gw, scheme)
        try:
            await other.open()
            load = {"sessionId": sid, "cwd": cwd, "mcpServers": []}
            loaded = (await other.call("session/load", load))["result"]
            assert loaded["modes"]["currentModeId"] == "ask", loaded
            errors = [e.split(" ", 1)[1] for e in other.errors(version=1)]  # "#n " cut
            assert errors == [LOAD_NAMES_ITS_SESSION]
        finally:
            await other.close()
        assert v1.errors(version=1) == []  # every message v1, by its schema
        assert schema_errors(gw) == []  # and the agent got v2, by its schema
    finally:
        await v1.close()


async def test_a_v1_client_sets_codex_acps_mode_over_v2(
    gateway_factory: Any, tmp_path: Path, v2_peers: NpmPeers, fake_llm: FakeLLM
) -> None:
    """codex-acp driven in v2: its mode option as v1's `modes`, and set_mode sets it."""
    gw = gateway_factory(agents=(codex_spec(tmp_path, v2_peers, fake_llm, 2),))
    v1 = HttpV2(f"http://127.0.0.1:{gw.port}/acp", INIT_V1)
    try:
        await v1.open()
        cwd = gw.config.agents[0].cwd
        opened = (await v1.call("session/new", {"cwd": cwd, "mcpServers": []}))["result"]
        sid = opened["sessionId"]
        await v1.watch(sid)
        modes = [m["id"] for m in opened["modes"]["availableModes"]]
        other = next(m for m in modes if m != opened["modes"]["currentModeId"])
        changed = await v1.call("session/set_mode", {"sessionId": sid, "modeId": other}, sid)
        assert changed.get("result") == {}, changed
        client = gw.gateway.pools["codex"].workers[0].client
        assert client.protocol_version == 2
        assert v1.errors(version=1) == []
    finally:
        await v1.close()


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_a_v1_client_answers_a_v2_agents_question_and_cancels_its_turn(
    gateway_factory: Any, tmp_path: Path, v2_peers: NpmPeers, scheme: str
) -> None:
    """A permission round trip (v1's question from v2's, the answer back to the agent in
    v2), then `session/cancel` mid-turn: the v1 prompt's reply is `cancelled`, and the
    agent was sent v2's `session/cancel`."""
    ask = [
        {"tool": {"id": "t1", "title": "Write hello.txt", "kind": "edit", "status": "pending"}},
        {"ask": {"toolCallId": "t1", "title": "Write hello.txt?"}},
        {"tool": {"id": "t1", "status": "completed", "content": "wrote it"}},
        {"say": ["Wrote ", "hello.txt."]},
    ]
    long = [{"say": ["working"]}, {"wait_for_cancel": True}]
    gw = gateway_factory(keys=KEYS, agents=(ts_spec(tmp_path, v2_peers, [ask, long]),))
    cwd = gw.config.agents[0].cwd
    v1 = v1_peer(gw, scheme)
    try:
        await v1.open()
        sid = (await v1.call("session/new", {"cwd": cwd, "mcpServers": []}))["result"]["sessionId"]
        await v1.watch(sid)
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "write"}]}
        replied = asyncio.ensure_future(v1.call("session/prompt", prompt, sid))
        asked = await v1.wait_for(lambda m: m.get("method") == "session/request_permission")
        assert "toolCall" in asked["params"] and "subject" not in asked["params"]  # v1's shape
        answer = {"outcome": {"outcome": "selected", "optionId": "allow"}}
        await v1.send({"jsonrpc": "2.0", "id": asked["id"], "result": answer}, sid)
        assert (await replied)["result"]["stopReason"] == "end_turn"
        answered = [
            line["msg"]["result"]["outcome"]
            for run in processes(gw)
            for line in run
            if line["dir"] == "send" and "outcome" in (line["msg"].get("result") or {})
        ]
        assert [a["optionId"] for a in answered] == ["allow"]

        start = len(v1.received)
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "long"}]}
        running = asyncio.ensure_future(v1.call("session/prompt", prompt, sid))
        await v1.wait_for(
            lambda m: (
                (m.get("params") or {}).get("update", {}).get("sessionUpdate")
                == "agent_message_chunk"
            ),
            start,
        )
        await v1.send(
            {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}, sid
        )
        assert (await running)["result"]["stopReason"] == "cancelled"
        assert agent_got(gw, "session/cancel") == [{"sessionId": sid}]
        assert v1.errors(version=1) == []
        assert schema_errors(gw) == []
    finally:
        await v1.close()


# ---- our own agent under `protocol = 2`: its commands come before a v1 load's reply -----


def _commands_then_reply(messages: list[dict[str, Any]], reply_id: int) -> list[str]:
    """The order in which the commands update and the reply to `reply_id` arrived."""
    order = []
    for message in messages:
        if message.get("id") == reply_id and "method" not in message:
            order.append("reply")
        elif message.get("params", {}).get("update", {}).get("sessionUpdate") == (
            "available_commands_update"
        ):
            order.append("commands")
    return order


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_a_v1_client_loading_our_v2_agents_session_gets_its_commands_first(
    gateway_factory: Any, tmp_path: Path, scheme: str
) -> None:
    """As over v1 (the agent's `session/load` sends its commands before its reply), a v1
    client gets `available_commands_update` before its `session/new` and `session/load`
    replies, though our agent speaks v2 (its results carry the commands); a v2 client
    gets them in its results."""
    gw = gateway_factory(agents=(replace(scripted_spec(tmp_path), protocol=2),))
    cwd = gw.config.agents[0].cwd
    first, again, v2 = v1_peer(gw, scheme), v1_peer(gw, scheme), peer_for(gw, scheme)
    try:
        await first.open()
        before = len(first.received)
        opened = await first.call("session/new", {"cwd": cwd, "mcpServers": []})
        sid = opened["result"]["sessionId"]
        await again.open()
        before_load = len(again.received)
        loaded = await again.call("session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []})
        await v2.open()
        resumed = await v2.call("session/resume", {"sessionId": sid, "cwd": cwd})
        created = await v2.call("session/new", {"cwd": cwd})
        errors = [e for p in (first, again) for e in p.errors(version=1)]
        assert [e for e in errors if not e.endswith(LOAD_NAMES_ITS_SESSION)] == []
        assert v2.errors() == []
    finally:
        for peer in (first, again, v2):
            await peer.close()
    assert _commands_then_reply(first.received[before:], opened["id"]) == ["commands", "reply"]
    assert _commands_then_reply(again.received[before_load:], loaded["id"]) == [
        "commands",
        "reply",
    ]
    (commands,) = [u for u in updates(again.received) if "availableCommands" in u]
    assert "compact" in {c["name"] for c in commands["availableCommands"]}, commands
    for result in (resumed["result"], created["result"]):  # v2: in the result itself
        assert "compact" in {c["name"] for c in result["availableCommands"]}, result
