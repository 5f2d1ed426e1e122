"""A keyless `agentao serve` on loopback still authenticates: the local token (Jupyter's model).

Real parts: `agentao serve` as a subprocess with no [[keys]], a second local user
(`nobody`, through `setpriv`) as the attacker, the real `agentao run` as the client
that reads the token file, and plain HTTP for the one-time login link.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agentao.local_token import TOKEN_FILE_NAME
from tests.gateway.conftest import ServedGateway, served_config

NOBODY = 65534
CHAT = "/v1/chat/completions"
# What another local user sends: the lowest bar, `all`, and a turn that writes a file.
ATTACK = {
    "model": "agentao",
    "messages": [{"role": "user", "content": "write the file"}],
    "x_permission_policy": "all",
}
WEB = {"X-Agentao-Client": "web"}


@pytest.fixture(scope="module")
def world_reachable() -> Iterator[Path]:
    """A directory every local user may walk through (pytest's tmp is root's alone), so
    that only the token file's own mode keeps `nobody` out of it."""
    base = Path(tempfile.mkdtemp(prefix="agentao-local-token-"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def keyless(world_reachable: Path) -> Iterator[ServedGateway]:
    tmp = world_reachable / "served"
    tmp.mkdir()
    (tmp / "home").mkdir(mode=0o755)  # readable state directory: the file must hold alone
    served = ServedGateway(tmp, served_config(tmp))
    yield served
    served.stop()


def _as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    """`argv` run by the other local user, with the system's Python, no venv."""
    if not sys.platform.startswith("linux"):
        pytest.skip("a second local user is set up with setpriv (Linux)")
    setpriv = shutil.which("setpriv")
    if setpriv is None or os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("CI must be able to run a test as another user (root and setpriv)")
        pytest.skip("needs root and setpriv to act as another local user")
    user = ("--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups")
    return subprocess.run(
        [setpriv, *user, *argv], capture_output=True, text=True, timeout=30, cwd="/"
    )


NOBODY_POST = """
import json, sys, urllib.request, urllib.error
request = urllib.request.Request(sys.argv[1], data=sys.argv[2].encode(),
                                 headers={"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(request, timeout=30) as reply:
        print(json.dumps({"status": reply.status}))
except urllib.error.HTTPError as error:
    print(json.dumps({"status": error.code, "body": json.loads(error.read())}))
"""
NOBODY_READ = """
import sys
try:
    print(open(sys.argv[1]).read())
except OSError as error:
    print(type(error).__name__)
"""


def _python() -> str:
    return os.path.realpath(sys.executable)  # the interpreter itself, not the venv's link


def test_another_local_user_cannot_drive_a_keyless_gateway(keyless: ServedGateway) -> None:
    workspace = keyless.home.parent  # the agent's cwd (served_config)
    token_file = keyless.home / TOKEN_FILE_NAME
    post = _as_nobody(_python(), "-I", "-c", NOBODY_POST, keyless.url + CHAT, json.dumps(ATTACK))
    answer = json.loads(post.stdout or post.stderr)
    assert answer["status"] == 401, answer
    assert answer["body"]["error"]["code"] == "missing_api_key"
    assert not (workspace / "hello.txt").exists()
    # Nor can it read the token: the file is 0600 and root's, its directory open to all.
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert token_file.stat().st_uid == os.geteuid() == 0
    assert stat.S_IMODE(keyless.home.stat().st_mode) == 0o755
    read = _as_nobody(_python(), "-I", "-c", NOBODY_READ, str(token_file))
    assert read.stdout.strip() == "PermissionError"
    # Control: the same request with the token from the file is the local user's.
    reply = httpx.post(keyless.url + CHAT, json=ATTACK, headers=keyless.auth, timeout=30)
    assert reply.status_code == 200, reply.text
    assert (workspace / "hello.txt").read_text() == "hi\n"


def test_a_wrong_token_is_refused_and_health_and_the_page_stay_open(
    keyless: ServedGateway,
) -> None:
    wrong = httpx.get(f"{keyless.url}/v1/models", headers={"Authorization": "Bearer nope"})
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (401, "invalid_api_key")
    assert httpx.get(f"{keyless.url}/v1/models").status_code == 401
    assert httpx.get(f"{keyless.url}/v1/models", headers=keyless.auth).status_code == 200
    health = httpx.get(f"{keyless.url}/healthz").json()
    assert health["auth_required"] is True
    assert httpx.get(f"{keyless.url}/readyz").status_code == 200
    assert httpx.get(f"{keyless.url}/").status_code in (200, 503)  # 503: bundle not built


def _login_link(served: ServedGateway) -> str:
    line = served.wait_for_line("/login?token=")
    return line.split("web UI: ", 1)[1].split()[0]


def test_the_login_link_works_once_and_its_cookie_opens_the_web_ui_s_requests(
    keyless: ServedGateway,
) -> None:
    link = _login_link(keyless)
    code = link.split("token=", 1)[1]
    assert keyless.token is not None and code != keyless.token  # not the file's token
    first = httpx.get(link)
    assert first.status_code == 303 and first.headers["location"] == "/"
    cookie = first.headers["set-cookie"]
    attributes = {part.strip().lower() for part in cookie.split(";")}
    assert {"httponly", "samesite=strict", "path=/"} <= attributes, cookie
    again = httpx.get(link)
    assert (again.status_code, again.json()["error"]["code"]) == (401, "login_link_invalid")

    session = first.cookies
    ui = httpx.get(f"{keyless.url}/v1/models", cookies=session, headers=WEB)
    assert ui.status_code == 200, ui.text
    assert httpx.get(f"{keyless.url}/v1/models", headers=WEB).status_code == 401
    # Not the UI's own request (no mark a cross-origin page could not send): no session.
    assert httpx.get(f"{keyless.url}/v1/models", cookies=session).status_code == 401
    forged = httpx.Cookies({"agentao_session": "1.x.forged"})
    assert httpx.get(f"{keyless.url}/v1/models", cookies=forged, headers=WEB).status_code == 401
    # The code never reaches a log line (only the banner printed for the person).
    logged = [line for line in keyless.lines if code in line and "web UI: " not in line]
    assert logged == []


def test_agentao_run_against_a_keyless_gateway_reads_the_token_file(
    keyless: ServedGateway, tmp_path: Path
) -> None:
    def run(home: Path) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "AGENTAO_REMOTE_KEY"}
        argv = [sys.executable, "-m", "agentao", "run", "--agent", f"{keyless.url}/acp"]
        return subprocess.run(
            [*argv, "--cwd", str(keyless.home.parent), "hello"],
            env={**env, "AGENTAO_HOME": str(home)},
            capture_output=True,
            text=True,
            timeout=60,
        )

    done = run(keyless.home)  # this user's state directory: the token is read from it
    assert done.returncode == 0, done.stderr
    assert "Answer" in done.stdout
    elsewhere = run(tmp_path / "no-token-here")  # no token file: the gateway refuses
    assert elsewhere.returncode != 0
    assert "401" in elsewhere.stderr or "token" in elsewhere.stderr, elsewhere.stderr


@pytest.mark.parametrize("problem", ["mode 0644", "a symlink"])
def test_serve_refuses_a_token_file_it_cannot_trust(tmp_path: Path, problem: str) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    token = home / TOKEN_FILE_NAME
    if problem == "mode 0644":
        token.write_text("guessable\n")
        token.chmod(0o644)
    else:
        (tmp_path / "elsewhere").write_text("planted\n")
        token.symlink_to(tmp_path / "elsewhere")
    config = tmp_path / "gateway.toml"
    config.write_text(served_config(tmp_path))
    serve = [sys.executable, "-m", "agentao", "serve", "--config", str(config), "--port", "0"]
    done = subprocess.run(
        serve, env={**os.environ, "AGENTAO_HOME": str(home)}, capture_output=True, text=True
    )
    assert done.returncode == 1
    assert str(token) in done.stderr and "listening" not in done.stderr, done.stderr
