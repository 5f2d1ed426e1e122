"""`agentao run` on a real terminal, as a person sees it: a real pty read into a terminal
emulator (terminal_screen.py), real `agentao --acp` processes, the fake LLM.

Each test is one defect of issue 23 that a person met on a real terminal: the question
overdrawn by the spinner, finished tool lines gone, Ctrl-C at the question hanging and
eating the next line, a deliberate Reject called a failure, a flag typo taken as the
prompt, a resumed session's old answers without their prompts, `/help` sent to the model.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from tests.e2e.agent_process import agent_env
from tests.e2e.terminal_screen import TerminalScreen, agentao_argv
from tests.fakes.fake_llm import FakeLLM, FakeToolCall

pytestmark = pytest.mark.timeout(90)
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
COMMAND = "echo one; echo two; touch made"  # our agent asks before running it


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def env(tmp_path: Path, fake_llm: FakeLLM) -> dict[str, str]:
    return agent_env(tmp_path / "home", **fake_llm.env())


def shell_turn(fake: FakeLLM, command: str = COMMAND) -> None:
    fake.reply(tool_calls=[FakeToolCall("run_shell_command", {"command": command}, id="s1")])
    fake.reply("Done.")


def run_on_a_terminal(env: dict[str, str], ws: Path, *args: str) -> TerminalScreen:
    return TerminalScreen(agentao_argv("run", "--cwd", str(ws), *args), env)


def test_the_question_is_never_overdrawn_and_the_tool_line_prints_once(fake_llm, env, ws):
    shell_turn(fake_llm)
    with run_on_a_terminal(env, ws, "--approve", "ask", "go") as term:
        term.expect(b"Choose")
        term.send(b"1\r")
        code = term.wait()
    lines = term.lines()
    assert code == 0, term.text()
    assert "Choose [1/2] (2): 1" in lines  # the digit right after the question, alone
    finished = [line for line in lines if line.startswith("✓ ")]
    assert finished == [f"✓ Run `{COMMAND}` (execute) completed — exit 0"], term.text()
    asked = [line for line in lines if "Choose" in line or "Permission" in line]
    assert not any("Running" in line or "Waiting" in line for line in asked), term.text()
    assert not any(glyph in term.text() for glyph in SPINNER)  # nothing left of the region
    assert (ws / "made").exists()


def test_the_question_shows_the_command_and_the_edit_s_diff(fake_llm, env, ws, tmp_path):
    (ws / "notes.txt").write_text("alpha\nbeta\n")
    home = Path(env["AGENTAO_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    rules = {"rules": [{"action": "ask", "tool": "replace"}]}  # edits ask first
    (home / "permissions.json").write_text(json.dumps(rules))
    edit = {"file_path": "notes.txt", "old_string": "beta", "new_string": "gamma"}
    fake_llm.reply(tool_calls=[FakeToolCall("replace", edit, id="e1")])
    shell_turn(fake_llm, "touch \x1b[2Jmade")  # the command is shown, its escape is not obeyed
    with run_on_a_terminal(env, ws, "--approve", "ask", "go") as term:
        first = term.expect(b"Choose")
        term.send(b"1\r")
        term.expect(b"Choose", after=first + 1)
        term.send(b"2\r")
        code = term.wait()
    lines = term.lines()
    assert code == 0, term.text()
    edit_question = lines[: next(i for i, line in enumerate(lines) if "Choose" in line)]
    assert "    -beta" in edit_question and "    +gamma" in edit_question, term.text()
    assert "  $ touch \\x1b[2Jmade" in lines, term.text()  # shown, not obeyed
    assert b"\x1b[2J" not in term.output  # nowhere: the question, the tool lines, the spinner
    assert (ws / "notes.txt").read_text() == "alpha\ngamma\n"


def test_finished_tool_lines_stay_with_what_they_did(fake_llm, env, ws):
    (ws / "a.txt").write_text("one\ntwo\nthree\n")
    fake_llm.reply(tool_calls=[FakeToolCall("read_file", {"file_path": "a.txt"}, id="r1")])
    fake_llm.reply(tool_calls=[FakeToolCall("run_shell_command", {"command": "seq 1 30"})])
    edit = {"file_path": "a.txt", "content": "one\nTWO\nthree\n"}
    fake_llm.reply(tool_calls=[FakeToolCall("write_file", edit, id="w1")])
    fake_llm.reply("All done.")
    with run_on_a_terminal(env, ws, "--approve", "all", "go") as term:
        code = term.wait()
    lines = term.lines()
    assert code == 0, term.text()
    assert f"✓ Read a.txt (read) completed — {ws}/a.txt · 3 lines" in lines, term.text()
    shell = lines.index("✓ Run `seq 1 30` (execute) completed — exit 0")
    shown = [f"    {n}" for n in range(1, 11)] + ["    … 20 more lines"]
    assert lines[shell + 1 : shell + 12] == shown
    edited = lines.index(f"✓ Write a.txt (edit) completed — edited {ws}/a.txt (+1 -1)")
    assert lines[edited + 1 : edited + 6] == [
        "    @@ -1,3 +1,3 @@",  # the diff right under its line: no blank line between
        "     one",
        "    -two",
        "    +TWO",
        "     three",
    ]
    assert "All done." in lines


def test_escape_sequences_from_the_agent_are_shown_not_obeyed(fake_llm, env, ws):
    """A command's output, a title and the answer may carry terminal control sequences
    (from the model, or a file in the repo): clearing the screen, moving the cursor.
    They are printed as text; what was on the screen stays."""
    command = r"printf 'safe\033[2J\033[Hgone\n'"
    fake_llm.reply(tool_calls=[FakeToolCall("run_shell_command", {"command": command})])
    fake_llm.reply("An answer\x1b[2J\x1b[1Awith escapes.")
    with run_on_a_terminal(env, ws, "--approve", "all", "go") as term:
        code = term.wait()
    lines = term.lines()
    assert code == 0, term.text()
    assert lines[0].startswith("agentao ") and " · session " in lines[0]  # not cleared
    assert r"    safe\x1b[2J\x1b[Hgone" in lines, term.text()
    assert r"An answer\x1b[2J\x1b[1Awith escapes." in lines, term.text()


def test_ctrl_c_at_the_question_cancels_exits_130_and_leaves_the_terminal_sane(fake_llm, env, ws):
    """Under a shell, as a person runs it: after Ctrl-C the shell gets its prompt back at
    once, the terminal echoes and edits lines again, and the next line typed is the
    shell's (before, a thread still reading the answer hung the exit and took it)."""
    shell_turn(fake_llm)
    run = shlex.join(agentao_argv("run", "--cwd", str(ws), "--approve", "ask", "go"))
    script = f'trap ":" INT; {run}; echo "exit=$?"; IFS= read -r line; echo "got:$line"'
    with TerminalScreen(["/bin/bash", "-c", script], env) as term:
        asked = term.expect(b"Choose")
        term.send(b"\x03")
        term.expect(b"exit=130", after=asked, bound=20)
        lflag = term.modes()[3]
        assert lflag & termios.ECHO and lflag & termios.ICANON
        term.send(b"hello\r")
        term.expect(b"got:hello", after=asked)
        assert term.wait() == 0
    assert "— cancelled" in term.lines(), term.text()
    assert not (ws / "made").exists()


