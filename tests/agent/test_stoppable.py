"""One tool call stopped alone, the turn going on (agent/stoppable.py, tool_call.py): a stop
taken the moment the client is told the call can stop, one while the tool runs, and the
refusals (unknown, not stoppable, final)."""

from __future__ import annotations

from contextlib import aclosing
from pathlib import Path

from agentao.agent.events import TextOutput, ToolCallFinished, ToolCallProgress, TurnEnded
from agentao.agent.providers import ToolResultMessage
from agentao.agent.stoppable import StopRefused
from agentao.agent.tool_call import STOPPED
from agentao.agent.turn import run_turn
from tests.agent.test_turn import Blocker, Echo, call, make_deps, new_session

CALL_ID = "c_block_0"


class StoppableBlocker(Blocker):
    cancellable = True


def _turn(tools: tuple) -> tuple:
    return make_deps({"tool_calls": [call("block")]}, {"text": "went on"}, tools=tools)


async def test_a_stop_the_moment_the_offer_is_seen_is_taken_and_the_turn_goes_on(
    tmp_path: Path,
) -> None:
    session, blocker = new_session(tmp_path), StoppableBlocker()
    deps = _turn((blocker,))
    seen, answers = [], []
    async with aclosing(run_turn(session, "go", deps)) as events:
        async for event in events:
            seen.append(event)
            if isinstance(event, ToolCallProgress) and event.cancellable:
                # the client heard "can stop" and stops at once: before the task is registered
                answers.append(deps.stoppable.stop(CALL_ID))
                if answers[-1] is not None:
                    break  # refused: the tool would block forever
    assert answers == [None]
    assert ToolCallFinished(CALL_ID, "cancelled", (TextOutput("Cancelled"),)) in seen
    assert seen[-1] == TurnEnded("end_turn")
    assert ToolResultMessage(CALL_ID, "block", STOPPED, True) in session.messages
    assert deps.provider.requests[-1].messages[-1] == ToolResultMessage(
        CALL_ID, "block", STOPPED, True
    )  # the model is told, and answers after


async def test_a_stop_while_the_tool_runs_cancels_only_the_tool(tmp_path: Path) -> None:
    session, blocker = new_session(tmp_path), StoppableBlocker()
    deps = _turn((blocker,))
    seen = []
    async for event in run_turn(session, "go", deps):
        seen.append(event)
        if getattr(event, "content", None) == (TextOutput("waiting"),):  # it runs
            assert deps.stoppable.stop(CALL_ID) is None
    assert blocker.cancelled
    assert [e.status for e in seen if isinstance(e, ToolCallFinished)] == ["cancelled"]
    assert seen[-1] == TurnEnded("end_turn")
    assert deps.stoppable.stop(CALL_ID) is StopRefused.FINAL
    assert deps.stoppable.stop("nope") is StopRefused.UNKNOWN


async def test_a_tool_that_cannot_stop_is_never_offered_and_a_stop_is_refused(
    tmp_path: Path,
) -> None:
    session = new_session(tmp_path)
    deps = make_deps({"tool_calls": [call("echo", text="hi")]}, {"text": "done"}, tools=(Echo(),))
    answers = []
    async for event in run_turn(session, "go", deps):
        if isinstance(event, ToolCallProgress):
            assert not event.cancellable
            answers.append(deps.stoppable.stop("c_echo_1"))
    assert set(answers) == {StopRefused.NOT_CANCELLABLE}
