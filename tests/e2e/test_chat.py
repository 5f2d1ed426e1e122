"""`agentao` with no command: the interactive session in a real pty, with our agent
(`agentao --acp` as a subprocess) on the fake LLM. Each flow's final screen is kept as
a text capture in the test's tmp dir (`screen-<flow>.txt`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

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

    def start(*argv: str, flow: str = "chat") -> Terminal:
        env = {**fake_llm.env(), "AGENTAO_HOME": str(home)}
        term = Terminal(list(argv), ws, env)
        started.append((flow, term))
        return term

    yield start
    for flow, term in started:
        term.save(tmp_path / f"screen-{flow}.txt")
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


def test_an_edit_shows_its_diff_and_long_shell_output_is_cut(chat, fake_llm, ws):
    (ws / "notes.txt").write_text("alpha\nbeta\n")
    edit = {"file_path": "notes.txt", "old_string": "beta", "new_string": "gamma"}
    fake_llm.reply(tool_calls=[FakeToolCall("replace", edit, id="e1")])
    fake_llm.reply(tool_calls=[shell("seq 1 30", "s1")])
    fake_llm.reply("edited and counted")
    term = chat(flow="diff")
    term.wait_idle("session ")
    term.line("edit and count")
    term.wait_for("answer 1-3")
    term.type("1")
    screen = term.wait_turns(1)
    assert "-beta" in screen and "+gamma" in screen  # the diff stays in the scrollback
    assert "edited" in screen and "(+1 -1)" in screen
    output = screen.split("seq 1 30")[-1]
    assert "\n    1\n" in output and "\n    12\n" in output and "\n    13\n" not in output
    assert "… 18 more lines" in output
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
