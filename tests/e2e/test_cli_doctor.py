"""`agentao doctor` as a user runs it: a real process, its lines, its JSON and its exit code."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from agentao.agent.sandbox import Sandbox
from tests.fakes.fake_llm import FakeLLM

pytestmark = pytest.mark.timeout(60)
SCRIPT = Path(__file__).resolve().parents[2] / "src" / "agentao" / "cli" / "demo_script.json"


def doctor(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    base.pop("LLM_PROVIDER", None)
    base.update(AGENTAO_HOME=str(tmp_path / "home"), **env)
    return subprocess.run(
        [sys.executable, "-m", "agentao", "doctor", *args],
        capture_output=True,
        text=True,
        timeout=50,
        env=base,
    )


def checks(result: subprocess.CompletedProcess[str]) -> dict[str, dict]:
    return {c["name"]: c for c in json.loads(result.stdout)["checks"]}


def test_all_fine(tmp_path: Path, sandbox: Sandbox) -> None:
    result = doctor(tmp_path, LLM_PROVIDER="SCRIPTED", AGENTAO_SCRIPT=str(SCRIPT))
    assert result.returncode == 0, result.stdout
    lines = {line[4:].split("  ")[0].strip(): line for line in result.stdout.splitlines()}
    assert lines["LLM provider"].startswith("ok ") and "SCRIPTED" in lines["LLM provider"]
    assert "bwrap: shell commands run confined" in lines["shell sandbox"]
    assert (
        lines["agent sandbox"].startswith("ok ") and "every agent process" in lines["agent sandbox"]
    )
    assert "does not exist" in lines["permission rules"]
    assert "agentao " in lines["install"] and "Python 3." in lines["install"]


def test_what_needs_attention_is_named(tmp_path: Path) -> None:
    rules = tmp_path / "home" / "permissions.json"
    rules.parent.mkdir()
    rules.write_text(json.dumps({"rules": [{"action": "maybe", "tool": "x"}]}))
    result = doctor(tmp_path, "--json", AGENTAO_SANDBOX="off")
    assert result.returncode == 1
    found = checks(result)
    assert not json.loads(result.stdout)["ok"]
    assert not found["LLM provider"]["ok"] and "OPENAI_API_KEY" in found["LLM provider"]["detail"]
    assert "unavailable (AGENTAO_SANDBOX=off)" in found["shell sandbox"]["detail"]
    assert not found["permission rules"]["ok"] and "rule 1" in found["permission rules"]["detail"]
    assert found["chromium"]["needed"] is False  # informs, never fails the run


def test_a_gateway_that_cannot_confine_its_agents_is_named(tmp_path: Path) -> None:
    no_bwrap = tmp_path / "bin"
    no_bwrap.mkdir()
    result = doctor(tmp_path, "--json", PATH=str(no_bwrap))
    found = checks(result)["agent sandbox"]
    assert not found["ok"] and "bwrap not found" in found["detail"]
    assert "allow_unconfined_agents" in found["detail"]
    assert found["needed"] is False  # only a gateway with keys below `all` needs it


def test_a_missing_script_is_named(tmp_path: Path) -> None:
    result = doctor(tmp_path, "--json", LLM_PROVIDER="SCRIPTED", AGENTAO_SCRIPT=str(tmp_path / "x"))
    assert result.returncode == 1
    assert "is not a file" in checks(result)["LLM provider"]["detail"]


def test_the_endpoint_is_reached_with_the_key_and_the_key_never_printed(tmp_path: Path) -> None:
    with FakeLLM() as llm:
        good = doctor(tmp_path, "--json", **llm.env())
        bad = doctor(tmp_path, "--json", **{**llm.env(), "OPENAI_API_KEY": "sk-wrong-key"})
    endpoint = checks(good)["LLM endpoint"]
    assert endpoint["ok"] and endpoint["detail"] == f"{llm.base_url}/models answered 200"
    refused = checks(bad)["LLM endpoint"]
    assert not refused["ok"] and "the key was refused" in refused["detail"] and bad.returncode == 1
    assert llm.api_key not in good.stdout and "sk-wrong-key" not in bad.stdout


def test_an_unreachable_endpoint_and_offline(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"OPENAI_API_KEY": "sk-x", "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1"}
    result = doctor(tmp_path, "--json", **env)
    assert "is unreachable" in checks(result)["LLM endpoint"]["detail"]
    assert "LLM endpoint" not in checks(doctor(tmp_path, "--json", "--offline", **env))


def test_the_model_catalog_line(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    env = dict(LLM_PROVIDER="SCRIPTED", AGENTAO_SCRIPT=str(SCRIPT), AGENTAO_CONFIG_DIR=str(config))
    assert "does not exist" in checks(doctor(tmp_path, "--json", **env))["model catalog"]["detail"]
    (config / "models.toml").write_text("[providers.a]\n[[providers.a.models]]\nid = 'm'\n")
    found = checks(doctor(tmp_path, "--json", **env))["model catalog"]
    assert found["ok"] and "1 provider(s), 1 model(s)" in found["detail"]
    (config / "models.toml").write_text("[providers.a]\napi_key = 'sk-x'\n")
    result = doctor(tmp_path, "--json", **env)
    detail = checks(result)["model catalog"]["detail"]
    assert result.returncode == 1 and "keys never go in the catalog" in detail


def test_a_password_in_a_setting_is_never_shown(tmp_path: Path) -> None:
    """OPENAI_BASE_URL with userinfo, a key in its query: in neither the lines nor the JSON."""
    url = "https://u:hunter2@api.example/v1?api_key=hunter2"
    env = {"OPENAI_API_KEY": "sk-doctor", "OPENAI_BASE_URL": url}
    as_json = doctor(tmp_path, "--json", "--offline", **env)
    as_lines = doctor(tmp_path, "--offline", **env)
    for result in (as_json, as_lines):
        assert "hunter2" not in result.stdout + result.stderr
    detail = checks(as_json)["LLM provider"]["detail"]
    assert "https://[redacted]@api.example/v1?api_key=[redacted]" in detail  # still says where
