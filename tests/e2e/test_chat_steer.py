"""Typing while the agent works, in a real pty (as tests/e2e/test_chat.py): a line sent as
steering to an agent that takes it (ours, on the fake LLM held by the test), or queued and
run as a prompt after the turn for one that does not (a scripted fake agent); Ctrl-C drops
the queued lines with the turn (cli/chat/typeahead.py, cli/chat/app.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.e2e.terminal import TURN_END, Terminal
from tests.fakes.fake_llm import FakeLLM

pytestmark = pytest.mark.timeout(90)

FAKE_AGENT = Path(__file__).resolve().parent.parent / "fakes" / "fake_agents" / "scenario.py"


@pytest.fixture
def terminals(tmp_path: Path):
    started: list[Terminal] = []

    def start(ws: Path, env: dict[str, str], *argv: str) -> Terminal:
        term = Terminal(list(argv), ws, {"AGENTAO_HOME": str(tmp_path / "home"), **env}, None)
        started.append(term)
        return term

    yield start
    for n, term in enumerate(started):
        term.save(tmp_path / f"screen-steer-{n}.txt")
        term.close()


def test_a_line_typed_while_our_agent_works_steers_the_turn(
    terminals, fake_llm: FakeLLM, ws: Path
) -> None:
    gate = fake_llm.hold("Working on it.")
    fake_llm.reply("Bye then.")
    term = terminals(ws, fake_llm.env())
    term.wait_idle("session ")
    term.line("start")
    fake_llm.wait_requests(1)
    term.type("also say b")
    term.wait_for("> also say b", "the typed line under the work")
    term.line("ye")
    term.wait_for("steering: also say bye")
    gate.set()
    screen = term.wait_turns(1)
    assert "Bye then." in screen
    assert len(fake_llm.requests) == 2  # one turn: the steering went into it
    last = fake_llm.requests[1].body["messages"][-1]
    assert last == {"role": "user", "content": "also say bye"}
    term.line("/quit")
    assert term.exit_status() == 0


def test_a_line_typed_for_an_agent_without_steering_runs_after_the_turn(
    terminals, ws: Path, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    term = terminals(ws, {}, "--agent", f"{sys.executable} {FAKE_AGENT}")
    term.wait_idle("session ")
    term.line(f"gate {release}")
    term.wait_for("working")
    term.line("echo queued words")
    term.wait_for("queued: echo queued words")
    release.touch()
    screen = term.wait_turns(2)
    after = screen.split("released")[-1]
    assert "> echo queued words" in after and "queued words" in after.split("> echo")[-1]
    term.line("/quit")
    assert term.exit_status() == 0


def test_ctrl_c_drops_the_queued_lines_with_the_turn(terminals, ws: Path, tmp_path: Path) -> None:
    term = terminals(ws, {}, "--agent", f"{sys.executable} {FAKE_AGENT}")
    term.wait_idle("session ")
    term.line("hang")
    term.wait_for("working")
    term.line("echo never")
    term.wait_for("queued: echo never")
    term.type("\x03")
    screen = term.wait_turns(1)
    assert "dropped 1 queued line(s)" in screen and "— cancelled" in screen
    term.line("/quit")
    assert term.exit_status() == 0
    assert "> echo never" not in term.screen()


def test_a_line_half_typed_when_the_turn_ends_starts_the_next_prompt(
    terminals, ws: Path, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    term = terminals(ws, {}, "--agent", f"{sys.executable} {FAKE_AGENT}")
    term.wait_idle("session ")
    term.line(f"gate {release}")
    term.wait_for("working")
    term.type("echo half")
    term.wait_for("> echo half", "the typed line under the work")
    release.touch()
    term.wait_for(
        lambda s: len(TURN_END.findall(s)) == 1 and s.rstrip().endswith("> echo half"),
        "the turn's end, then the prompt holding the half-typed line",
    )
    term.line(" done")
    screen = term.wait_turns(2)
    assert "half done" in screen.split("released")[-1]
    term.line("/quit")
    assert term.exit_status() == 0
