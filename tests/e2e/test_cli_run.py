"""`agentao run` and `agentao demo` as a user runs them: a real process, real pipes, exit codes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.terminal_screen import TerminalScreen

ROOT = Path(__file__).resolve().parent.parent.parent
FAKE = ROOT / "tests" / "fakes" / "fake_agents" / "scenario.py"
SCRIPT = ROOT / "src" / "agentao" / "cli" / "demo_script.json"
pytestmark = pytest.mark.timeout(60)


def agentao(*args: str, env: dict | None = None, stdin: str | None = None, cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, "-m", "agentao", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=50,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


def fake_agent() -> str:
    return f"{sys.executable} {FAKE}"


@pytest.fixture
def scripted(tmp_path):
    """Environment for our own agent with the demo script (no LLM, state in tmp)."""
    home = tmp_path / "home"
    home.mkdir()
    return {"LLM_PROVIDER": "SCRIPTED", "AGENTAO_SCRIPT": str(SCRIPT), "AGENTAO_HOME": str(home)}


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def test_tool_turn_against_our_agent(scripted, workspace):
    result = agentao(
        "run", "--cwd", str(workspace), "--approve", "all", "greeting, please", env=scripted
    )
    assert result.returncode == 0, result.stderr
    assert "Write hello.txt" in result.stdout and "+Hello from agentao!" in result.stdout
    assert "[x] Write hello.txt" in result.stdout
    assert "permission" in result.stdout and "end_turn" in result.stdout
    assert (workspace / "hello.txt").read_text() == "Hello from agentao!\nHave a wonderful day!\n"


def test_rejected_permission_exits_3(scripted, workspace):
    result = agentao("run", "--cwd", str(workspace), "greeting, please", env=scripted)
    assert result.returncode == 3, result.stderr
    # Nobody was asked: the reason says whose rule it was, on the permission line and in
    # the tool's result (which is also what our agent told the model).
    assert "(the client's policy approves no tool calls)" in result.stdout
    assert "rejected: the client's policy approves no tool calls" in result.stdout
    assert "rejected by user" not in result.stdout


def test_json_events_and_record(scripted, workspace, tmp_path):
    record = tmp_path / "wire.jsonl"
    result = agentao(
        "run",
        "--protocol",  # the v1 wire: tool_call, plan, and the command in our terminal
        "1",
        "--json",
        "--record",
        str(record),
        "--cwd",
        str(workspace),
        "--approve",
        "all",
        "greeting",
        env=scripted,
    )
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[0]["type"] == "session" and events[0]["agent"]["name"] == "agentao"
    assert events[-1] == {**events[-1], "type": "end", "stopReason": "end_turn"}
    kinds = {e["update"]["sessionUpdate"] for e in events if e["type"] == "update"}
    assert {
        "agent_message_chunk",
        "agent_thought_chunk",
        "plan",
        "tool_call",
        "tool_call_update",
    } <= kinds
    # The tool call's permission, then the command it runs in our terminal: every
    # terminal/create is put to the policy too (tests/e2e/test_client_honest.py).
    permissions = [e for e in events if e["type"] == "permission"]
    assert [e["approved"] for e in permissions] == [True, True]
    assert permissions[1]["kind"] == "execute" and permissions[1]["title"].startswith("Run: ")
    wire = [json.loads(line) for line in record.read_text().splitlines()]
    assert wire[0]["dir"] == "send" and wire[0]["msg"]["method"] == "initialize"
    methods = {(w["dir"], w["msg"].get("method")) for w in wire}
    assert ("recv", "session/request_permission") in methods and (
        "recv",
        "terminal/create",
    ) in methods
    updates = [w for w in wire if w["msg"].get("method") == "session/update"]
    assert len(updates) == sum(e["type"] == "update" for e in events)


@pytest.mark.parametrize("prompt_arg", [(), ("-",)], ids=["no-prompt", "dash"])
def test_prompt_from_stdin(workspace, prompt_arg):
    """A piped prompt reaches the agent whole, every line of it; the answer is printed."""
    piped = "echo from stdin\nsecond line\n"
    args = ("run", "--agent", fake_agent(), "--cwd", str(workspace), *prompt_arg)
    result = agentao(*args, stdin=piped)
    assert result.returncode == 0, result.stderr
    # The fake agent's answer is the prompt as it received it, as JSON: printed as said.
    lines = result.stdout.splitlines()
    answers = [json.loads(line) for line in lines if line.startswith("[{")]
    assert answers == [[{"type": "text", "text": piped}]], result.stdout
    assert lines[-1].endswith("end_turn")


def test_any_agent_with_a_tool_turn(workspace):
    (workspace / "a.txt").write_text("from disk\n")
    result = agentao(
        "run", "--agent", fake_agent(), "--cwd", str(workspace), f"fs-read {workspace}/a.txt"
    )
    assert result.returncode == 0 and "from disk" in result.stdout


def test_terminal_output_and_record_carry_no_key(workspace, tmp_path):
    """An agent's `env` in the client's terminal: the provider key this process holds
    reaches neither the output nor the --record file; --pass-env lets a name through."""
    record = tmp_path / "wire.jsonl"
    secret = {"OPENAI_API_KEY": "sk-agentao-test-RUN-KEY", "GITHUB_TOKEN": "ghp-agentao-test"}
    args = ("run", "--agent", fake_agent(), "--cwd", str(workspace), "--record", str(record))
    args = (*args, "--approve", "all")  # the agent runs `env` in our terminal
    result = agentao(*args, "term env", env=secret)
    assert result.returncode == 0, result.stderr
    assert "PATH=" in result.stdout  # the command did run and print its environment
    for value in secret.values():
        assert value not in result.stdout and value not in record.read_text()
    passed = agentao(*args, "--pass-env", "GITHUB_TOKEN", "term env", env=secret)
    assert "GITHUB_TOKEN=ghp-agentao-test" in passed.stdout
    assert "sk-agentao-test-RUN-KEY" not in passed.stdout


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        ((), "", "prompt is empty"),
        (("--cwd", "/no/such/dir", "x"), None, "not a directory"),
        (("--agent", "", "x"), None, "bad --agent"),
        (("--approve", "sometimes", "x"), None, "invalid choice"),
    ],
)
def test_usage_errors_exit_2(args, stdin, message):
    result = agentao("run", *args, stdin=stdin)
    assert result.returncode == 2
    assert message in result.stderr


def test_agent_errors_exit_1(workspace):
    result = agentao("run", "--agent", "/no/such/agent", "--cwd", str(workspace), "x")
    assert result.returncode == 1 and "cannot start" in result.stderr
    crash = agentao("run", "--agent", fake_agent(), "--cwd", str(workspace), "crash")
    assert (
        crash.returncode == 1
        and "crashed on purpose" in crash.stderr
        and "exit code 3" in crash.stderr
    )


def test_ctrl_c_cancels_the_turn_and_exits_130(workspace):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentao",
            "run",
            "--agent",
            fake_agent(),
            "--cwd",
            str(workspace),
            "hang",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = ""
    deadline = time.monotonic() + 30
    while "working" not in line and time.monotonic() < deadline:
        line += proc.stdout.read(1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "stopping" in out and "cancelled" in out


def test_demo_runs_offline(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["HOME"] = str(tmp_path)  # nothing from the user's state
    result = subprocess.run(
        [sys.executable, "-m", "agentao", "demo"],
        capture_output=True,
        text=True,
        timeout=50,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for expected in (
        "(scripted, no LLM)",
        "Plan",  # a plan
        "[x] Write hello.txt",
        "+Have a wonderful day!",  # a diff
        "permission: Run `cat hello.txt | wc -l`",  # a permission request, approved
        "session/resume",  # the second process (ACP v2: session/load is v1's)
        "you> Create hello.txt",  # the replayed history
        "That's the end of the demo.",
    ):
        assert expected in out, expected


@pytest.mark.parametrize(("answer", "option"), [(b"1", "yes"), (b"2", "no")])
def test_approve_ask_prompts_in_a_terminal(workspace, answer, option):
    """--approve ask in a real pseudo-terminal: the user picks; *_always is not offered.
    A rejection the person chose is not a failure: exit 0, and no "re-run" advice."""
    argv = [
        "run",
        "--approve",
        "ask",
        "--agent",
        fake_agent(),
        "--cwd",
        str(workspace),
        "perm edit",
    ]
    text, code = in_a_terminal(argv, answer=(b"Choose", answer + b"\r"))
    assert "Choose" in text and "Always" not in text.split("Choose")[0]
    assert f'"optionId": "{option}"' in text
    assert code == 0 and "re-run with --approve" not in text


MARKDOWN = (
    "# Findings\n\nThe file is **fine**.\n\n| name | lines |\n|---|---|\n| a.py | 3 |\n\n"
    "```python\nprint('hi')\n```\n"
)


def test_a_terminal_gets_markdown_a_spinner_and_usage(scripted, workspace, tmp_path):
    script = tmp_path / "md.json"
    reply = {"text": MARKDOWN, "usage": {"input_tokens": 1234, "output_tokens": 56}}
    script.write_text(json.dumps({"responses": [reply]}))
    env = {**scripted, "AGENTAO_SCRIPT": str(script)}
    argv = [sys.executable, "-m", "agentao", "run", "--cwd", str(workspace), "look"]
    with TerminalScreen(argv, {**os.environ, **env}) as term:
        code = term.wait()
    assert code == 0
    # the spinner's line, before the first token (drawn, then cleared: in the bytes)
    assert "Waiting for the agent" in term.output.decode(errors="replace")
    # What stays on the screen; not the bytes, where a tick may have drawn the region
    # while the streamed text stopped mid-table (shown as text until the table is whole).
    text = term.text()
    assert "Findings" in text and "fine" in text and "print('hi')" in text
    assert "**fine**" not in text and "| name |" not in text and "```" not in text  # rendered
    assert "tokens: 1,234 in · 56 out" in text
    piped = agentao("run", "--cwd", str(workspace), "look", env=env)
    assert "The file is **fine**." in piped.stdout  # a pipe gets the text as written
    assert "Waiting for the agent" not in piped.stdout


def in_a_terminal(
    argv: list[str], env: dict | None = None, answer: tuple[bytes, bytes] | None = None
) -> tuple[str, int]:
    """Run `agentao ARGV` on a real pseudo-terminal: its output (ANSI codes removed) and
    exit code; `answer` = (prompt, keys) types the keys once the prompt shows."""
    import fcntl
    import pty
    import re
    import select
    import struct
    import termios

    pid, fd = pty.fork()
    if pid == 0:  # the child: agentao on the pty
        # A wide window, as people's terminals are, and its size from the pty alone (a
        # pytest-xdist worker exports COLUMNS=80): a long tmp path is one line, not wrapped.
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 240, 0, 0))
        inherited = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        os.execve(
            sys.executable, [sys.executable, "-m", "agentao", *argv], {**inherited, **(env or {})}
        )
    out, answered, deadline = b"", False, time.monotonic() + 30
    while time.monotonic() < deadline:  # a bound, not a measurement
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            continue
        try:
            data = os.read(fd, 4096)
        except OSError:  # the child closed the pty
            break
        if not data:
            break
        out += data
        if answer is not None and answer[0] in out and not answered:
            os.write(fd, answer[1])
            answered = True
    _, status = os.waitpid(pid, 0)
    text = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", out.decode(errors="replace"))
    return text, os.waitstatus_to_exitcode(status)


def test_an_unknown_mode_exits_2_naming_the_offered_ones(scripted, workspace):
    result = agentao("run", "--cwd", str(workspace), "--mode", "full_access", "hi", env=scripted)
    assert result.returncode == 2
    offered = "it offers: read-only, workspace-write, full-access, plan"
    assert "--mode 'full_access' is not offered by this agent" in result.stderr + result.stdout
    assert offered in result.stderr + result.stdout


@pytest.mark.parametrize("protocol", [[], ["--protocol", "1"]])
def test_mode_and_model_are_set_first(scripted, workspace, tmp_path, protocol):
    script = tmp_path / "hi.json"
    script.write_text(json.dumps({"responses": [{"text": "hi"}]}))
    record = tmp_path / "wire.jsonl"
    env = {**scripted, "AGENTAO_SCRIPT": str(script)}
    args = (
        "--mode",
        "plan",
        "--model",
        "scripted/other",
        "--record",
        str(record),
        "--cwd",
        str(workspace),
        *protocol,
    )
    result = agentao("run", *args, "x", env=env)
    assert result.returncode == 0, result.stderr
    sent = [json.loads(line)["msg"] for line in record.read_text().splitlines()]
    sent = [m for m in sent if "method" in m]
    settings = [m for m in sent if m["method"] in ("session/set_mode", "session/set_config_option")]
    methods = [m["method"] for m in sent]
    assert methods.index("session/prompt") > max(map(sent.index, settings))
    if protocol:  # v1: the mode by session/set_mode, then the model's config option
        assert [m["method"] for m in settings] == ["session/set_mode", "session/set_config_option"]
        assert settings[0]["params"]["modeId"] == "plan"
    else:  # v2 has no set_mode: the mode is a config option too
        assert [(m["params"]["configId"], m["params"]["value"]) for m in settings] == [
            ("mode", "plan"),
            ("model", "scripted/other"),
        ]


def test_json_lines_carry_local_answers_and_the_replay(fake_llm, workspace, tmp_path):
    """--json keeps one object a line: `/help` is one "local" object (no model request);
    a resumed session's history comes first, each object marked "replayed"."""
    from tests.e2e.agent_process import agent_env

    env = agent_env(tmp_path / "home", **fake_llm.env())
    helped = agentao("run", "--json", "--cwd", str(workspace), "/help", env=env)
    answers = [json.loads(line) for line in helped.stdout.splitlines()]
    [local] = [a for a in answers if a["type"] == "local"]
    assert helped.returncode == 0 and answers[-1] == local and fake_llm.requests == []
    assert "local commands (answered here, not sent):" in local["lines"]
    fake_llm.reply("first answer")
    fake_llm.reply("second answer")
    assert agentao("run", "--cwd", str(workspace), "first", env=env).returncode == 0
    resumed = agentao("run", "--json", "--continue", "--cwd", str(workspace), "again", env=env)
    events = [json.loads(line) for line in resumed.stdout.splitlines()]
    replayed = [e for e in events if e.get("replayed")]
    kinds = [e["update"]["sessionUpdate"] for e in replayed if e["type"] == "update"]
    assert "user_message_chunk" in kinds and "agent_message_chunk" in kinds
    assert events.index(replayed[-1]) < len(events) - 1 and events[-1]["type"] == "end"


