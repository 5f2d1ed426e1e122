"""The shell sandbox, for real: bubblewrap around real commands.

The escape corpus (tests/data/shell_escape_corpus.json) runs each attack with the
confinement the permission engine gives it, and checks everything outside: a sibling
directory with a secret, a fake home with an SSH key, the host's /tmp and /dev/shm, a
process outside (its environment holds a provider key), a TCP listener on the host's
loopback. Each attack also runs *unconfined* as a control, so the checks are shown to
catch the escape they look for.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import socket
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agentao.agent.local_env import LocalEnv
from agentao.agent.permissions import PermissionEngine
from agentao.agent.sandbox import Confinement, Sandbox, SandboxSettings, SandboxUnavailable
from agentao.agent.settings import ShellLimits
from agentao.agent.tools.base import ToolContext
from agentao.agent.tools.shell import RunShellCommand
from tests.agent.doubles import Nobody

CORPUS = json.loads(
    (Path(__file__).parent.parent / "data" / "shell_escape_corpus.json").read_text()
)
KEY = "sk-agentao-test-PROVIDER-KEY"
SECRETS = ("TOP-SECRET", "SSH-SECRET", KEY)


class Listener:
    """A TCP server on the host's 127.0.0.1 that counts connections.

    No accept thread: `reached()` takes what waits in the accept queue itself. A connection
    is in that queue once the client's connect() returned, so a count taken after the
    command ended sees it (a thread that had accepted it but not yet counted it did not)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]
        self.connections = 0

    def reached(self) -> int:
        """Connections made so far."""
        while True:
            try:
                conn, _ = self.sock.accept()
            except BlockingIOError:
                return self.connections
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


@dataclass
class World:
    """Everything an escape could touch, built fresh for one case."""

    base: Path
    ws: Path = field(init=False)
    out: Path = field(init=False)
    home: Path = field(init=False)
    marker: str = field(default_factory=lambda: f"agentao-escape-{uuid.uuid4().hex}")

    def __post_init__(self) -> None:
        self.ws, self.out, self.home = self.base / "ws", self.base / "out", self.base / "home"
        self.ws.mkdir()
        (self.ws / "a.txt").write_text("hello\n")
        self.out.mkdir()
        (self.out / "secret.txt").write_text("TOP-SECRET\n")
        (self.home / ".ssh").mkdir(parents=True)
        (self.home / ".ssh" / "id_rsa").write_text("SSH-SECRET\n")
        self.listener = Listener()
        self.victim = subprocess.Popen(["sleep", "1000"], env={"OPENAI_API_KEY": KEY})

    def close(self) -> None:
        self.listener.close()
        self.victim.kill()
        self.victim.wait()
        for extra in (Path("/tmp") / self.marker, Path("/dev/shm") / self.marker):
            extra.unlink(missing_ok=True)

    def fill(self, command: str) -> str:
        values = {
            "ws": self.ws,
            "out": self.out,
            "home": self.home,
            "port": self.listener.port,
            "victim": self.victim.pid,
            "marker": self.marker,
        }
        for name, value in values.items():
            command = command.replace("{" + name + "}", str(value))
        return command

    def environ(self) -> dict[str, str]:
        """The agent's environment: a provider key, and HOME pointing at the fake home."""
        return {**os.environ, "HOME": str(self.home), "OPENAI_API_KEY": KEY}

    def state(self, case: dict[str, Any]) -> dict[str, Any]:
        snapshot: dict[str, Any] = {
            "connections": self.listener.reached(),
            "victim alive": _alive(self.victim),
            "host tmp": (Path("/tmp") / self.marker).exists(),
            "host shm": (Path("/dev/shm") / self.marker).exists(),
        }
        for tree in (self.out, self.home):
            snapshot.update(_tree(tree))
        if name := case.get("check_ws_file"):
            snapshot[f"ws/{name}"] = os.path.lexists(self.ws / name)
        if name := case.get("check_ws_file_kept"):
            snapshot[f"ws/{name}"] = os.path.lexists(self.ws / name)
        return snapshot


