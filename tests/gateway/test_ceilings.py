"""A key's ceiling binds what its turns can do: its modes, its config options, and the
agent process itself (gateway/ceilings.py, gateway/confine.py, agent/ceiling.py).

The attacks: a key whose ceiling is `reject` sends `/mode full-access` as a chat message
(or `session/set_mode` over remote ACP), then runs a command unconfined; a key switches
the agent's model although nobody allowed it; an agent process reads the gateway's own
state. Each test has a control: the same request where it is allowed.
"""

from __future__ import annotations

import base64
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
from acp import RequestError
from websockets.sync.client import connect
from websockets.typing import Subprotocol

from agentao.gateway.ceilings import CeilingRules
from agentao.gateway.config import AgentSpec, ApiKey
from agentao.gateway.confine import AgentSandbox
from tests.gateway.acp_peers import SdkPeer
from tests.gateway.conftest import scripted_spec

needs_bwrap = pytest.mark.skipif(  # under CI (any CI value) a missing bwrap fails the test
    shutil.which("bwrap") is None and not os.environ.get("CI"),
    reason="bubblewrap is not installed (CI installs it)",
)


def _key(name: str, ceiling: str, policy: str | None = None) -> ApiKey:
    digest = hashlib.sha256(f"sk-{name}".encode()).hexdigest()
    return ApiKey(name, digest, ceiling=ceiling, policy=policy or ceiling)  # type: ignore[arg-type]


KEYS = (_key("low", "reject"), _key("asker", "ask"), _key("admin", "all"))


def _client(gw: Any, name: str) -> openai.OpenAI:
    return gw.openai(f"sk-{name}")


def _say(gw: Any, name: str, text: str, model: str = "agentao", **kw: Any) -> str:
    reply = _client(gw, name).chat.completions.create(
        model=model, messages=[{"role": "user", "content": text}], **kw
    )
    return reply.choices[0].message.content or ""


def _escape_script(target: Path, inside: Path) -> list[dict[str, Any]]:
    """The model obeys: a shell command writing `target` and `inside`."""
    command = f"id > {target}; id > {inside}"
    call = {"name": "run_shell_command", "arguments": {"command": command}}
    return [
        {"match": "escape", "tool_calls": [call]},
        {"match": "escape", "text": "done"},
        {"text": "ok"},
        {"text": "ok"},
    ]


# ---- the ceiling reaches our agent: no mode above it, whichever face asks ------------------


def test_a_reject_key_cannot_talk_its_way_to_full_access(gateway_factory: Any) -> None:
    gw = gateway_factory(keys=KEYS)
    low = _say(gw, "low", "/mode full-access")
    admin = _say(gw, "admin", "/mode full-access")  # control
    assert "above this agent's ceiling" in low, low
    assert admin == "Mode: full-access"


def test_the_responses_api_is_held_the_same(gateway_factory: Any) -> None:
    gw = gateway_factory(keys=KEYS)
    low = _client(gw, "low").responses.create(model="agentao", input="/mode full-access")
    assert "above this agent's ceiling" in low.output_text


def test_the_task_stream_is_held_the_same(gateway_factory: Any) -> None:
    gw = gateway_factory(keys=KEYS)
    texts = {
        name: "".join(map(_task_text, _task_frames(gw, f"sk-{name}", "/mode full-access")))
        for name in ("low", "admin")
    }
    assert "above this agent's ceiling" in texts["low"], texts["low"]
    assert texts["admin"] == "Mode: full-access"  # control


def _key_protocol(secret: str) -> str:
    return "agentao.key." + base64.urlsafe_b64encode(secret.encode()).decode().rstrip("=")


def _task_text(frame: dict[str, Any]) -> str:
    update = frame.get("update") or {}
    if frame.get("type") == "task-running" and update.get("sessionUpdate") == "agent_message_chunk":
        return update["content"]["text"]
    return ""


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_remote_acp_set_mode_is_refused_below_all(gateway_factory: Any, scheme: str) -> None:
    gw = gateway_factory(keys=KEYS)
    url = f"{scheme}://127.0.0.1:{gw.port}/acp"
    low = await SdkPeer.connect(url, headers={"Authorization": "Bearer sk-low"})
    admin = await SdkPeer.connect(url, headers={"Authorization": "Bearer sk-admin"})
    try:
        await low.initialize()
        await admin.initialize()
        cwd = gw.config.agents[0].cwd
        sid = (await low.conn.new_session(cwd=cwd, mcp_servers=[])).session_id
        with pytest.raises(RequestError, match="above this API key's ceiling 'reject'"):
            await low.conn.set_session_mode(session_id=sid, mode_id="full-access")
        with pytest.raises(RequestError, match="above this API key's ceiling"):
            await low.conn.set_config_option(session_id=sid, config_id="model", value="x/y")
        own = (await admin.conn.new_session(cwd=cwd, mcp_servers=[])).session_id
        await admin.conn.set_session_mode(session_id=own, mode_id="full-access")  # control
    finally:
        await low.close()
        await admin.close()