def test_continue_with_no_session_here_exits_2_before_any_prompt(fake_llm, workspace, tmp_path):
    from tests.e2e.agent_process import agent_env

    env = agent_env(tmp_path / "home", **fake_llm.env())
    result = agentao("run", "--continue", "--cwd", str(workspace), "hi", env=env)
    assert result.returncode == 2 and fake_llm.requests == []
    assert f"--continue: no session to continue in {workspace}" in result.stderr
    both = agentao("run", "--continue", "--resume", "x", "--cwd", str(workspace), "hi", env=env)
    assert both.returncode == 2 and "--continue and --resume: give one" in both.stderr


LIVE = "printf 'live-%s\\n' output; read line < gate.fifo; echo \"after $line\""


@pytest.mark.timeout(30)  # without live output the command's first line never shows: it hangs
def test_a_command_s_output_shows_as_it_comes_over_v2(workspace, tmp_path):
    """Our agent over v2 runs the command in its own terminal: `agentao run` shows its
    first line while it waits on a FIFO only the test opens once that line is shown, then
    the rest, and not again when the command ends (cli/render.py `LiveOutput`)."""
    script = tmp_path / "script.json"
    call = {"name": "run_shell_command", "arguments": {"command": LIVE}}
    turns = [{"match": "run", "tool_calls": [call]}, {"match": "run", "text": "Ran it."}]
    script.write_text(json.dumps({"responses": turns}))
    home = tmp_path / "home"
    home.mkdir()
    env = {"LLM_PROVIDER": "SCRIPTED", "AGENTAO_SCRIPT": str(script), "AGENTAO_HOME": str(home)}
    os.mkfifo(workspace / "gate.fifo")
    args = ["run", "--cwd", str(workspace), "--approve", "all", "run it"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentao", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )
    assert proc.stdout is not None
    before = ""
    while "    live-output\n" not in before:  # the command still waits on the gate
        char = proc.stdout.read(1)
        assert char, f"the output ended before the command's first line: {before!r}"
        before += char
    with open(workspace / "gate.fifo", "w") as gate:
        gate.write("go\n")
    out, err = proc.communicate(timeout=25)
    assert proc.returncode == 0, err
    assert "after go" in out and "Ran it." in out
    assert (before + out).count("live-output") == 1  # not shown again at its end