def _alive(proc: subprocess.Popen[bytes]) -> bool:
    """Whether `proc` lives and no SIGKILL waits for it. `kill -9` returns once the signal
    is pending; the process dies when next scheduled, which under load can be after the
    check: the pending bit (/proc/PID/status) is set before `kill` returns."""
    if proc.poll() is not None:
        return False
    try:
        status = Path(f"/proc/{proc.pid}/status").read_text()
    except FileNotFoundError:
        return False
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    if fields.get("State", "").strip().startswith(("Z", "X")):
        return False
    pending = int(fields.get("SigPnd", "0"), 16) | int(fields.get("ShdPnd", "0"), 16)
    return not pending & (1 << (signal.SIGKILL - 1))


def _tree(root: Path) -> dict[str, str]:
    state = {str(root): str(root.exists())}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            st = p.lstat()
            digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
            state[str(p)] = f"{oct(st.st_mode)} {digest} {os.readlink(p) if p.is_symlink() else ''}"
    return state


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(Path(os.path.realpath(tmp_path)))
    yield w
    w.close()


def confinement(world: World, sandbox: Sandbox, tier: str) -> Confinement:
    """What the real engine gives: an allowlisted command (read) or an approved one."""
    engine = PermissionEngine("workspace-write", sandbox=sandbox.status())
    ctx = ToolContext(world.ws, LocalEnv(), Nobody(), workspace=(world.ws,))
    command = "ls" if tier == "read" else "make"
    decision = engine.decide(RunShellCommand(), {"command": command}, ctx)
    assert decision.verdict == ("allow" if tier == "read" else "ask")
    assert decision.confinement is not None
    return decision.confinement


async def attempt(world: World, case: dict[str, Any], env: LocalEnv, c: Confinement | None) -> bool:
    """Run one attack; whether anything outside changed or a secret showed."""
    before = world.state(case)
    result = await env.run_command(world.fill(case["command"]), world.ws, 10.0, 1 << 20, None, c)
    if case.get("settle"):
        await asyncio.sleep(case["settle"])  # what a case left behind has had its chance
    leaked = [s for s in SECRETS if s in result.output]
    return world.state(case) != before or bool(leaked)


@pytest.mark.parametrize("case", CORPUS["cases"], ids=[c["id"] for c in CORPUS["cases"]])
async def test_shell_escape_corpus(world: World, sandbox: Sandbox, case: dict[str, Any]) -> None:
    c = confinement(world, sandbox, case.get("tier", "write"))
    env = LocalEnv(ShellLimits(), env=world.environ(), sandbox=sandbox)
    assert not await attempt(world, case, env, c), f"ESCAPE: {case['id']}"


CONTROLS = [c for c in CORPUS["cases"] if c.get("unconfined_escapes", True)]


@pytest.mark.parametrize("case", CONTROLS, ids=[c["id"] for c in CONTROLS])
async def test_each_attack_escapes_unconfined(world: World, case: dict[str, Any]) -> None:
    """The control: without the sandbox the same command does escape, so the checks
    above can fail."""
    if case.get("tier") == "read":
        (world.ws / "a.txt").chmod(0o644)
    env = LocalEnv(ShellLimits(), env=world.environ())
    assert await attempt(world, case, env, None), f"the check cannot see {case['id']}"


def test_corpus_is_big_enough() -> None:
    assert len(CORPUS["cases"]) >= 40
    assert len({c["id"] for c in CORPUS["cases"]}) == len(CORPUS["cases"])
    assert len(CONTROLS) >= 30


# --- what a command sees, and what is left of it ------------------------------------


async def test_a_legitimate_command_works_in_the_workspace(world: World, sandbox: Sandbox) -> None:
    env = LocalEnv(env=world.environ(), sandbox=sandbox)
    script = "echo made > made.txt && cat a.txt && pwd && ls /usr/bin/env && echo $HOME"
    result = await env.run_command(
        script, world.ws, 10.0, 1 << 16, None, confinement(world, sandbox, "write")
    )
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == ["hello", str(world.ws), "/usr/bin/env", str(world.home)]
    assert (world.ws / "made.txt").read_text() == "made\n"