async def test_other_passed_on_methods_are_refused_below_all(gateway_factory: Any) -> None:
    """`session/fork` could name another cwd or a stdio MCP server: not past the checks."""
    gw = gateway_factory(keys=KEYS)
    low = await SdkPeer.connect(
        f"http://127.0.0.1:{gw.port}/acp", headers={"Authorization": "Bearer sk-low"}
    )
    try:
        await low.initialize()
        sid = (await low.conn.new_session(cwd=gw.config.agents[0].cwd, mcp_servers=[])).session_id
        server = {"name": "x", "command": "/bin/sh", "args": ["-c", "id"], "env": []}
        with pytest.raises(RequestError, match="session/fork is above"):
            await low.conn.fork_session(session_id=sid, cwd="/", mcp_servers=[server])
    finally:
        await low.close()


# ---- what each ceiling may change, from the agent's config ---------------------------------


def _with_rules(tmp: Path, **rules: CeilingRules) -> Any:
    return replace(scripted_spec(tmp), ceilings=tuple(rules.items()))


def test_a_model_switch_needs_the_ceilings_leave(gateway_factory: Any, tmp_path: Path) -> None:
    model = "scripted/agentao-script"  # the scripted agent's one model
    allowed = CeilingRules(options={"model": frozenset({model})})
    gw = gateway_factory(keys=KEYS, agents=(_with_rules(tmp_path, ask=allowed),))
    with pytest.raises(openai.PermissionDeniedError) as refused:
        _say(gw, "low", "hi", model=f"agentao/{model}")
    assert refused.value.code == "option_above_ceiling", refused.value.body
    assert _say(gw, "asker", "hi", model=f"agentao/{model}")  # control: named for `ask`


def test_rules_name_values_not_just_options() -> None:
    rules = CeilingRules(mode="read-only", options={"model": frozenset({"a/b"})})
    assert rules.allows_option("model", "a/b") and not rules.allows_option("model", "a/c")
    assert not rules.allows_option("thinking", "high")
    assert rules.allows_mode("read-only") and not rules.allows_mode("full-access")
    assert CeilingRules.default("all").allows_option("anything", "at all")
    assert not CeilingRules.default("ask").allows_mode("read-only")
    assert CeilingRules(modes=frozenset({"plan"})).our_highest_mode() == "workspace-write"
    assert CeilingRules(mode="read-only").our_highest_mode() == "read-only"
    # equal ranks: the start mode is the ceiling, so sessions open where they should
    tied = CeilingRules(mode="read-only", modes=frozenset({"plan"}))
    assert all(tied.our_highest_mode() == "read-only" for _ in range(20))
    assert CeilingRules.default("all").our_highest_mode() == "full-access"


async def test_sessions_start_in_the_mode_named_for_the_ceiling(
    gateway_factory: Any, tmp_path: Path
) -> None:
    rules = CeilingRules(mode="read-only", modes=frozenset({"plan"}))
    gw = gateway_factory(keys=KEYS, agents=(_with_rules(tmp_path, reject=rules),))
    url = f"http://127.0.0.1:{gw.port}/acp"
    low = await SdkPeer.connect(url, headers={"Authorization": "Bearer sk-low"})
    try:
        await low.initialize()
        new = await low.conn.new_session(cwd=gw.config.agents[0].cwd, mcp_servers=[])
        assert new.modes.current_mode_id == "read-only"
        await low.conn.set_session_mode(session_id=new.session_id, mode_id="plan")  # named
        with pytest.raises(RequestError, match="above"):
            await low.conn.set_session_mode(session_id=new.session_id, mode_id="workspace-write")
    finally:
        await low.close()
    # and the agent process itself holds it: its ceiling is read-only for `reject` keys
    text = _say(gw, "low", "/mode workspace-write")
    assert "above this agent's ceiling 'read-only'" in text, text


# ---- every agent process confined by the operating system ----------------------------------


