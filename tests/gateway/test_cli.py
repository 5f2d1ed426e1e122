"""`agentao serve` as a user runs it: a real process, a config file, the SDK against it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import openai
import pytest

from agentao.local_token import TOKEN_FILE_NAME, read_token
from tests.gateway.conftest import DEFAULT_SCRIPT, served_config


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_refuses_a_public_bind_without_keys() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentao", "serve", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "refusing to bind '0.0.0.0' without API keys" in done.stderr


def test_a_store_url_that_cannot_connect_is_exit_1_naming_the_host_not_the_password(
    tmp_path: Path,
) -> None:
    url = f"postgresql://agentao:s3cret-pw@127.0.0.1:{free_port()}/gateway"
    done = subprocess.run(
        [sys.executable, "-m", "agentao", "serve", "--port", "0", "--store", url],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "AGENTAO_HOME": str(tmp_path)},  # its local token goes there
    )
    assert done.returncode == 1
    assert "cannot connect to the PostgreSQL store at 127.0.0.1:" in done.stderr
    assert "s3cret-pw" not in done.stderr and "listening on" not in done.stderr


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u:hunter2@h:badport/db",
        "postgresql://u:hunter2@h:99999/db",
        "postgresql://u:hunter2@[::1/db",
        "postgresql://u@h/db?password=hunter2&no_such_option=1",
    ],
)
def test_a_malformed_store_url_is_exit_2_without_its_password(url: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentao", "serve", "--port", "0", "--store", url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("agentao serve: the store URL is malformed: ")
    assert "Traceback" not in done.stderr
    assert "hunter2" not in done.stdout + done.stderr


def test_the_store_url_may_come_from_the_environment(tmp_path: Path) -> None:
    url = f"postgresql://agentao:s3cret-pw@127.0.0.1:{free_port()}/from_env"
    done = subprocess.run(
        [sys.executable, "-m", "agentao", "serve", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "AGENTAO_STORE_URL": url, "AGENTAO_HOME": str(tmp_path)},
    )
    assert done.returncode == 1 and "/from_env" in done.stderr
    assert "s3cret-pw" not in done.stderr


def test_serve_checks_allowed_hosts_and_origins() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentao", "serve", "--allowed-origin", "ui.example.com"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "allowed origin 'ui.example.com': expected scheme://host[:port]" in done.stderr


def test_serve_with_a_config_file(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": DEFAULT_SCRIPT}))
    config = tmp_path / "gateway.toml"
    config.write_text(
        f"""
[agents.agentao]
command = ["{sys.executable}", "-m", "agentao", "--acp"]
cwd = "{tmp_path}"
env = {{ LLM_PROVIDER = "SCRIPTED", AGENTAO_SCRIPT = "{script}" }}
"""
    )
    port = free_port()
    env = {**os.environ, "AGENTAO_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentao", "serve", "--config", str(config), "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:  # until uvicorn says it serves (the agents started first)
            seen.append(line.decode())
            if "Application startup complete" in seen[-1]:
                break
        else:
            raise AssertionError("agentao serve exited:\n" + "".join(seen))
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").json()["status"] == "ok"
        token = read_token(tmp_path / "home" / TOKEN_FILE_NAME)  # keyless: the local token
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=token, max_retries=0)
        reply = client.chat.completions.create(
            model="agentao", messages=[{"role": "user", "content": "hello"}]
        )
        assert reply.choices[0].message.content == "Answer one."
        assert (tmp_path / "home" / "gateway.sqlite3").exists()  # the state directory
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0


# ---- where it listens, and what it says before ------------------------------------------

LISTENING = "agentao serve: listening on http://127.0.0.1:"


def serve_command(tmp: Path, *extra: str) -> list[str]:
    config = tmp / "gateway.toml"
    config.write_text(served_config(tmp))
    return [sys.executable, "-m", "agentao", "serve", "--config", str(config), *extra]


def test_port_zero_prints_the_bound_port_once_serving_and_a_fresh_store_is_quiet(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "AGENTAO_HOME": str(tmp_path / "home")}  # a fresh store
    proc = subprocess.Popen(
        serve_command(tmp_path, "--port", "0"),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if line.startswith(LISTENING):
                break
        else:
            raise AssertionError("agentao serve exited:\n" + "".join(seen))
        port = int(seen[-1].removeprefix(LISTENING).split()[0])
        assert port != 0
        assert not [s for s in seen if "running on" in s.lower()]  # ours is the one line
        assert any("Application startup complete" in s for s in seen[:-1])  # agents first
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").json()["status"] == "ok"
        assert (tmp_path / "home" / "gateway.sqlite3").exists()
        assert not [s for s in seen if "schema at version" in s], "".join(seen)
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0


def test_a_port_already_taken_is_a_clear_error_and_nothing_claims_to_listen(
    tmp_path: Path,
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "AGENTAO_HOME": str(tmp_path / "home")}
        done = subprocess.run(
            serve_command(tmp_path, "--port", str(port)),
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1
    assert f"agentao serve: cannot listen on http://127.0.0.1:{port}: " in done.stderr
    assert "in use" in done.stderr
    assert "listening" not in done.stderr.lower() and "Uvicorn running" not in done.stderr
    assert "Application startup" not in done.stderr  # no agent was started


def test_an_unknown_config_key_stops_serve_naming_it(tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text('[agents.agentao]\ncommand = "agentao --acp"\nprocesess = 2\n')
    done = subprocess.run(
        [sys.executable, "-m", "agentao", "serve", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "unknown [agents.agentao] settings ['processes'" not in done.stderr
    assert "unknown [agents.agentao] settings ['procesess']" in done.stderr
