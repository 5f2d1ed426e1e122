"""ACP updates -> OpenAI text and reasoning (design.md §5), as data; and an agent that is not ours."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import openai
import pytest

from agentao.client.state import SessionState
from agentao.gateway.config import AgentSpec
from agentao.gateway.mapping import (
    TurnMapper,
    chat_finish_reason,
    estimate_usage,
    response_status,
    usage_from_agent,
)
from agentao.protocol import schema
from agentao.protocol.decode import decode_lenient


def feed(
    mapper: TurnMapper, raw: dict[str, Any], state: SessionState | None = None
) -> tuple[str, str]:
    """One raw update as the client hands it over (decoded, tool calls merged by id)."""
    state = state if state is not None else mapper_state(mapper)
    value = decode_lenient(schema.SessionUpdate, raw)
    delta = mapper.feed(state.apply(raw["sessionUpdate"], value, raw))
    return delta.text, delta.reasoning


_STATES: dict[int, SessionState] = {}


def mapper_state(mapper: TurnMapper) -> SessionState:
    """The client's session state a mapper's updates go through (one per mapper)."""
    return _STATES.setdefault(id(mapper), SessionState("s", 10_000))


def text(kind: str, value: str) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": value}}


WRITE = {
    "sessionUpdate": "tool_call",
    "toolCallId": "t1",
    "title": "Write hello.txt",
    "kind": "edit",
    "status": "pending",
}
DONE = {
    "sessionUpdate": "tool_call_update",
    "toolCallId": "t1",
    "status": "completed",
    "content": [
        {"type": "diff", "path": "/w/hello.txt", "oldText": "a\nb\n", "newText": "a\nc\nd\n"}
    ],
}

# (updates in, (text, reasoning) expected for the last one)
ROWS = [
    ([text("agent_message_chunk", "Hi")], ("Hi", "")),
    ([text("agent_thought_chunk", "hmm")], ("", "hmm")),
    ([WRITE], ("", "\nRunning: Write hello.txt (edit)\n")),
    ([WRITE, {**DONE, "content": None}], ("", "Done: Write hello.txt\n")),
    ([WRITE, DONE], ("", "Done: Write hello.txt\n  edited /w/hello.txt (+2 -1)\n")),
    (
        [WRITE, {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress"}],
        ("", ""),
    ),
    (
        [
            WRITE,
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "t1",
                "status": "failed",
                "content": [
                    {"type": "content", "content": {"type": "text", "text": "denied\nmore"}}
                ],
            },
        ],
        ("", "Failed: Write hello.txt: denied\n"),
    ),
    (  # an update for a call never announced is announced when it arrives
        [
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "x",
                "title": "Run ls",
                "status": "completed",
            }
        ],
        ("", "\nRunning: Run ls (other)\nDone: Run ls\n"),
    ),
    (
        [
            {
                "sessionUpdate": "plan",
                "entries": [
                    {"content": "read", "priority": "high", "status": "completed"},
                    {"content": "edit", "priority": "high", "status": "in_progress"},
                    {"content": "test", "priority": "low", "status": "pending"},
                ],
            }
        ],
        ("", "\nPlan:\n  [x] read\n  [~] edit\n  [ ] test\n"),
    ),
    (
        [{"sessionUpdate": "notice", "severity": "warning", "title": "Retrying"}],
        ("", "\nNotice (warning): Retrying\n"),
    ),
    ([{"sessionUpdate": "current_mode_update", "currentModeId": "plan"}], ("", "")),
    ([{"sessionUpdate": "usage_update", "used": 10, "size": 100}], ("", "")),
]


@pytest.mark.parametrize(("updates", "expected"), ROWS)
def test_mapping_rows(updates: list[dict[str, Any]], expected: tuple[str, str]) -> None:
    mapper = TurnMapper()
    result = ("", "")
    for raw in updates:
        result = feed(mapper, raw)
    assert result == expected


def test_unknown_or_undecodable_updates_say_nothing() -> None:
    assert feed(TurnMapper(), {"sessionUpdate": "vendor_thing", "x": 1}) == ("", "")


def test_inline_mode_writes_reasoning_into_the_text_with_seed_prefixes() -> None:
    mapper = TurnMapper(inline=True)
    out = [
        feed(mapper, r)[0]
        for r in (
            text("agent_thought_chunk", "a"),
            text("agent_thought_chunk", "b"),
            text("agent_message_chunk", "x"),
            WRITE,
        )
    ]
    assert out == ["[Thinking] a", "b", "\n\nx", "\n[Tool: Write hello.txt] (edit)\n"]
    assert mapper.full_reasoning == ""


@pytest.mark.parametrize(
    ("stop", "chat", "responses"),
    [
        ("end_turn", "stop", ("completed", None)),
        ("max_tokens", "length", ("incomplete", "max_output_tokens")),
        ("max_turn_requests", "length", ("incomplete", "max_turn_requests")),
        ("refusal", "content_filter", ("completed", None)),
        ("cancelled", None, ("cancelled", None)),
    ],
)
def test_stop_reasons(stop: str, chat: str | None, responses: tuple[str, str | None]) -> None:
    assert chat_finish_reason(stop) == chat
    assert response_status(stop) == responses


def test_usage_real_when_reported_estimated_otherwise() -> None:
    real = usage_from_agent(
        {"inputTokens": 7, "outputTokens": 3, "totalTokens": 10, "cachedReadTokens": 2}
    )
    assert real is not None and real.chat()["prompt_tokens_details"]["cached_tokens"] == 2
    assert "x_estimated" not in real.responses()
    assert usage_from_agent(None) is None and usage_from_agent({"inputTokens": "7"}) is None
    mapper = TurnMapper()
    feed(mapper, text("agent_message_chunk", "12345678"))
    guess = estimate_usage(40, mapper)
    assert (guess.input_tokens, guess.output_tokens, guess.estimated) == (10, 2, True)
    assert guess.chat()["x_estimated"] is True


def test_any_acp_agent_passes_through_untouched(gateway_factory, tmp_path: Path) -> None:
    """A plain-JSON agent that is not ours: vendor fields and unknown kinds reach x_acp as
    sent, and its own token usage is reported (not an estimate)."""
    argv = (sys.executable, str(Path(__file__).with_name("raw_agent.py")))
    gw = gateway_factory(agents=(AgentSpec("raw", argv, cwd=str(tmp_path)),))
    client = gw.openai()
    reply = client.chat.completions.create(
        model="raw", messages=[{"role": "user", "content": "hi"}], extra_body={"x_acp": True}
    )
    assert reply.choices[0].message.content == "raw says hi (text)"
    assert reply.usage.prompt_tokens == 12 and reply.usage.completion_tokens == 3
    assert reply.usage.completion_tokens_details.reasoning_tokens == 1
    assert getattr(reply.usage, "x_estimated", None) is None
    assert reply.x_acp[0]["x_vendor"] == {"mood": "odd"}
    assert reply.x_acp[1] == {"sessionUpdate": "vendor_thing", "data": [1, 2, 3]}
    response = client.responses.create(model="raw", input="hi")
    assert response.usage.input_tokens == 12 and response.output_text == "raw says hi (text)"
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    seen = client.chat.completions.create(
        model="raw",
        messages=[{"role": "user", "content": [{"type": "text", "text": "see"}, image]}],
    )
    assert seen.choices[0].message.content == "raw says hi (text,image)"  # an ACP image block
    remote = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(
            model="raw", messages=[{"role": "user", "content": [remote]}]
        )
    assert info.value.body["param"] == "messages[0].content[0]"


def test_our_agents_usage_is_reported_not_estimated(gateway_factory) -> None:
    """agentao sends its token usage under `_meta` (the stable schema has no root field
    for it); the gateway reads it from there, in chat, responses and the task's end."""
    script = [{"text": "Counted.", "usage": {"input_tokens": 21, "output_tokens": 4}}] * 2
    client = gateway_factory(script=script).openai()
    reply = client.chat.completions.create(
        model="agentao", messages=[{"role": "user", "content": "count"}]
    )
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (21, 4)
    assert getattr(reply.usage, "x_estimated", None) is None
    response = client.responses.create(model="agentao", input="count")
    assert (response.usage.input_tokens, response.usage.output_tokens) == (21, 4)
