"""A turn staged: its messages, events, plan and compaction, kept until one commit.

The session does not change during a turn. `StagedTurn` gathers what the turn adds --
the prompt and every reply and tool result (`messages`), every event shown (`events`),
the plan, a compaction's new context -- and hands it to `session.commit_turn` once,
however the turn ends: normally (`end`), or cut short by an exception (`cut_short`,
which asks `cancellation.ending` how). A reply still streaming when the turn is cut
short is kept as said when cancelled, and dropped when it failed (never kept as
assistant text). Every tool call the model made gets a result before the commit, or
the next request would be invalid.
"""

from __future__ import annotations

from dataclasses import replace

from agentao.agent.cancellation import CANCELLED_TEXT, ending
from agentao.agent.compaction import Compacted
from agentao.agent.events import (
    ChildUpdate,
    CompactionDelta,
    CompactionStarted,
    ContextUsage,
    Notice,
    PlanChanged,
    PlanEntry,
    StopReason,
    TerminalChunk,
    TerminalExited,
    TerminalStarted,
    TextDelta,
    ThoughtDelta,
    ToolCallProgress,
    TurnEnded,
    TurnEvent,
    UserText,
)
from agentao.agent.providers.base import LlmRequest, ToolCallRequest
from agentao.agent.providers.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
)
from agentao.agent.replies import Reply
from agentao.agent.session import AgentSession, Compaction, TurnRecord
from agentao.agent.turn_deps import TurnDeps
from agentao.agent.usage import TurnUsage

__all__ = ["StagedTurn", "replay_events"]

_FINISH_STOPS: dict[str, StopReason] = {"length": "max_tokens", "content_filter": "refusal"}