async def test_environment_is_scrubbed_and_bwrap_starts_empty(
    world: World, sandbox: Sandbox
) -> None:
    env = LocalEnv(
        env={**world.environ(), "GITHUB_TOKEN": "ghp-x", "CI_FLAG": "1"}, sandbox=sandbox
    )
    result = await env.run_command(
        "env; echo ---; tr '\\0' '\\n' < /proc/1/environ",
        world.ws,
        10.0,
        1 << 16,
        None,
        confinement(world, sandbox, "read"),
    )
    inside, _, pid1 = result.output.partition("---\n")
    names = {line.split("=", 1)[0] for line in inside.splitlines() if "=" in line}
    assert {"PATH", "HOME", "TMPDIR"} <= names
    assert not names & {"OPENAI_API_KEY", "GITHUB_TOKEN", "CI_FLAG", "PWD_OF_AGENT"}
    assert pid1.strip() == ""  # bwrap's own PID 1 carries nothing either


@pytest.mark.parametrize(
    ("extra", "seen"),
    [
        ({"LC_SECRET": "x-secret"}, {}),  # not a locale variable: a prefix is no allowlist
        ({"LC_ALL": "/etc/passwd"}, {}),  # a locale variable whose value is a path
        ({"LC_CTYPE": "C." + "U" * 100}, {}),  # longer than MAX_LOCALE_CHARS
        ({"LANG": "en_US.UTF-8\nX=1"}, {}),
        ({"LC_ALL": "C.UTF-8", "LANGUAGE": "de:en"}, {"LC_ALL": "C.UTF-8", "LANGUAGE": "de:en"}),
    ],
)
async def test_the_environment_is_an_allowlist_of_exact_names(
    world: World, sandbox: Sandbox, extra: dict[str, str], seen: dict[str, str]
) -> None:
    base = {k: v for k, v in world.environ().items() if not k.startswith(("LC_", "LANG"))}
    env = LocalEnv(env={**base, **extra}, sandbox=sandbox)
    result = await env.run_command(
        "env", world.ws, 10.0, 1 << 16, None, confinement(world, sandbox, "read")
    )
    inside = dict(line.split("=", 1) for line in result.output.splitlines() if "=" in line)
    assert {k: v for k, v in inside.items() if k in extra} == seen


async def test_nothing_outlives_the_command(world: World, sandbox: Sandbox) -> None:
    tag = f"333.{uuid.uuid4().int % 10**6}"
    env = LocalEnv(env=world.environ(), sandbox=sandbox)
    c = confinement(world, sandbox, "write")
    result = await env.run_command(
        f"setsid sleep {tag} & nohup sleep {tag} & echo started", world.ws, 10.0, 4096, None, c
    )
    assert result.output.strip() == "started"
    assert _processes_with(tag) == []  # the PID namespace went with the command


def _processes_with(tag: str) -> list[str]:
    found = subprocess.run(["pgrep", "-af", tag], capture_output=True, text=True, check=False)
    return [line for line in found.stdout.splitlines() if "pgrep" not in line]


async def test_a_timeout_kills_the_whole_sandbox(world: World, sandbox: Sandbox) -> None:
    tag = f"334.{uuid.uuid4().int % 10**6}"
    env = LocalEnv(ShellLimits(kill_grace=0.1), env=world.environ(), sandbox=sandbox)
    c = confinement(world, sandbox, "write")
    result = await env.run_command(f"sleep {tag} & sleep {tag}", world.ws, 0.3, 4096, None, c)
    assert result.timed_out
    assert _processes_with(tag) == []


async def test_network_is_only_there_when_granted(world: World, sandbox: Sandbox) -> None:
    env = LocalEnv(env=world.environ(), sandbox=sandbox)
    c = confinement(world, sandbox, "write")
    command = world.fill("echo hi > /dev/tcp/127.0.0.1/{port} && echo sent")
    denied = await env.run_command(command, world.ws, 10.0, 4096, None, c)
    assert denied.exit_code != 0 and world.listener.reached() == 0
    granted = Confinement(c.writable, c.read_only, network=True)
    allowed = await env.run_command(command, world.ws, 10.0, 4096, None, granted)
    assert allowed.output.strip() == "sent", allowed.output
    assert world.listener.reached() == 1


async def test_a_confined_command_never_runs_without_a_sandbox(world: World) -> None:
    c = Confinement((world.ws,))
    with pytest.raises(SandboxUnavailable):
        await LocalEnv().run_command("touch x", world.ws, 5.0, 4096, None, c)
    off = Sandbox(SandboxSettings(mode="off"))
    with pytest.raises(SandboxUnavailable, match="AGENTAO_SANDBOX=off"):
        await LocalEnv(sandbox=off).run_command("touch x", world.ws, 5.0, 4096, None, c)
    assert not (world.ws / "x").exists()


