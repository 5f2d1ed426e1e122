"""`agentao doctor` as a user runs it: a real process, its lines and its exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentao.agent.sandbox import Sandbox

pytestmark = pytest.mark.timeout(60)
SCRIPT = Path(__file__).resolve().parents[2] / "src" / "agentao" / "cli" / "demo_script.json"


def doctor(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    base.pop("LLM_PROVIDER", None)
    base.update(AGENTAO_HOME=str(tmp_path / "home"), **env)
    return subprocess.run(
        [sys.executable, "-m", "agentao", "doctor"],
        capture_output=True,
        text=True,
        timeout=50,
        env=base,
    )


def lines(result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    return {line[4:].split("  ")[0].strip(): line for line in result.stdout.splitlines()[1:]}


def test_all_fine(tmp_path: Path, sandbox: Sandbox) -> None:
    result = doctor(tmp_path, LLM_PROVIDER="SCRIPTED", AGENTAO_SCRIPT=str(SCRIPT))
    assert result.returncode == 0, result.stdout
    found = lines(result)
    assert found["LLM provider"].startswith("ok ") and "SCRIPTED" in found["LLM provider"]
    assert "bwrap: shell commands run confined" in found["shell sandbox"]
    assert "does not exist" in found["permission rules"]


def test_what_needs_attention_is_named(tmp_path: Path) -> None:
    rules = tmp_path / "home" / "permissions.json"
    rules.parent.mkdir()
    rules.write_text(json.dumps({"rules": [{"action": "maybe", "tool": "x"}]}))
    result = doctor(tmp_path, AGENTAO_SANDBOX="off")
    assert result.returncode == 1
    found = lines(result)
    assert found["LLM provider"].startswith("!! ") and "OPENAI_API_KEY" in found["LLM provider"]
    assert "unavailable (AGENTAO_SANDBOX=off)" in found["shell sandbox"]
    assert "every shell command asks" in found["shell sandbox"]
    assert found["permission rules"].startswith("!! ") and "rule 1" in found["permission rules"]


def test_a_missing_script_is_named(tmp_path: Path) -> None:
    result = doctor(tmp_path, LLM_PROVIDER="SCRIPTED", AGENTAO_SCRIPT=str(tmp_path / "no.json"))
    assert result.returncode == 1
    assert "is not a file" in lines(result)["LLM provider"]


def test_the_model_catalog_line(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    env = dict(LLM_PROVIDER="SCRIPTED", AGENTAO_SCRIPT=str(SCRIPT), AGENTAO_CONFIG_DIR=str(config))
    assert "does not exist" in lines(doctor(tmp_path, **env))["model catalog"]
    (config / "models.toml").write_text("[providers.a]\n[[providers.a.models]]\nid = 'm'\n")
    found = lines(doctor(tmp_path, **env))["model catalog"]
    assert found.startswith("ok ") and "1 provider(s), 1 model(s)" in found
    (config / "models.toml").write_text("[providers.a]\napi_key = 'sk-x'\n")
    result = doctor(tmp_path, **env)
    assert (
        result.returncode == 1 and "keys never go in the catalog" in lines(result)["model catalog"]
    )
