"""`/rewind` in the interactive terminal (cli/chat/rewind.py): the prompts listed, a dry
run shown, a question before anything changes. A real pty (pyte reads the screen), our
agent as a subprocess, the fake LLM."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_chat import chat, home  # noqa: F401  (the fixtures)
from tests.fakes.fake_llm import FakeLLM, FakeToolCall

pytestmark = pytest.mark.timeout(90)


def _write(fake_llm: FakeLLM, path: str, content: str, answer: str) -> None:
    fake_llm.reply(tool_calls=[FakeToolCall("write_file", {"file_path": path, "content": content})])
    fake_llm.reply(answer)


def test_rewind_lists_shows_the_dry_run_and_asks(chat, fake_llm, ws: Path):  # noqa: F811
    (ws / "a.txt").write_text("before\n")
    fake_llm.reply("plain answer")
    _write(fake_llm, "a.txt", "edited\n", "wrote a")
    _write(fake_llm, "b.txt", "new\n", "wrote b")
    fake_llm.reply("after the rewind")
    term = chat(flow="rewind")
    term.wait_idle("session ")
    for n, prompt in enumerate(("just talk", "edit a", "make b"), start=1):
        term.line(prompt)
        term.wait_turns(n)
    term.line("/rewind")
    screen = term.wait_idle("/rewind N")
    assert "  1  just talk" in screen and "  2  edit a  (1 file)" in screen
    (ws / "b.txt").write_text("the person's\n")
    term.line("/rewind 2")
    screen = term.wait_for("Rewind?")
    dry = screen[screen.rindex("/rewind 2") :]
    assert "restore" in dry and "a.txt" in dry
    assert "conflict" in dry and "b.txt" in dry and "changed outside the agent" in dry
    assert "2 prompt(s) dropped" in dry and "f: yes, overwriting" in dry
    assert (ws / "a.txt").read_text() == "edited\n"  # nothing yet
    term.type("n")
    term.wait_idle("nothing rewound")
    term.line("/rewind 2")
    term.wait_for(lambda s: s.count("Rewind?") == 2, "the second question")
    term.type("f")
    screen = term.wait_idle("rewound:")
    assert "2 files restored" in screen and "back before prompt 2" in screen
    assert (ws / "a.txt").read_text() == "before\n" and not (ws / "b.txt").exists()
    term.line("go on")
    term.wait_idle("after the rewind")
    told = [m for m in fake_llm.requests[-1].body["messages"] if m["role"] == "user"]
    assert [
        m["content"] if isinstance(m["content"], str) else m["content"][0]["text"] for m in told
    ] == [
        "just talk",
        "go on",
    ]
    term.line("/quit")
    assert term.exit_status() == 0