def test_a_missing_bwrap_is_reported_with_the_reason() -> None:
    status = Sandbox(SandboxSettings(bwrap="agentao-no-such-bwrap")).status()
    assert not status.available
    assert "agentao-no-such-bwrap not found" in status.reason


@pytest.mark.parametrize(("raw", "mode"), [("", "auto"), ("AUTO", "auto"), ("off", "off")])
def test_sandbox_setting(raw: str, mode: str) -> None:
    assert SandboxSettings.from_env({"AGENTAO_SANDBOX": raw}).mode == mode


def test_a_bad_sandbox_setting_is_an_error() -> None:
    with pytest.raises(ValueError, match="AGENTAO_SANDBOX='maybe'"):
        SandboxSettings.from_env({"AGENTAO_SANDBOX": "maybe"})


# --- the hostile repository: git runs a command from a repository's config -----------


def hostile_repository(world: World) -> Path:
    """What a cloned project may carry: a bare repository under an ordinary name, whose
    config names a textconv program, its objects borrowed from the project itself."""
    subprocess.run(["git", "init", "-q", str(world.ws)], check=True)
    (world.ws / "a.txt").write_text("hello\n")
    git = ["git", "-C", str(world.ws), "-c", "user.name=a", "-c", "user.email=a@b"]
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    branch = subprocess.run(
        [*git, "rev-parse", "--abbrev-ref", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    bare = world.ws / "vendor" / "data"
    (bare / "refs" / "heads").mkdir(parents=True)
    (bare / "objects" / "info").mkdir(parents=True)
    (bare / "info").mkdir()
    (bare / "HEAD").write_text(f"ref: refs/heads/{branch}\n")
    head = (world.ws / ".git" / "refs" / "heads" / branch).read_text()
    (bare / "refs" / "heads" / branch).write_text(head)
    (bare / "objects" / "info" / "alternates").write_text(f"{world.ws}/.git/objects\n")
    (bare / "info" / "attributes").write_text("* diff=x\n")
    payload = f"touch {world.out}/PWNED {world.ws}/PWNED; cat"
    (bare / "config").write_text(
        f'[core]\n\tbare = true\n[diff "x"]\n\ttextconv = "sh -c \'{payload}\'"\n'
    )
    return bare


@pytest.mark.parametrize("command", ["git show HEAD", "git log -p", "git diff HEAD~0 HEAD"])
async def test_allowlisted_git_does_not_run_a_repositorys_textconv(
    world: World, sandbox: Sandbox, command: str
) -> None:
    bare = hostile_repository(world)
    engine = PermissionEngine("workspace-write", sandbox=sandbox.status())
    env = LocalEnv(env=world.environ(), sandbox=sandbox)
    ctx = ToolContext(world.ws, env, Nobody(), workspace=(world.ws,), call_id="g")
    args = {"command": command, "directory": str(bare)}
    decision = engine.decide(RunShellCommand(), args, ctx)
    assert decision.verdict == "allow"  # allowlisted: runs without asking …
    ctx.confinement = decision.confinement
    result = await RunShellCommand().run(args, ctx)
    assert "hello" in result.model_text or command.startswith("git diff")  # … and works
    assert not (world.out / "PWNED").exists() and not (world.ws / "PWNED").exists()


def test_the_textconv_attack_is_real_without_the_defences(world: World) -> None:
    """The control: plain `git show` in that directory runs the repository's program."""
    bare = hostile_repository(world)
    subprocess.run(["git", "show", "HEAD"], cwd=bare, capture_output=True, check=False)
    assert (world.out / "PWNED").exists()


async def test_even_unhardened_git_is_contained_read_only(world: World, sandbox: Sandbox) -> None:
    """Defence in depth: were the flags ever lost, the allowlisted tier's sandbox still
    has the workspace read-only and nothing outside it."""
    bare = hostile_repository(world)
    env = LocalEnv(env=world.environ(), sandbox=sandbox)
    c = confinement(world, sandbox, "read")
    await env.run_command("git show HEAD", bare, 10.0, 1 << 16, None, c)
    assert not (world.out / "PWNED").exists() and not (world.ws / "PWNED").exists()