@needs_bwrap
def test_a_full_shell_is_at_worst_a_shell_in_the_workspace(
    gateway_factory: Any, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    spec = scripted_spec(tmp_path / "gw")
    work = Path(spec.cwd)
    script = _escape_script(outside / "x", work / "y")
    gw = gateway_factory(keys=KEYS, agents=(scripted_spec(tmp_path / "gw", script),))
    _say(gw, "admin", "/mode full-access")
    _say(gw, "admin", "escape", extra_headers={"X-Permission-Policy": "all"})
    assert (work / "y").read_text().startswith("uid=")  # control: the workspace is writable
    assert not (outside / "x").exists()  # but nothing outside it is even there


def _plant_script(names: tuple[str, ...]) -> list[dict[str, Any]]:
    """The model writes `planted-NAME.txt` in the workspace when told `plant NAME`."""
    script: list[dict[str, Any]] = []
    for name in names:
        args = {"file_path": f"planted-{name}.txt", "content": "planted\n"}
        script += [
            {"match": f"plant {name}", "tool_calls": [{"name": "write_file", "arguments": args}]},
            {"match": f"plant {name}", "text": "done"},
        ]
    return script


@needs_bwrap
def test_a_read_only_ceiling_writes_nothing_where_the_agent_would_not_ask(
    gateway_factory: Any, tmp_path: Path
) -> None:
    """Our agent's default mode writes inside its workspace without asking, so a `reject` or
    `reads` key's answers are never consulted: the ceiling itself must hold. The agent
    process of a read-only ceiling is capped at `read-only`, and the gateway's file service
    (the agent's `fs/write_text_file`, outside the sandbox's read-only mount) refuses."""
    names = ("low", "reader", "admin")
    spec = scripted_spec(tmp_path / "gw", _plant_script(names))
    (tmp_path / "gw" / "agent-home" / "permissions.json").write_text('{"rules": []}')
    keys = (*KEYS, _key("reader", "reads"))
    gw = gateway_factory(keys=keys, agents=(spec,))
    work = Path(spec.cwd)
    for name in names:
        _say(gw, name, f"plant {name}")
    assert (work / "planted-admin.txt").read_text() == "planted\n"  # control
    assert not (work / "planted-low.txt").exists()
    assert not (work / "planted-reader.txt").exists()
    # the agent's own ceiling: no rules name a mode for `reject`, and still
    assert "above this agent's ceiling 'read-only'" in _say(gw, "low", "/mode workspace-write")


@needs_bwrap
def test_a_read_only_ceiling_is_offered_no_writes_through_the_gateway(
    gateway_factory: Any, tmp_path: Path
) -> None:
    """The gateway writes an agent's `fs/write_text_file` on the host, where the sandbox's
    read-only mount does not reach: a read-only ceiling's processes are not offered it."""
    spec = _prober(tmp_path)
    gw = gateway_factory(keys=KEYS, agents=(spec,))
    target = str(Path(spec.cwd) / "via-client.txt")
    low = _probe(gw, "low", {"client_write": [target]})
    assert low["client_write"] == {target: "error -32601"}, low
    assert not Path(target).exists()
    admin = _probe(gw, "admin", {"client_write": [target]})  # control
    assert admin["client_write"] == {target: "ok"}, admin
    assert Path(target).read_text() == "written through the client\n"


@needs_bwrap
def test_an_agent_process_sees_nothing_of_the_gateway(gateway_factory: Any, tmp_path: Path) -> None:
    spec = scripted_spec(tmp_path / "gw")
    work = Path(spec.cwd)
    home = Path(os.environ["AGENTAO_HOME"])  # the gateway's state (gateway_state fixture)
    command = (
        f"ls {home} > {work}/home.txt 2>&1; ls /root > {work}/root.txt 2>&1; "
        f"env > {work}/env.txt; cat /proc/1/cmdline > {work}/pid1.txt"
    )
    call = {"name": "run_shell_command", "arguments": {"command": command}}
    script = [{"match": "look", "tool_calls": [call]}, {"match": "look", "text": "seen"}]
    gw = gateway_factory(keys=KEYS, agents=(scripted_spec(tmp_path / "gw", script),))
    _say(gw, "admin", "/mode full-access")
    _say(gw, "admin", "look", extra_headers={"X-Permission-Policy": "all"})
    assert "No such file" in (work / "home.txt").read_text()
    assert "gateway.sqlite3" not in (work / "home.txt").read_text()
    assert "No such file" in (work / "root.txt").read_text()
    assert "sk-" not in (work / "env.txt").read_text()
    assert "bwrap" not in (work / "pid1.txt").read_text()  # its own PID namespace


@needs_bwrap
def test_a_reads_key_cannot_search_the_gateways_config(
    gateway_factory: Any, tmp_path: Path
) -> None:
    """The search tools read the disk beside `read_file`'s confined path no more, and the
    agent process does not even see the gateway's config."""
    config = tmp_path / "gateway.toml"
    config.write_text('[[keys]]\nname = "admin"\nkey = "sk-admin-SECRET-VALUE"\n')
    work = tmp_path / "gw" / "work"
    outside = {"pattern": "sk-admin", "path": str(tmp_path)}
    inside = {"pattern": "milk", "path": str(work)}
    script = [
        {"match": "key", "tool_calls": [{"name": "search_file_content", "arguments": outside}]},
        {"match": "key", "text": "searched"},
        {"match": "milk", "tool_calls": [{"name": "search_file_content", "arguments": inside}]},
        {"match": "milk", "text": "searched"},
    ]
    gw = gateway_factory(
        keys=(_key("reader", "reads"),), agents=(scripted_spec(tmp_path / "gw", script),)
    )
    secret = _task_frames(gw, "sk-reader", "find the key")
    control = _task_frames(gw, "sk-reader", "find the milk")
    assert secret[-1]["type"] == control[-1]["type"] == "task-ended"
    assert "SECRET-VALUE" not in json.dumps(secret)
    assert "remember the milk" in json.dumps(control)  # the same search inside finds it


def _task_frames(gw: Any, secret: str, prompt: str) -> list[dict[str, Any]]:
    with gw.http(secret) as http:
        task = http.post("/v1/tasks", json={"agent": "agentao", "prompt": prompt})
        assert task.status_code == 201, task.text
        url = gw.ws_url(task.json()["stream_url"])
    protocols = [Subprotocol("agentao.v1"), Subprotocol(_key_protocol(secret))]
    with connect(url, subprotocols=protocols) as ws:
        return [json.loads(m) for m in ws]


PROBER = (sys.executable, str(Path(__file__).parents[1] / "fakes" / "fake_agents" / "prober.py"))


def _prober(tmp_path: Path, **sandbox: Any) -> AgentSpec:
    work = tmp_path / "prober-work"
    work.mkdir()
    return AgentSpec("prober", PROBER, cwd=str(work), sandbox=AgentSandbox(**sandbox))


def _probe(gw: Any, key: str, asked: dict[str, Any]) -> dict[str, Any]:
    return json.loads(_say(gw, key, json.dumps(asked), model="prober"))


@needs_bwrap
@pytest.mark.parametrize("confined", [True, False])
def test_a_third_party_agent_is_confined_too(
    gateway_factory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, confined: bool
) -> None:
    """An agent that never asks: what its process can reach is the sandbox's doing.
    Unconfined (`agent_sandbox = "off"`, an `all` key) is the control: the same probe
    reaches everything, so the test sees what the sandbox takes away."""
    monkeypatch.setenv("PROBER_SECRET_KEY", "sk-operator")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("operator's secret")
    spec = _prober(tmp_path)
    state = Path(os.environ["AGENTAO_HOME"])
    settings = {} if confined else {"agent_sandbox": "off"}
    gw = gateway_factory(keys=KEYS, agents=(spec,), **settings)
    (state / "gateway-config.toml").write_text("key = 'sk-admin'")
    seen = _probe(
        gw,
        "admin",
        {
            "read": [str(outside / "secret.txt"), str(state / "gateway-config.toml")],
            "write": [str(Path(spec.cwd) / "mine.txt"), str(outside / "planted.txt")],
            "env": ["PROBER_SECRET_KEY", "HOME"],
        },
    )
    assert seen["write"][str(Path(spec.cwd) / "mine.txt")] == "ok"  # its workspace, always
    reads, wrote_outside = list(seen["read"].values()), seen["write"][str(outside / "planted.txt")]
    if confined:
        assert all(r == "FileNotFoundError" for r in reads), seen
        assert wrote_outside != "ok" and not (outside / "planted.txt").exists()
        assert seen["env"] == ["HOME"]  # the gateway's variables are not passed unless named
    else:
        assert all(r.startswith("ok: ") for r in reads), seen
        assert wrote_outside == "ok" and "PROBER_SECRET_KEY" in seen["env"]


@needs_bwrap
def test_a_third_party_agent_gets_the_variables_its_config_names(
    gateway_factory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROBER_API_KEY", "sk-for-the-prober")
    monkeypatch.setenv("OTHER_API_KEY", "sk-not-for-it")
    spec = _prober(tmp_path, pass_env=("PROBER_*",))
    gw = gateway_factory(keys=KEYS, agents=(spec,))
    seen = _probe(gw, "admin", {"env": ["PROBER_API_KEY", "OTHER_API_KEY"]})
    assert seen["env"] == ["PROBER_API_KEY"]


def test_without_a_sandbox_low_keys_get_no_agent(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory(keys=KEYS, agent_sandbox="off")
    with pytest.raises(openai.APIStatusError) as refused:
        _say(gw, "low", "hi")
    assert refused.value.status_code == 503 and refused.value.code == "agent_unconfined"
    assert _say(gw, "admin", "hi")  # control: `all` runs unconfined (logged)


def test_the_operator_may_opt_out(gateway_factory: Any) -> None:
    gw = gateway_factory(keys=KEYS, agent_sandbox="off", allow_unconfined_agents=True)
    assert _say(gw, "low", "hi")
