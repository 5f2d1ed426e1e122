"""LocalEnv against the real disk and real processes."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from agentao.agent.local_env import LocalEnv
from agentao.agent.settings import ShellLimits
from agentao.credentials import is_secret_name, scrubbed_env
from tests.waiting import until

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")


async def test_read_and_write_text(tmp_path: Path) -> None:
    env = LocalEnv()
    target = tmp_path / "a" / "b.txt"
    await env.write_text(target, "one\ntwo\nthree\n")
    assert await env.read_text(target) == "one\ntwo\nthree\n"
    assert await env.read_text(target, line=2, limit=1) == "two\n"
    with pytest.raises(FileNotFoundError):
        await env.read_text(tmp_path / "missing")


async def test_binary_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bin").write_bytes(b"\x00\x01\x02")
    with pytest.raises(ValueError, match="binary"):
        await LocalEnv().read_text(tmp_path / "bin")


async def test_write_does_not_follow_a_final_symlink(tmp_path: Path) -> None:
    (tmp_path / "real").write_text("keep")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(OSError):
        await LocalEnv().write_text(tmp_path / "link", "changed")
    assert (tmp_path / "real").read_text() == "keep"


async def test_command_output_and_exit_code(tmp_path: Path) -> None:
    result = await LocalEnv().run_command("echo out; echo err >&2; exit 3", tmp_path, 10, 10_000)
    assert result.exit_code == 3
    assert "out" in result.output and "err" in result.output
    assert not result.truncated and not result.timed_out


@pytest.fixture
def real_tmp(tmp_path: Path) -> Path:
    return Path(os.path.realpath(tmp_path))


async def test_runs_in_cwd_and_reports_start(real_tmp: Path) -> None:
    started: list[str | None] = []

    async def on_start(terminal_id: str | None) -> None:
        started.append(terminal_id)

    result = await LocalEnv().run_command("pwd", real_tmp, 10, 1000, on_start)
    assert result.output.strip() == str(real_tmp)
    assert started == [None]


async def test_output_cap_keeps_head_and_tail_with_marker(tmp_path: Path) -> None:
    cmd = "echo FIRST; head -c 100000 /dev/zero | tr '\\0' x; echo; echo LAST"
    result = await LocalEnv().run_command(cmd, tmp_path, 10, 1000)
    assert result.truncated
    assert result.output.startswith("FIRST")
    assert result.output.rstrip().endswith("LAST")
    assert "bytes of output omitted" in result.output and "1000 bytes" in result.output
    assert len(result.output) < 1300


async def test_timeout_kills_the_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    cmd = f"sleep 30 & echo $! > {pid_file}; sleep 30"
    result = await LocalEnv(ShellLimits(kill_grace=0.2)).run_command(cmd, tmp_path, 0.5, 1000)
    assert result.timed_out and result.exit_code is None
    child = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)


async def test_background_leftovers_do_not_hang_or_survive(tmp_path: Path) -> None:
    pid_file = tmp_path / "bg.pid"
    result = await LocalEnv().run_command(
        f"sleep 30 & echo $! > {pid_file}; echo done", tmp_path, 20, 1000
    )
    assert result.exit_code == 0 and "done" in result.output
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


async def test_cancel_kills_the_command_and_its_children(tmp_path: Path) -> None:
    pgid_file = tmp_path / "pgid"
    # The shell names its group (one write, by a builtin: no other process) only once
    # both children are forked, and so in the group.
    cmd = f"sleep 30 & sleep 30 & echo $$ > {pgid_file}; wait"
    task = asyncio.create_task(LocalEnv().run_command(cmd, tmp_path, 60, 1000))
    pgid = int(await until(lambda: whole_line(pgid_file), "the shell to name its group"))
    assert len(group_members(pgid)) == 3  # the shell and both sleeps are running
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)


async def test_a_cancel_while_the_command_starts_kills_what_it_already_forked(
    tmp_path: Path,
) -> None:
    """Cancelled while asyncio still connects the shell's pipes (the shell runs already):
    asyncio then kills the shell alone, and what it forked lived on. Seen under load as
    the test above failing: its cancel landed in that window."""
    fifo = tmp_path / "pgid"
    os.mkfifo(fifo)
    cmd = f"sleep 30 & sleep 30 & echo $$ > {fifo}; wait"
    task = asyncio.create_task(LocalEnv().run_command(cmd, tmp_path, 60, 1000))
    while not running_with(str(fifo)):  # noqa: ASYNC110 (no event: the spawn is the step)
        await asyncio.sleep(0)  # one loop step at a time: in one of them the shell is spawned
    # A blocking read holds this event loop (which would connect the shell's pipes) until
    # the shell has forked both children and named its group: the cancel lands in the window.
    with open(fifo) as names:  # noqa: ASYNC230 (blocking on purpose)
        pgid = int(names.readline())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)


def running_with(argument: str) -> bool:
    """Whether a running process has `argument` (a path of this test's own) on its command line."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if argument.encode() in cmdline.read_bytes():
                return True
        except OSError:  # gone meanwhile
            continue
    return False


def whole_line(path: Path) -> str | None:
    """The file's text once its line is written whole (None before)."""
    text = path.read_text() if path.exists() else ""
    return text if text.endswith("\n") else None


def group_members(pgid: int) -> list[int]:
    """The pids of the processes in group `pgid` (from /proc: field 5 of `stat`)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[2]) == pgid:
            members.append(int(stat.parent.name))
    return members


async def test_term_ignoring_child_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "stubborn.pid"
    cmd = f"(trap '' TERM; sleep 30) & echo $! > {pid_file}; sleep 30"
    limits = ShellLimits(kill_grace=0.1)
    result = await LocalEnv(limits).run_command(cmd, tmp_path, 0.5, 1000)
    assert result.timed_out
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


async def test_killed_by_signal_is_reported(tmp_path: Path) -> None:
    result = await LocalEnv().run_command("kill -KILL $$", tmp_path, 10, 1000)
    assert result.signal == signal.Signals.SIGKILL.name and result.exit_code is None


async def test_api_keys_are_not_inherited(tmp_path: Path) -> None:
    parent = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "OPENAI_API_KEY": "sk-1",
        "DEEPSEEK_API_KEY": "sk-2",
        "MYPROVIDER_API_KEY": "sk-3",
        "ANTHROPIC_AUTH_TOKEN": "tok",
        "HF_TOKEN": "hf",
        "GEMINI_SECRET": "sec",
        "KEEP_ME": "yes",
    }
    result = await LocalEnv(env=parent).run_command("env", tmp_path, 10, 100_000)
    assert "KEEP_ME=yes" in result.output
    for secret in ("sk-1", "sk-2", "sk-3", "tok", "hf=", "sec"):
        assert secret not in result.output.replace("HF_TOKEN", "")


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("OPENAI_API_KEY", True),
        ("QWEN_API_KEY", True),
        ("ANY_NEW_VENDOR_API_KEY", True),
        ("ANTHROPIC_AUTH_TOKEN", True),
        ("DASHSCOPE_SECRET_KEY", True),
        ("OPENROUTER_TOKEN", True),
        ("PATH", False),
        ("HOME", False),
        ("GITHUB_TOKEN", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("SSH_AUTH_SOCK", True),
        ("TOKENIZERS_PARALLELISM", False),
        ("XAUTHORITY", False),
        ("OPENAI_BASE_URL", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret
    assert (name in scrubbed_env({name: "v"})) is not secret


async def test_the_environment_is_worked_out_at_the_first_command_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening a session builds a LocalEnv; most never run a command, so building one
    neither scrubs os.environ nor walks PATH (they cost more than the rest of opening a
    session), and a second command reuses what the first worked out."""
    import agentao.agent.local_env as local_env

    calls = {"scrub": 0, "which": 0}
    real_scrub, real_which = local_env.scrubbed_env, local_env.shutil.which

    def scrub(*args: object) -> dict[str, str]:
        calls["scrub"] += 1
        return real_scrub(*args)  # type: ignore[arg-type]

    def which(*args: object) -> str | None:
        calls["which"] += 1
        return real_which(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(local_env, "scrubbed_env", scrub)
    monkeypatch.setattr(local_env.shutil, "which", which)
    monkeypatch.setenv("AGENTAO_TEST_SECRET_TOKEN", "hidden")
    env = LocalEnv()
    assert calls == {"scrub": 0, "which": 0}
    first = await env.run_command("echo ${AGENTAO_TEST_SECRET_TOKEN:-none}", tmp_path, 10, 1000)
    second = await env.run_command("echo again", tmp_path, 10, 1000)
    assert (first.output, second.output) == ("none\n", "again\n")
    assert calls == {"scrub": 1, "which": 1}