def test_a_deliberate_reject_is_not_a_failure(fake_llm, env, ws):
    shell_turn(fake_llm)
    with run_on_a_terminal(env, ws, "--approve", "ask", "go") as term:
        term.expect(b"Choose")
        term.send(b"2\r")
        code = term.wait()
    assert code == 0, term.text()
    assert any("→ Reject" in line for line in term.lines()), term.text()
    assert "re-run with --approve" not in term.text()
    assert not (ws / "made").exists()


@pytest.mark.parametrize("json_lines", [[], ["--json"]], ids=["text", "json"])
def test_with_stdout_in_a_file_the_question_is_asked_on_the_terminal(
    fake_llm, env, ws, tmp_path, json_lines
):
    shell_turn(fake_llm)
    out = tmp_path / "out.txt"
    run = shlex.join(agentao_argv("run", "--cwd", str(ws), "--approve", "ask", *json_lines, "go"))
    with TerminalScreen(["/bin/bash", "-c", f"{run} > {shlex.quote(str(out))}"], env) as term:
        term.expect(b"Choose")
        term.send(b"1\r")
        assert term.wait() == 0
    assert "Choose [1/2] (2): 1" in term.lines() and "Choose" not in out.read_text()
    assert (ws / "made").exists()


def test_a_policy_rejection_still_exits_3_with_the_advice(fake_llm, env, ws):
    shell_turn(fake_llm)
    with run_on_a_terminal(env, ws, "go") as term:
        code = term.wait()
    assert code == 3 and "re-run with --approve" in term.text()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--aprove", "all", "hi"], "did you mean --approve?"),
        (["run", "--approve", "all", "--jsn", "hi"], "did you mean --json?"),
        (["rnu", "hi"], "did you mean 'run'?"),
    ],
)
def test_a_typo_exits_2_with_did_you_mean_and_starts_nothing(fake_llm, env, ws, argv, message):
    with TerminalScreen(agentao_argv(*argv), env, cwd=str(ws)) as term:
        code = term.wait()
    assert code == 2 and message in term.text(), term.text()
    assert fake_llm.requests == []  # "all" was not taken as a prompt


@pytest.mark.parametrize("how", ["--resume", "--continue", "--agent 'agentao --acp --resume'"])
def test_a_resumed_session_shows_each_old_prompt_before_its_answer(fake_llm, env, ws, how):
    fake_llm.reply("first answer")
    fake_llm.reply("second answer")
    first = subprocess.run(
        agentao_argv("run", "--cwd", str(ws), "first question"),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert first.returncode == 0, first.stderr
    agent = shlex.join([sys.executable, "-m", "agentao", "--acp", "--resume"])
    session_id = first.stdout.split(" · session ")[1].split()[0]
    args = {
        "--resume": ["--resume", session_id],
        "--continue": ["--continue"],
    }.get(how, ["--agent", agent])
    with run_on_a_terminal(env, ws, *args, "second question") as term:
        code = term.wait()
    lines = term.lines()
    assert code == 0, term.text()
    order = [
        "you> first question",
        "first answer",
        "── earlier in this session ↑ · new turn ↓ ──",
        "second answer",
    ]
    assert [line for line in lines if line in order] == order, term.text()


def test_help_and_model_are_answered_here_never_sent_to_the_model(fake_llm, env, ws, tmp_path):
    with run_on_a_terminal(env, ws, "/help") as term:
        assert term.wait() == 0
    lines = term.lines()
    assert "  /help             this list: the agent's commands and these local ones" in lines
    assert any(line.startswith("  /compact") for line in lines)  # the agent's own
    assert sum(line.startswith("  /model") for line in lines) == 1  # ours answers it
    with run_on_a_terminal(env, ws, "/model") as term:
        assert term.wait() == 0
    assert "* openai/fake-model  fake-model" in term.lines(), term.text()
    record = tmp_path / "wire.jsonl"
    with run_on_a_terminal(env, ws, "--record", str(record), "/model other-model") as term:
        assert term.wait() == 0
    assert "model: other-model" in term.lines()
    assert '"configId":"model"' in record.read_text().replace(" ", "")
    assert fake_llm.requests == []
