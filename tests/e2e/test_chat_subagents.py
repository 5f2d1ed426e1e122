"""The interactive terminal shows a child's steps indented under the parent's tool call
(our agent's `task` tool, the fake LLM, a real pty: tests/e2e/test_chat.py's harness)."""

from __future__ import annotations

import pytest

from tests.e2e.test_chat import chat, home  # noqa: F401  (the pty harness's fixtures)
from tests.fakes.fake_llm import FakeToolCall

pytestmark = pytest.mark.timeout(90)


def test_a_childs_steps_are_shown_indented_under_its_tool_call(chat, fake_llm):  # noqa: F811
    task = {"description": "survey", "prompt": "look around"}
    fake_llm.reply(tool_calls=[FakeToolCall("task", task, id="t1")])  # the parent
    fake_llm.reply(tool_calls=[FakeToolCall("list_directory", {"path": "."}, id="c1")])  # child
    fake_llm.reply("nothing there")  # the child's answer
    fake_llm.reply("parent done")  # the parent again
    term = chat(flow="subagent")
    term.wait_idle("session ")
    term.line("delegate it")
    screen = term.wait_turns(1)
    lines = screen.splitlines()
    start = next(i for i, line in enumerate(lines) if "↳ subagent survey" in line)
    step = next(i for i, line in enumerate(lines) if line.lstrip().startswith("│ ✓ List"))
    end = next(i for i, line in enumerate(lines) if "↳ survey end_turn" in line)
    assert start < step < end, screen
    assert lines[step].startswith("  │"), screen  # indented under the parent's call
    assert "parent done" in screen
    assert not any(line.startswith("nothing there") for line in lines), screen
    term.line("/quit")
    assert term.exit_status() == 0


def test_a_grandchild_is_shown_a_step_further_in(chat, fake_llm):  # noqa: F811
    """AGENTAO_SUBAGENT_DEPTH=2: a child's own child is drawn one step further in than
    its parent, its tool calls and its end too, between the child's start and end."""
    outer = {"description": "outer", "prompt": "delegate on"}
    inner = {"description": "inner", "prompt": "look around"}
    fake_llm.reply(tool_calls=[FakeToolCall("task", outer, id="t1")])  # the parent
    fake_llm.reply(tool_calls=[FakeToolCall("task", inner, id="t2")])  # the child
    fake_llm.reply(tool_calls=[FakeToolCall("list_directory", {"path": "."}, id="g1")])
    fake_llm.reply("nothing there")  # the grandchild's answer
    fake_llm.reply("child done")
    fake_llm.reply("parent done")
    term = chat(flow="grandchild", env={"AGENTAO_SUBAGENT_DEPTH": "2"})
    term.wait_idle("session ")
    term.line("delegate it")
    lines = term.wait_turns(1).splitlines()

    def at(text: str) -> int:
        return next(i for i, line in enumerate(lines) if text in line)

    order = [
        at("↳ subagent outer"),
        at("↳ subagent inner"),
        at("│ ✓ List"),
        at("↳ inner end_turn"),
        at("↳ outer end_turn"),
    ]
    assert order == sorted(order), lines
    assert lines[order[0]].startswith("  ↳ subagent outer"), lines
    assert lines[order[1]].startswith("    ↳ subagent inner"), lines
    assert lines[order[2]].startswith("    │ ✓ List"), lines  # the grandchild's step
    assert lines[order[3]].startswith("    ↳ inner end_turn"), lines
    assert lines[order[4]].startswith("  ↳ outer end_turn"), lines
    term.line("/quit")
    assert term.exit_status() == 0
