"""compaction.py: what is kept verbatim, what is summarized, that old tool outputs shrink
first, the summary request and its prompt; and the turn loop compacting before the window
and after a refusal, with the result committed and rebuilt from the stored form."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentao.agent.compaction import (
    ACK,
    SUMMARY_HEADER,
    Compacted,
    CompactionJob,
    CompactionSettings,
    compact,
    compaction_prompt,
    render_transcript,
    shorten,
    shrink_outputs,
    summary_request,
)
from agentao.agent.context import ContextBudget, Window
from agentao.agent.events import (
    CompactionDelta,
    CompactionFinished,
    CompactionStarted,
    ContextUsage,
    PlanEntry,
    TurnEnded,
    Usage,
)
from agentao.agent.providers.base import LlmFinished, LlmRequest, TextPiece, ToolCallRequest
from agentao.agent.providers.errors import LlmError, status_error
from agentao.agent.providers.messages import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agentao.agent.session import AgentSession, TurnRecord
from agentao.agent.turn import compact_now, run_turn
from tests.agent.test_turn import Echo, make_deps, new_session

BIG = "0123456789" * 600  # a 6,000-character tool output


def turn(n: int, output: str = BIG) -> TurnRecord:
    call = ToolCall(f"c{n}", "read_file", {"file_path": f"f{n}.txt"})
    messages = (
        UserMessage(f"request {n}"),
        AssistantMessage("", (call,)),
        ToolResultMessage(f"c{n}", "read_file", f"output {n}: {output}"),
        AssistantMessage(f"answer {n}"),
    )
    return TurnRecord(f"request {n}", messages, (), "end_turn")


def job(turns: list[TurnRecord], window: int, **kw: Any) -> CompactionJob:
    values: dict[str, Any] = dict(
        model="m", turns=turns, prefix=(), keep_from=0, current=(UserMessage("now"),),
        plan=(), overhead=100, window=window, tokens_before=window, trigger="threshold",
    )  # fmt: skip
    values.update(kw)
    return CompactionJob(**values)


class Summarizer:
    """The model, writing a summary; records what it was asked."""

    def __init__(self, *pieces: str, fail: LlmError | None = None) -> None:
        self.pieces, self.fail, self.requests = pieces or ("the ", "summary"), fail, []

    async def __call__(self, request: LlmRequest) -> AsyncIterator[Any]:
        self.requests.append(request)
        if self.fail is not None:
            raise self.fail
        for piece in self.pieces:
            yield TextPiece(piece)
        yield LlmFinished("stop")


async def outcome(
    j: CompactionJob, stream: Summarizer, **settings: Any
) -> tuple[list, Compacted | None]:
    events, done = [], None
    async for item in compact(j, stream, CompactionSettings(**settings)):
        if isinstance(item, Compacted):
            done = item
        else:
            events.append(item)
    return events, done


def test_shorten_keeps_head_and_tail_and_says_so() -> None:
    text = "head " + "x" * 5000 + " tail"
    short = shorten(text, 300)
    assert short.startswith("head ") and short.endswith(" tail") and len(short) < 400
    assert "characters shortened by compaction" in short
    assert shorten("small", 300) == "small"


def test_old_tool_outputs_shrink_the_latest_can_be_spared() -> None:
    messages = [*turn(1).messages, *turn(2).messages]
    shrunk = shrink_outputs(messages, 500)
    assert [len(m.text) < 600 for m in shrunk if isinstance(m, ToolResultMessage)] == [True, True]
    assert shrunk[0] is messages[0]  # untouched messages are the same objects
    spared = shrink_outputs(messages, 500, keep_last=1)
    assert spared[6] is messages[6] and spared[2] is not messages[2]


async def test_tool_outputs_shrink_first_without_asking_the_model() -> None:
    turns = [turn(n) for n in range(1, 5)]
    stream = Summarizer()
    events, done = await outcome(job(turns, window=20_000), stream)
    assert stream.requests == []  # shortening the two old outputs was enough
    assert [type(e) for e in events] == [CompactionStarted, CompactionFinished]
    assert "older tool outputs shortened" in events[-1].detail and events[-1].summary == ""
    assert done is not None and done.record.keep_from == 2  # the last two turns verbatim
    old_outputs = [m.text for m in done.record.prefix if isinstance(m, ToolResultMessage)]
    assert len(old_outputs) == 2 and all("shortened" in t for t in old_outputs)
    assert done.current == (UserMessage("now"),)


async def test_then_the_model_summarizes_the_old_turns() -> None:
    turns = [turn(n, output="y" * 500) for n in range(1, 9)]
    plan = (PlanEntry("read everything", "in_progress"),)
    stream = Summarizer("## Task\n", "reading files")
    events, done = await outcome(job(turns, window=3_000, plan=plan), stream)
    assert [type(e) for e in events] == [
        CompactionStarted, CompactionDelta, CompactionDelta, CompactionFinished,
    ]  # fmt: skip
    assert events[-1].summary == "## Task\nreading files"
    assert done is not None and done.record.keep_from == 6
    summary, ack = done.record.prefix
    assert summary.text.startswith(SUMMARY_HEADER) and "reading files" in summary.text
    assert "[in_progress] read everything" in summary.text  # the plan, verbatim
    assert ack == AssistantMessage(ACK)
    transcript = stream.requests[0].messages[1].text
    assert "request 1" in transcript and "request 6" in transcript
    assert "USER: request 7" not in transcript and "USER: now" not in transcript  # kept verbatim


async def test_a_failed_summary_falls_back_to_a_digest() -> None:
    turns = [turn(n, output="y" * 500) for n in range(1, 9)]
    stream = Summarizer(fail=status_error(500, "down"))
    events, done = await outcome(job(turns, window=3_000), stream)
    assert done is not None and events[-1].status == "completed"
    text = done.record.prefix[0].text
    assert "No summary could be written" in text and "- request 1" in text


async def test_nothing_to_compact_is_no_compaction() -> None:
    events, done = await outcome(job([], window=100_000), Summarizer())
    assert events == [] and done is None


async def test_past_the_threshold_even_recent_outputs_shrink() -> None:
    turns = [turn(1), turn(2)]
    _, done = await outcome(job(turns, window=4_000), Summarizer())
    assert done is not None and done.record.keep_from == 2  # everything in the prefix
    assert all(
        "shortened" in m.text for m in done.record.prefix if isinstance(m, ToolResultMessage)
    )


def test_the_summary_request_and_its_prompt() -> None:
    settings = CompactionSettings()
    prompt = compaction_prompt(settings)
    for kept in ("## Task", "## Files", "## Next", "own words", "never invent"):
        assert kept in prompt
    assert "verbatim" in prompt and "400 words" in prompt and "{summary_words}" not in prompt
    old = [UserMessage(f"{SUMMARY_HEADER}\n\nbefore"), AssistantMessage(ACK), *turn(1).messages]
    request = summary_request("m", old, 100_000, settings)
    assert request.tools == () and isinstance(request.messages[0], SystemMessage)
    transcript = request.messages[1].text
    assert transcript.index("EARLIER SUMMARY:\nbefore") < transcript.index("USER: request 1")
    assert 'AGENT CALLED read_file({"file_path": "f1.txt"})' in transcript
    assert "RESULT of read_file: output 1" in transcript and "shortened" in transcript
    assert ACK not in transcript


def test_the_transcript_fits_its_budget_keeping_the_earlier_summary() -> None:
    old = [UserMessage(f"{SUMMARY_HEADER}\n\nkeep me")]
    old += [m for n in range(1, 40) for m in turn(n).messages]
    text = render_transcript(old, 3_000, 200)
    assert len(text) < 3_500 and text.startswith("EARLIER SUMMARY:\nkeep me")
    assert "earlier entries left out" in text and "request 39" in text and "request 1\n" not in text


# --- in the turn loop -------------------------------------------------------------------


class WindowedModel:
    """A model with a hard window (counted as the JSON of the messages / 4): refuses
    longer requests like OpenAI; reads a file per prompt; summarizes when asked."""

    def __init__(self, window: int) -> None:
        self.window, self.requests, self.refused = window, [], 0

    def tokens(self, request: LlmRequest) -> int:
        return len(json.dumps([repr(m) for m in request.messages])) // 4

    async def stream(self, request: LlmRequest) -> AsyncIterator[Any]:
        self.requests.append(request)
        size = self.tokens(request)
        if size > self.window:
            self.refused += 1
            raise status_error(400, f"This model's maximum context length is {self.window} tokens")
        last = request.messages[-1]
        if not request.tools:
            yield TextPiece("summary of the reading")
        elif isinstance(last, UserMessage):
            yield ToolCallRequest(f"c{len(self.requests)}", "echo", {"text": "z" * 6000})
        else:
            yield TextPiece("done")
        finish = "tool_calls" if request.tools and isinstance(last, UserMessage) else "stop"
        yield LlmFinished(finish, Usage(size, 5, size + 5))

    async def aclose(self) -> None:
        pass


def windowed_deps(model: WindowedModel, window: int) -> Any:
    deps = make_deps(provider=model, tools=(Echo(),))
    return replace(deps, context=ContextBudget(Window(window, "default")))


async def test_a_refusal_compacts_and_retries_once_and_the_result_is_committed(
    tmp_path: Path,
) -> None:
    model = WindowedModel(window=6_000)
    deps = windowed_deps(model, window=100_000)  # the agent does not know the window yet
    session = new_session(tmp_path)
    ends = []
    for n in range(6):
        events = [e async for e in run_turn(session, f"read {n}", deps)]
        ends.append(events[-1])
    assert all(isinstance(e, TurnEnded) and e.stop_reason == "end_turn" for e in ends)
    assert model.refused == 1 and deps.context.window == Window(6_000, "learned")
    assert any(t.compaction is not None for t in session.turns)
    # The stored form rebuilds the compacted context, not the whole history.
    loaded = AgentSession.from_dict(json.loads(json.dumps(session.to_dict())))
    assert loaded.messages == session.messages
    assert len(loaded.messages) < sum(len(t.messages) for t in loaded.turns)


async def test_usage_follows_each_reply(tmp_path: Path) -> None:
    model = WindowedModel(window=100_000)
    deps = windowed_deps(model, window=100_000)
    events = [e async for e in run_turn(new_session(tmp_path), "read", deps)]
    usage = [e for e in events if isinstance(e, ContextUsage)]
    assert len(usage) == 2 and all(0 < u.used <= u.size == 100_000 for u in usage)
    assert not usage[-1].estimated


async def test_compact_now_is_a_turn_the_model_never_sees(tmp_path: Path) -> None:
    model = WindowedModel(window=100_000)
    deps = windowed_deps(model, window=100_000)
    session = new_session(tmp_path)
    for n in range(4):
        [e async for e in run_turn(session, f"read {n}", deps)]
    events = [e async for e in compact_now(session, deps, "/compact")]
    assert isinstance(events[0], CompactionStarted) and events[-1] == TurnEnded("end_turn")
    record = session.turns[-1]
    assert record.prompt == "/compact" and record.messages == () and record.compaction
    assert session.messages[0].text.startswith(SUMMARY_HEADER)
    assert [type(e).__name__ for e in record.events] == ["CompactionFinished", "TurnEnded"]
