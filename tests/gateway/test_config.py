"""The gateway's config file and command line."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from agentao.gateway.config import (
    ConfigError,
    GatewayConfig,
    Limits,
    config_from_dict,
    load_config,
    parse_agent_option,
    with_overrides,
)

CONFIG = """
[server]
host = "0.0.0.0"
port = 9000

[limits]
permission_deadline_seconds = 5

[agents.qwen]
command = "qwen --acp --model x"
processes = 2
env = { A = "1" }

[[keys]]
name = "alice"
key = "sk-alice"
agents = ["qwen"]
ceiling = "ask"
policy = "reads"

[[keys]]
name = "ci"
key_sha256 = "ABC"
"""


def test_a_full_config_file(tmp_path: Path) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(CONFIG)
    config = load_config(path)
    assert (config.host, config.port) == ("0.0.0.0", 9000)
    assert config.limits.permission_deadline_seconds == 5
    qwen = config.agent("qwen")
    assert qwen.command == ("qwen", "--acp", "--model", "x") and qwen.processes == 2
    assert qwen.env == (("A", "1"),)
    alice, ci = config.keys
    assert alice.sha256 == hashlib.sha256(b"sk-alice").hexdigest()
    assert alice.allows("qwen") and not alice.allows("other")
    assert (alice.ceiling, alice.policy) == ("ask", "reads")
    assert ci.sha256 == "abc" and ci.agents is None and ci.policy == "reject"
    config.check_bind()  # keys present: any interface is allowed


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"limits": {"nope": 1}}, r"unknown \[limits\]"),
        ({"limits": {"gc_young_objects": 0}}, r"gc_young_objects must be at least 1"),
        ({"limits": {"remote_references_held": 0}}, r"remote_references_held must be at least 1"),
        ({"agents": {"a": {"command": []}}}, "command"),
        ({"agents": {"a": {"command": "x", "processes": 0}}}, "processes"),
        ({"keys": [{"name": "k"}]}, "key_sha256"),
        ({"keys": [{"name": "k", "key": "s", "ceiling": "sometimes"}]}, "ceiling"),
        (
            {"keys": [{"name": "k", "key": "s", "ceiling": "reads", "policy": "all"}]},
            "above its ceiling",
        ),
        ({"keys": [{"name": "k", "key": "a"}, {"name": "k", "key": "b"}]}, "share a name"),
        ({"keys": [{"name": "local", "key": "s"}]}, "may not be named 'local'"),
        ({"server": {"hots": "0.0.0.0"}}, r"unknown \[server\] settings \['hots'\]"),
        ({"keys": {"name": "k"}}, r"keys must be an array of tables"),
        ({"server": {"allowed_hosts": "a.example"}}, "must be a list of strings"),
        ({"server": {"allowed_hosts": ["https://a.example"]}}, "expected a name or name:port"),
        ({"server": {"allowed_hosts": ["a.example:http"]}}, "expected a name or name:port"),
        ({"server": {"allowed_origins": ["ui.example"]}}, r"expected scheme://host\[:port\]"),
        ({"server": {"allowed_origins": ["https://ui.example/app"]}}, "expected scheme://"),
        ({"server": {"allowed_origins": ["null"]}}, "expected scheme://"),
    ],
)
def test_bad_configs_say_what_is_wrong(data: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_dict(data)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"srever": {}}, r"unknown tables \['srever'\]"),
        ({"server": {"prot": 1}}, r"unknown \[server\] settings \['prot'\]"),
        ({"limits": {"permision_deadline_seconds": 1}}, r"\['permision_deadline_seconds'\]"),
        (
            {"agents": {"a": {"command": "x", "proceses": 2}}},
            r"unknown \[agents\.a\] settings \['proceses'\]",
        ),
        (
            {"keys": [{"name": "k", "key": "s", "ceilng": "all"}]},
            r"unknown \[\[keys\]\] 'k' settings \['ceilng'\]",
        ),
    ],
)
def test_an_unknown_key_in_any_table_is_an_error_naming_it(data: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_dict(data)


def test_command_line_overrides_and_the_default_agent() -> None:
    config = with_overrides(GatewayConfig(), agents=None, host=None, port=None)
    assert [a.name for a in config.agents] == ["agentao"]
    assert config.agents[0].command == (sys.executable, "-m", "agentao", "--acp")
    config = with_overrides(GatewayConfig(), agents=["q=qwen --acp"], host="::1", port=1)
    assert config.agents[0].command == ("qwen", "--acp") and (config.host, config.port) == (
        "::1",
        1,
    )
    with pytest.raises(ConfigError, match="NAME=COMMAND"):
        parse_agent_option("qwen")


def test_our_agent_keeps_its_sessions_in_the_gateways_postgresql_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AGENTAO_STORE_URL", raising=False)
    url = "postgresql://gw@db.internal/agentao"
    shared = with_overrides(GatewayConfig(), store=url)
    assert dict(shared.agents[0].env) == {"AGENTAO_STORE_URL": url}
    alone = with_overrides(GatewayConfig(), store="/var/lib/agentao/gateway.sqlite3")
    assert dict(alone.agents[0].env) == {}
    # An agent the config names gets only the environment it names.
    named = with_overrides(GatewayConfig(), agents=["q=qwen --acp"], store=url)
    assert dict(named.agents[0].env) == {}


def test_the_collectors_young_threshold_is_a_named_limit() -> None:
    """Control for the bad value above: any positive count is taken as given."""
    assert Limits().gc_young_objects == 10_000
    config = config_from_dict({"limits": {"gc_young_objects": 50_000}})
    assert config.limits.gc_young_objects == 50_000


def test_the_announce_grace_of_a_callers_tool_call_is_a_named_limit() -> None:
    """turns.py waited a fixed 2 s for an agent's announcement of a caller's tool call."""
    assert Limits().announce_grace_seconds == 2.0
    config = config_from_dict({"limits": {"announce_grace_seconds": 0.5}})
    assert config.limits.announce_grace_seconds == 0.5
    with pytest.raises(ConfigError, match="announce_grace_seconds must be at least 0"):
        config_from_dict({"limits": {"announce_grace_seconds": -1}})


def test_replica_settings() -> None:
    config = config_from_dict(
        {"server": {"advertise_url": "http://10.0.0.5:8765"}, "limits": {"lease_seconds": 10}}
    )
    assert config.advertise_url == "http://10.0.0.5:8765" and config.limits.lease_seconds == 10
    with pytest.raises(ConfigError, match="heartbeat_seconds must be above 0 and below"):
        config_from_dict({"limits": {"lease_seconds": 2, "heartbeat_seconds": 2}})


def test_allowed_hosts_and_origins_from_file_and_command_line() -> None:
    server = {
        "allowed_hosts": ["GW.example", "gw.example:8443", "[::1]:9"],
        "allowed_origins": ["HTTPS://UI.example:443", "http://ui.example:3000"],
    }
    config = config_from_dict({"server": server})
    assert config.web.allowed_hosts == ("gw.example", "gw.example:8443", "[::1]:9")
    assert config.web.allowed_origins == ("https://ui.example", "http://ui.example:3000")
    config = with_overrides(
        config, allowed_hosts=["b.example", "gw.example"], allowed_origins=["http://b.example"]
    )
    assert config.web.allowed_hosts[-1] == "b.example" and len(config.web.allowed_hosts) == 4
    assert config.web.allowed_origins[-1] == "http://b.example"
    with pytest.raises(ConfigError, match="allowed origin"):
        with_overrides(config, allowed_origins=["b.example"])


def test_no_keys_means_loopback_only() -> None:
    GatewayConfig(host="127.0.0.1").check_bind()
    with pytest.raises(ConfigError, match="without API keys"):
        GatewayConfig(host="0.0.0.0").check_bind()
    assert Limits().retry_after_seconds == 1


def test_cross_replica_is_forward_or_redirect() -> None:
    assert config_from_dict({}).cross_replica == "forward"
    assert config_from_dict({"server": {"cross_replica": "redirect"}}).cross_replica == "redirect"
    with pytest.raises(ConfigError, match="cross_replica 'proxy' is not one of forward, redirect"):
        config_from_dict({"server": {"cross_replica": "proxy"}})
