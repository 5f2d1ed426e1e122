"""The interactive session's collapsed output, in a real pty with our agent on the fake LLM:
a thought is one dim line until `/thoughts` prints it (or `/thoughts on` prints every one
whole), and a cut tool output is printed whole by `/expand [N]`; neither asks the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_chat import chat, home  # noqa: F401 (the pty fixtures)
from tests.fakes.fake_llm import FakeLLM, FakeToolCall

pytestmark = pytest.mark.timeout(90)


def test_a_thought_is_one_line_until_thoughts_shows_it(chat, fake_llm: FakeLLM) -> None:  # noqa: F811
    fake_llm.reply(reasoning=["step one\nstep two\n", "step three"], text=["answered"])
    fake_llm.reply(reasoning=["a second idea"], text=["again"])
    term = chat(flow="thoughts")
    term.wait_idle("session ")
    term.line("think")
    screen = term.wait_turns(1)
    assert "(3 lines) · /thoughts shows it" in screen and "thought for " in screen
    assert "step two" not in screen and "answered" in screen
    term.line("/thoughts")
    screen = term.wait_idle("step three")
    shown = screen.split("> /thoughts")[-1]
    assert "thinking: step one" in shown and "step two" in shown
    term.line("/thoughts on")
    term.wait_idle("thoughts: shown in full")
    term.line("again")
    screen = term.wait_turns(2)
    assert "thinking: a second idea" in screen.split("> again")[-1]
    assert len(fake_llm.requests) == 2  # the commands were answered here
    term.line("/quit")
    assert term.exit_status() == 0


def test_expand_prints_a_cut_output_whole(chat, fake_llm: FakeLLM, ws: Path) -> None:  # noqa: F811
    (ws / "long.txt").write_text("".join(f"row {n}\n" for n in range(1, 41)))
    read = FakeToolCall("read_file", {"file_path": "long.txt"}, id="r1")
    fake_llm.reply(tool_calls=[read])
    fake_llm.reply("read it")
    term = chat(flow="expand")
    term.wait_idle("session ")
    term.line("read the file")
    screen = term.wait_turns(1)
    assert "row 12" in screen and "row 13" not in screen
    assert "… 28 more lines · /expand 1" in screen
    term.line("/expand")
    screen = term.wait_idle("row 40")
    whole = screen.split("> /expand")[-1]
    assert "output 1, all 40 lines:" in whole
    assert [f"row {n}" for n in range(1, 41)] == [
        line.strip() for line in whole.splitlines() if line.strip().startswith("row ")
    ]
    term.line("/expand 7")
    term.wait_idle("no cut output 7 (kept: 1 to 1)")
    term.line("/expand x; rm -rf")
    term.wait_idle("not 'x; rm -rf'")
    assert len(fake_llm.requests) == 2
    term.line("/quit")
    assert term.exit_status() == 0
