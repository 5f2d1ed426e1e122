"""`agentao` with no command: the interactive session in a real pty, with our agent
(`agentao --acp` as a subprocess) on the fake LLM. Each flow's final screen is kept as
a text capture and a picture in the test's tmp dir (`screen-<flow>.txt`, `.svg`)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentao.cli.chat.sessions import LIST_PAGES
from tests.e2e.terminal import Terminal
from tests.fakes.fake_llm import FakeLLM, FakeToolCall

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def chat(fake_llm: FakeLLM, ws: Path, home: Path, tmp_path: Path) -> Iterator:
    """Start `agentao ARGS...` in `ws`; every terminal is closed (and its screen kept)."""
    started: list[tuple[str, Terminal]] = []

    def start(
        *argv: str, flow: str = "chat", env: dict[str, str] | None = None, shell: str | None = None
    ) -> Terminal:
        env = {**fake_llm.env(), "AGENTAO_HOME": str(home), **(env or {})}
        term = Terminal(list(argv), ws, env, shell)
        started.append((flow, term))
        return term

    yield start
    for flow, term in started:
        term.save(tmp_path / f"screen-{flow}.txt")
        term.save_svg(tmp_path / f"screen-{flow}.svg", f"agentao: {flow}")
        term.close()


MARKDOWN = "# Findings\n\nThe file is **fine**.\n\n```python\nprint('hi')\n```\n"


def test_two_turns_render_markdown_and_quit_with_status_0(chat, fake_llm):
    fake_llm.reply(*MARKDOWN.partition("**fine**"))  # the bold split over chunks
    fake_llm.reply("Second answer.")
    term = chat()
    term.wait_idle("session ")
    term.line("look")
    term.wait_turns(1)
    term.line("again")
    screen = term.wait_turns(2)
    assert "Findings" in screen and "fine" in screen and "print('hi')" in screen
    assert "**fine**" not in screen and "```" not in screen and "# Findings" not in screen
    assert screen.index("look") < screen.index("Findings") < screen.index("again")
    assert screen.index("again") < screen.index("Second answer.")
    term.line("/quit")
    assert term.exit_status() == 0
    assert len(fake_llm.requests) == 2


def shell(command: str, call_id: str) -> FakeToolCall:
    return FakeToolCall("run_shell_command", {"command": command}, id=call_id)


def test_a_permission_approved_and_one_rejected_by_keys(chat, fake_llm, ws):
    fake_llm.reply(tool_calls=[shell("touch made.txt", "c1")])
    fake_llm.reply("made it")
    fake_llm.reply(tool_calls=[shell("touch other.txt", "c2")])
    fake_llm.reply("not made")
    term = chat(flow="permissions")
    term.wait_idle("session ")
    term.line("make it")
    screen = term.wait_for("answer 1-3")
    question = screen[screen.rindex("permission?") :]
    assert "$ touch made.txt" in question  # the command is shown with the question
    assert "1 Allow" in question and "2 Always allow" in question and "3 Reject" in question
    assert "working" not in question  # the live area is off the screen while it asks
    term.type("1")
    screen = term.wait_turns(1)
    assert (ws / "made.txt").exists()
    assert "→ Allow" in screen and "made it" in screen
    term.line("make the other")
    term.wait_for(lambda s: s.count("answer 1-3") == 2, "the second question")
    term.type("3")
    screen = term.wait_turns(2)
    assert not (ws / "other.txt").exists()
    assert "→ Reject" in screen and "✗ " in screen.split("make the other")[1]
    assert "not made" in screen
    term.line("/quit")
    assert term.exit_status() == 0


def test_an_edit_shows_its_diff_and_long_shell_output_is_cut(chat, fake_llm, ws, home):
    (ws / "notes.txt").write_text("alpha\nbeta\n")
    # The user's rule: edits ask first (workspace-write would let them through).
    rules = {"rules": [{"action": "ask", "tool": "replace"}]}
    (home / "permissions.json").write_text(json.dumps(rules))
    edit = {"file_path": "notes.txt", "old_string": "beta", "new_string": "gamma"}
    fake_llm.reply(tool_calls=[FakeToolCall("replace", edit, id="e1")])
    fake_llm.reply(tool_calls=[shell("seq 1 30", "s1")])
    fake_llm.reply("edited and counted")
    term = chat(flow="diff")
    term.wait_idle("session ")
    term.line("edit and count")
    screen = term.wait_for("answer 1-3")
    question = screen[screen.rindex("permission?") :]
    assert "-beta" in question and "+gamma" in question  # the diff, before it is allowed
    term.type("1")
    term.wait_for(lambda s: s.count("answer 1-3") == 2, "the command's question")
    term.type("1")
    screen = term.wait_turns(1)
    assert "-beta" in screen and "+gamma" in screen  # the diff stays in the scrollback
    assert "edited" in screen and "(+1 -1)" in screen
    output = screen.split("seq 1 30")[-1]
    assert "\n    1\n" in output and "\n    12\n" in output and "\n    13\n" not in output
    assert "… 18 more lines · /expand 1" in output
    term.line("/quit")
    assert term.exit_status() == 0


def test_ctrl_c_cancels_the_turn_and_the_next_prompt_works(chat, fake_llm):
    fake_llm.hang("partial answer")
    fake_llm.reply("after the cancel")
    term = chat(flow="cancel")
    term.wait_idle("session ")
    term.line("slow")
    term.wait_for("partial answer")
    term.type("\x03")  # Ctrl-C, as the terminal sends it
    assert fake_llm.requests[0].wait_disconnected(timeout=30)  # the agent stopped the call
    screen = term.wait_turns(1)
    assert "— cancelled" in screen
    term.line("go on")
    screen = term.wait_turns(2)
    assert "after the cancel" in screen.split("go on")[1]
    term.line("/quit")
    assert term.exit_status() == 0


def test_ctrl_c_twice_at_the_prompt_exits_0_with_the_terminal_as_it_was(chat, fake_llm):
    """Even after a turn cancelled by Ctrl-C (echo is off during a turn) and a permission
    question (prompt_toolkit's raw mode), the shell gets its terminal settings back."""
    fake_llm.reply(tool_calls=[shell("true", "q1")])
    fake_llm.hang("partial")
    # set -m: agentao runs as a job in its own process group, as an interactive shell runs
    # it (else the turn's Ctrl-C would interrupt this shell too)
    script = 'set -m; stty -g; $AGENTAO; echo "status $?"; stty -g'
    term = chat(flow="sane", shell=script)
    term.wait_idle("session ")
    term.line("ask then hang")
    term.wait_for("answer 1-3")
    term.type("1")
    term.wait_for("partial")
    term.type("\x03")
    term.wait_turns(1)
    term.type("\x03")
    term.wait_idle("Ctrl-C again or Ctrl-D to quit")
    term.type("\x03")
    screen = term.wait_for("status ")
    assert term.exit_status() == 0
    screen = term.screen()
    before, after = screen.splitlines()[0], screen.splitlines()[-1]
    assert "status 0" in screen and before == after and ":" in before


def test_help_is_answered_without_the_model_and_ctrl_c_ctrl_d_exit_0(chat, fake_llm):
    term = chat(flow="help")
    term.wait_idle("session ")
    term.line("/help")
    screen = term.wait_idle("/quit")
    assert "local commands" in screen and "/model" in screen and "/compact" in screen
    assert "/init" in screen  # the agent's own commands, from available_commands_update
    term.line("/nosuch")
    term.wait_idle("unknown command /nosuch")
    term.type("half a line")
    term.type("\x03")  # clears the line; the program goes on
    term.wait_idle("Ctrl-C again or Ctrl-D to quit")
    assert fake_llm.requests == []  # nothing of it reached the model
    term.type("\x04")  # Ctrl-D at an empty prompt
    assert term.exit_status() == 0


def test_continue_shows_the_old_prompts_and_answers_in_order(chat, fake_llm):
    fake_llm.reply("first answer")
    fake_llm.reply("second answer")
    fake_llm.reply("third answer")
    first = chat(flow="before-continue")
    first.wait_idle("session ")
    first.line("first prompt")
    first.wait_turns(1)
    first.line("second prompt")
    first.wait_turns(2)
    first.line("/quit")
    assert first.exit_status() == 0
    again = chat("-c", flow="continue")
    screen = again.wait_idle("resumed session")
    history = ["first prompt", "first answer", "second prompt", "second answer"]
    positions = [screen.index(text) for text in history]
    assert positions == sorted(positions)
    again.line("third prompt")
    screen = again.wait_turns(1)
    assert (
        screen.index("second answer") < screen.index("third prompt") < screen.index("third answer")
    )
    again.line("/quit")
    assert again.exit_status() == 0


def test_model_lists_and_switches_and_mode_too(chat, fake_llm, tmp_path):
    config = tmp_path / "config"
    config.mkdir()
    (config / "models.toml").write_text(
        f'[providers.openai]\nbase_url = "{fake_llm.base_url}"\n'
        '[[providers.openai.models]]\nid = "fake-model"\ncontext_window = 128000\n'
        '[[providers.openai.models]]\nid = "other-model"\ncontext_window = 64000\n'
    )
    fake_llm.reply("from the other model")
    term = chat(flow="model", env={"AGENTAO_CONFIG_DIR": str(config)})
    term.wait_idle("session ")
    term.line("/model")
    screen = term.wait_idle("openai/other-model")
    assert "* openai/fake-model" in screen  # the current one is marked
    term.line("/model openai/nosuch")
    term.wait_idle("no model 'openai/nosuch'")
    term.line("/model openai/other-model")
    term.wait_idle("model: openai/other-model")
    term.line("/mode")
    screen = term.wait_idle("full-access")
    assert "* workspace-write" in screen
    term.line("/mode plan")
    term.wait_idle("mode: plan")
    assert fake_llm.requests == []  # all of it answered without the model
    term.line("hello")
    screen = term.wait_turns(1)
    assert fake_llm.requests[0].body["model"] == "other-model"
    assert screen.count("mode: plan") == 1  # the agent's own word of it is not a change
    term.line("/quit")
    assert term.exit_status() == 0


def test_mentions_go_as_embedded_files_and_never_leave_the_workspace(chat, fake_llm, ws, tmp_path):
    (ws / "src").mkdir()
    (ws / "src" / "notes.md").write_text("the secret sauce is salt\n")
    (tmp_path / "outside.txt").write_text("private key material\n")
    (ws / "link.txt").symlink_to(tmp_path / "outside.txt")
    fake_llm.reply("read them")
    term = chat(flow="mention")
    term.wait_idle("session ")
    term.type("look at @src/no")
    term.type("\t")  # completed from the workspace
    term.wait_for("@src/notes.md")
    term.line(" and @../outside.txt and @link.txt")
    screen = term.wait_turns(1)
    assert "not sent: @../outside.txt: outside the workspace" in screen
    assert "not sent: @link.txt: outside the workspace" in screen
    sent = str(fake_llm.requests[0].body["messages"])
    assert "the secret sauce is salt" in sent  # embedded: the agent declares embeddedContext
    assert "private key material" not in sent
    term.line("/quit")
    assert term.exit_status() == 0


def test_a_shell_line_runs_here_and_multi_line_input_and_history(chat, fake_llm, ws):
    fake_llm.reply("two lines seen")
    fake_llm.reply("paste seen")
    term = chat(flow="input")
    term.wait_idle("session ")
    term.line("!echo local > here.txt && echo ran-it")
    term.wait_idle("! exit 0")
    assert (ws / "here.txt").read_text() == "local\n" and fake_llm.requests == []
    term.type("line one")
    term.type("\n")  # Ctrl-J: a newline, not send
    term.type("line two")
    term.type("\x1b\r")  # Esc-Enter: a newline too
    term.line("line three")
    term.wait_turns(1)
    last = fake_llm.requests[0].body["messages"][-1]["content"]
    assert "line one\nline two\nline three" in str(last).replace("\\n", "\n")
    term.type("\x1b[200~pasted a\rpasted b\x1b[201~")  # a bracketed paste: its Enter is text
    term.line("")
    term.wait_turns(2)
    last = fake_llm.requests[1].body["messages"][-1]["content"]
    assert "pasted a\npasted b" in str(last).replace("\\n", "\n")
    term.line("/quit")
    assert term.exit_status() == 0
    again = chat(flow="history")
    again.wait_idle("session ")
    again.type("\x1b[A")  # Up: the history file of the state directory, across sessions
    again.wait_for("> /quit")
    again.type("\x1b[A")
    again.wait_for(lambda s: "pasted b" in s.split("session ")[-1], "the prompt from before")
    again.type("\x03")
    again.type("\x04")
    assert again.exit_status() == 0


def test_sessions_resume_picker_resume_id_and_clear(chat, fake_llm, ws, home):
    fake_llm.reply("answer one")
    fake_llm.reply("answer two")
    first = chat(flow="sessions-1")
    first.wait_idle("session ")
    first.line("prompt one")
    first.wait_turns(1)
    first.line("/clear")
    screen = first.wait_idle(lambda s: s.count("session ") >= 2, "a new session")
    first.line("prompt two")
    first.wait_turns(2)
    first.line("/sessions")
    screen = first.wait_idle("2. ")
    ids = re.findall(r"^\d\. \S+ \S+  (\S+)  prompt (\w+)", screen, re.MULTILINE)
    assert [title for _, title in ids] == ["two", "one"]  # the latest first
    first.line(f"/resume {ids[1][0]}")
    screen = first.wait_idle("resumed session")
    resumed = screen.split("resumed session")[-1]
    assert "prompt one" in resumed and "answer one" in resumed and "prompt two" not in resumed
    first.line("/quit")
    assert first.exit_status() == 0
    listed = subprocess.run(
        [sys.executable, "-m", "agentao", "sessions"],
        cwd=ws,
        env={**os.environ, **fake_llm.env(), "AGENTAO_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0
    assert [line.split()[3] for line in listed.stdout.splitlines()] == [i for i, _ in ids]
    picker = chat("--resume", flow="picker")
    picker.wait_for("resume which (1-2)?")
    picker.type("2")
    screen = picker.wait_idle("resumed session")
    assert "answer one" in screen.split("resumed session")[-1]
    picker.line("/quit")
    assert picker.exit_status() == 0


FAKE_AGENT = Path(__file__).resolve().parent.parent / "fakes" / "fake_agents" / "scenario.py"


def test_any_agent_its_options_by_key_and_links_without_embedded_context(chat, ws):
    """--agent CMD: another agent (v1, no embeddedContext, its options in its own order)."""
    (ws / "a.txt").write_text("contents stay home\n")
    term = chat("--agent", f"{sys.executable} {FAKE_AGENT}", flow="other-agent")
    term.wait_idle("session ")
    term.line("echo look at @a.txt")
    screen = term.wait_turns(1)
    assert '"type": "resource_link"' in screen and "a.txt" in screen
    assert "contents stay home" not in screen  # a link: the agent reads it itself, or not
    term.line("perm edit")
    screen = term.wait_for("answer 1-3")
    question = screen[screen.rindex("permission?") :]
    assert "1 Always" in question and "2 Allow" in question and "3 Reject" in question
    term.type("2")
    screen = term.wait_turns(2)
    assert '"optionId": "yes"' in screen  # the agent got the option the key named
    term.line("perm-hang")
    term.wait_for("answer 1-1")
    term.type("\x03")  # Ctrl-C at the question: the turn is cancelled, not the program
    screen = term.wait_turns(3)
    assert "— cancelled" in screen.split("perm-hang")[-1]
    term.line("hello")
    screen = term.wait_turns(4)
    assert "hello" in screen.split("> hello")[-1]
    term.line("/compact")  # this agent offers no such command: nothing is sent
    term.wait_idle("this agent offers no /compact")
    term.line("/quit")
    assert term.exit_status() == 0


def test_thoughts_the_plan_elapsed_time_and_agent_commands(chat, fake_llm):
    todos = [
        {"content": "read the code", "status": "completed"},
        {"content": "fix the bug", "status": "in_progress"},
    ]
    fake_llm.reply(
        reasoning=["weighing the options"],
        tool_calls=[FakeToolCall("todo_write", {"todos": todos}, id="t1")],
    )
    fake_llm.reply("planned", delay=0.3)
    fake_llm.reply("initialized")
    term = chat(flow="plan")
    term.wait_idle("session ")
    term.line("plan it")
    screen = term.wait_turns(1)
    assert "thought for " in screen and "(1 line) · /thoughts shows it" in screen
    assert "[x] read the code" in screen and "[~] fix the bug" in screen
    assert "working 0s" in term.raw  # the live line, while the turn ran
    assert "working" not in screen  # ... and gone once it ended
    term.type("/ini")
    term.type("\t")  # the agent's own command, completed
    term.wait_for("> /init")
    term.line("")
    term.wait_turns(2)
    assert len(fake_llm.requests) == 3  # /init went to the agent, which asked the model
    term.line("/compact")  # the agent offers it: sent as its own command, which it answers
    screen = term.wait_turns(3)
    assert "Nothing to compact" in screen.split("> /compact")[-1]
    term.line("/quit")
    assert term.exit_status() == 0


# What a model (or a file it read) may say to take over the terminal: clear the screen,
# set the window title, write the clipboard (OSC 52), move up and erase the question.
HOSTILE = "\x1b[2J\x1b]0;pwned\x07\x1b]52;c;cm0gLXJmIH4=\x07\x1b[1A\x1b[2K\x9b2J"


def test_the_agents_words_cannot_drive_the_terminal(chat, fake_llm, ws):
    fake_llm.reply(
        reasoning=[f"think {HOSTILE}"],
        text=[f"answer {HOSTILE} end"],
        tool_calls=[shell(f"echo hi # {HOSTILE}", "h1")],
    )
    fake_llm.reply(f"after {HOSTILE}")
    term = chat(flow="hostile")
    term.wait_idle("session ")
    term.line("go")
    screen = term.wait_for("answer 1-3")
    assert "permission?" in screen and "echo hi #" in screen  # nothing erased the question
    term.type("3")
    screen = term.wait_turns(1)
    assert "answer" in screen and "end" in screen and "after" in screen
    for sequence in ("\x1b[2J", "\x1b]0;", "\x1b]52;", "\x1b[1A\x1b[2K\x9b", "\x9b"):
        assert sequence not in term.raw, repr(sequence)
    term.line("/quit")
    assert term.exit_status() == 0


def test_without_a_provider_or_a_terminal_it_says_what_to_do(ws, home):
    term = Terminal([], ws, {"AGENTAO_HOME": str(home)})  # no provider variables at all
    try:
        term.wait_for("agentao demo")
        assert term.exit_status() == 1
        screen = term.screen()
        assert "OPENAI_API_KEY" in screen and "agentao doctor" in screen
    finally:
        term.close()
    piped = subprocess.run(
        [sys.executable, "-m", "agentao"],
        stdin=subprocess.DEVNULL,
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert piped.returncode == 2
    assert "needs a terminal" in piped.stdout + piped.stderr and "agentao run" in piped.stderr


def test_an_agent_whose_session_list_never_ends_is_read_to_a_bound(ws):
    agent = f"{sys.executable} {FAKE_AGENT} --endless-list"
    listed = subprocess.run(
        [sys.executable, "-m", "agentao", "--agent", agent, "sessions"],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout.splitlines()) == LIST_PAGES


def test_a_request_the_agent_refuses_is_an_error_line_not_the_end(chat, fake_llm):
    fake_llm.reply("still here")
    term = chat(flow="refused")
    term.wait_idle("session ")
    term.line("/resume no-such-session")
    screen = term.wait_idle("error: ")
    assert "no-such-session" in screen.split("error: ")[-1] or "not found" in screen
    term.line("hello")
    screen = term.wait_turns(1)
    assert "still here" in screen
    term.line("/quit")
    assert term.exit_status() == 0


def test_an_agent_that_cannot_reopen_sessions_says_so(chat, tmp_path):
    """A v1 agent without `loadSession`: --resume ends with a usage error, /resume is an
    error line and the session goes on."""
    agent = f"{sys.executable} {FAKE_AGENT} --no-load"
    term = chat("--agent", agent, "--resume", "some-id", flow="cannot-reopen")
    screen = term.wait_for("cannot reopen")
    assert term.exit_status() == 2
    term = chat("--agent", agent, flow="cannot-reopen-2")
    term.wait_idle("session ")
    term.line("/resume some-id")
    term.wait_idle("cannot reopen")
    term.line("hello")
    screen = term.wait_turns(1)
    assert "hello" in screen.split("> hello")[-1]
    term.line("/quit")
    assert term.exit_status() == 0


def test_ctrl_c_stops_a_shell_line_not_the_session(chat, fake_llm):
    fake_llm.reply("still here")
    term = chat(flow="shell-interrupt")
    term.wait_idle("session ")
    term.line("!echo started; sleep 60")
    term.wait_for("started")
    term.type("\x03")  # reaches the command (the terminal's foreground), not the session
    term.wait_idle("! exit ")
    term.line("hello")
    screen = term.wait_turns(1)
    assert "still here" in screen
    term.line("/quit")
    assert term.exit_status() == 0


def test_the_agents_question_to_the_person_is_answered_with_a_line(chat):
    term = chat("--agent", f"{sys.executable} {FAKE_AGENT}", flow="ask-user")
    term.wait_idle("session ")
    term.line("ask which colour?")
    term.wait_for("answer>")
    assert "question? which colour?" in term.screen()
    term.line("blue")
    screen = term.wait_turns(1)
    assert '"answer": "blue"' in screen  # the agent reports what it got
    term.line("ask and again?")
    term.wait_for(lambda s: s.count("answer>") == 2, "the second question")
    term.type("\x03")  # Ctrl-C at the question: the turn is cancelled, the session goes on
    screen = term.wait_turns(2)
    assert "cancelling…" in screen.split("ask and again?")[-1]
    term.line("/quit")
    assert term.exit_status() == 0


def test_a_running_commands_output_shows_as_it_comes(chat, fake_llm, ws):
    """Over v2 our agent runs the command in its own terminal: its first line shows under
    it in the live area while it waits on a FIFO the test opens only once that line is
    on the screen; its whole output is printed when it ends (cli/chat/screen.py)."""
    os.mkfifo(ws / "gate.fifo")
    command = "printf 'live-%s\\n' output; read line < gate.fifo; echo \"after $line\""
    fake_llm.reply(tool_calls=[shell(command, "s1")])
    fake_llm.reply("ran it")
    term = chat(flow="live-output")
    term.wait_idle("session ")
    term.line("run it")
    term.wait_for("answer 1-3")
    term.type("1")
    term.wait_for("live-output")  # the command still waits on the gate
    with open(ws / "gate.fifo", "w") as gate:
        gate.write("go\n")
    screen = term.wait_turns(1)
    assert "ran it" in screen
    output = screen.split("live-%s")[-1]
    assert "\n    live-output\n    after go\n" in output  # printed once it ended
    term.line("/quit")
    assert term.exit_status() == 0