class StagedTurn:
    """A turn's messages and events, staged until `commit`."""

    def __init__(
        self, session: AgentSession, prompt: str, deps: TurnDeps, message: UserMessage | None
    ) -> None:
        self.session = session
        self.prompt = prompt  # as the history shows it
        self.specs = tuple(t.schema() for t in deps.tools)
        self.system = (SystemMessage(deps.system_prompt),) if deps.system_prompt else ()
        self.messages: list[Message] = [message] if message is not None else []
        self.history: tuple[Message, ...] | None = None  # the context after a compaction
        self.compaction: Compaction | None = None
        self.sent: LlmRequest | None = None  # the last request the model answered
        self.events: list[TurnEvent] = []
        self.reply: Reply | None = None  # streaming, not yet in messages
        self.reply_start = 0  # len(events) when it began
        self.answered: set[str] = set()
        self.plan: tuple[PlanEntry, ...] | None = None
        self.use = TurnUsage(deps.context, session.cost)
        self.cancelled_by_user = False  # a permission question was answered "cancelled"
        self.committed = False

    def request(self) -> LlmRequest:
        """The next request: system prompt, the context, and this turn so far."""
        history = self.history if self.history is not None else self.session.messages
        return LlmRequest(self.session.model, (*self.system, *history, *self.messages), self.specs)

    def emit(self, event: TurnEvent) -> TurnEvent:
        if not isinstance(event, _TERMINAL):  # a terminal's chunks are live only: never kept
            self.events.append(event)
        return event

    # --- the reply ---

    def start_reply(self) -> Reply:
        # A later reply's text is a new paragraph for the reader: without it, two replies
        # joined by a tool call run together ("for you.Writing") in every client that
        # concatenates chunks. History keeps each reply's own text.
        shown = any(isinstance(e, TextDelta) for e in self.events)
        self.reply, self.reply_start = Reply(lead="\n\n" if shown else ""), len(self.events)
        return self.reply

    def drop_reply(self) -> None:
        """The reply was refused: gone from history and from the record."""
        self.reply = None
        del self.events[self.reply_start :]

    def finish_reply(self) -> StopReason | None:
        """Stage the reply; the turn's stop reason if it ends here."""
        reply, self.reply = self.reply, None
        assert reply is not None and reply.finish is not None
        self.use.add_reply(reply.finish.usage)
        stop = _FINISH_STOPS.get(reply.finish.finish_reason)  # cut short: its calls are not run
        self._stage(reply.message(with_calls=stop is None))
        return stop or (None if reply.calls else "end_turn")

    def _stage(self, message: AssistantMessage) -> None:
        if message.text or message.tool_calls:  # an empty reply is no message at all
            self.messages.append(message)

    def steer(self, text: str) -> UserText:
        """A person's words added mid-turn: a user message after what the model has seen,
        and the event that shows (and replays) them where they landed."""
        self.messages.append(UserMessage(text))
        return UserText(text)

    # --- tool results, plan, compaction ---

    def answer(
        self, call: ToolCallRequest, text: str, is_error: bool, cancels_turn: bool = False
    ) -> None:
        self.messages.append(ToolResultMessage(call.id, call.name, text, is_error))
        self.answered.add(call.id)
        self.cancelled_by_user = self.cancelled_by_user or cancels_turn

    def set_plan(self, plan: tuple[PlanEntry, ...]) -> PlanChanged:
        self.plan = plan
        return PlanChanged(plan)

    def context_base(self) -> tuple[tuple[Message, ...], int]:
        """The context's prefix and the first turn kept after it, as compacted so far."""
        if self.compaction is not None:
            return self.compaction.prefix, self.compaction.keep_from
        return self.session.context_base()

    def adopt(self, outcome: Compacted) -> None:
        """A compaction's outcome: the context from now on, and this turn's messages."""
        record = outcome.record
        self.compaction = record
        turns = self.session.turns[record.keep_from :]
        self.history = (*record.prefix, *(m for t in turns for m in t.messages))
        self.messages = list(outcome.current)

    # --- the end ---

    def end(self, stop: StopReason) -> TurnEnded:
        ended = TurnEnded(stop, self.use.tokens)
        self.emit(ended)
        self.commit(stop)
        return ended

    def cut_short(self, exc: BaseException) -> None:
        """`exc` escaped the turn: commit it as `cancellation.ending` says."""
        if self.committed:
            return
        how = ending(exc, self.events)
        self.events += how.closing
        self.commit(how.stop, how.error)

    def commit(self, stop: StopReason | None, error: str | None = None) -> None:
        if self.committed:
            return
        self.committed = True
        if self.reply is not None:  # cut off mid-reply
            if error is None:  # cancelled: keep what was said, calls never arrived
                self._stage(self.reply.message(with_calls=False))
            else:  # failed: drop the reply, from history and from the record
                del self.events[self.reply_start :]
        self._answer_open_calls()
        record = TurnRecord(
            self.prompt,
            tuple(self.messages),
            replay_events(self.events),
            stop,
            error,
            self.compaction,
            self.use.cost,
        )
        self.session.commit_turn(record, self.plan)

    def _answer_open_calls(self) -> None:
        """Every tool call the model made gets a result, or the next request is invalid.
        Only the last reply can have open calls: each round answers all of its own."""
        last = next((m for m in reversed(self.messages) if isinstance(m, AssistantMessage)), None)
        for call in last.tool_calls if last is not None else ():
            if call.id not in self.answered:
                self.messages.append(ToolResultMessage(call.id, call.name, CANCELLED_TEXT, True))


_TERMINAL = (TerminalStarted, TerminalChunk, TerminalExited)
_LIVE_ONLY = (
    ToolCallProgress,
    Notice,
    ContextUsage,
    CompactionStarted,
    CompactionDelta,
    *_TERMINAL,
)


def replay_events(events: list[TurnEvent]) -> tuple[TurnEvent, ...]:
    """Events as replay needs them: adjacent deltas merged (a child's too); live progress,
    notices, usage and a compaction's progress gone (its CompactionFinished holds the
    summary), a child's as well."""
    out: list[TurnEvent] = []
    for event in events:
        inner = event.event if isinstance(event, ChildUpdate) else event
        if isinstance(inner, _LIVE_ONLY):
            continue
        prev = out[-1] if out else None
        if isinstance(event, ChildUpdate) and _same_child_text(prev, event):
            text = prev.event.text + event.event.text  # type: ignore[union-attr]
            out[-1] = replace(event, event=replace(event.event, text=text))  # type: ignore
        elif isinstance(event, TextDelta | ThoughtDelta) and type(prev) is type(event):
            out[-1] = replace(event, text=prev.text + event.text)  # type: ignore[union-attr]
        else:
            out.append(event)
    return tuple(out)


def _same_child_text(prev: TurnEvent | None, event: ChildUpdate) -> bool:
    """`event` is a child's text (or thought) delta following one of the same child's."""
    return (
        isinstance(prev, ChildUpdate)
        and prev.child_id == event.child_id
        and isinstance(event.event, TextDelta | ThoughtDelta)
        and type(prev.event) is type(event.event)
    )
