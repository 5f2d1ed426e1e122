"""The scripted provider: its file format, chunking, matching, errors and the demo script."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentao.agent.config import resolve_provider
from agentao.agent.providers import (
    LlmError,
    LlmFinished,
    LlmRequest,
    TextPiece,
    ThoughtPiece,
    ToolCallRequest,
    UserMessage,
    make_provider,
)
from agentao.agent.providers.scripted import EXHAUSTED, ScriptedProvider

DEMO = Path(__file__).parents[2] / "examples" / "scripts" / "demo.json"


def script(tmp_path: Path, data: object) -> ScriptedProvider:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    return ScriptedProvider.from_file(path)


async def reply(p: ScriptedProvider, user: str = "hi") -> list:
    return [e async for e in p.stream(LlmRequest("m", (UserMessage(user),)))]


async def test_thought_text_word_by_word_and_tool_calls(tmp_path: Path) -> None:
    p = script(
        tmp_path,
        {"responses": [{"thought": "plan", "text": "two words",
                        "tool_calls": [{"name": "echo", "arguments": {"a": 1}, "id": "c1"}]}]},
    )  # fmt: skip
    assert await reply(p) == [
        ThoughtPiece("plan"),
        TextPiece("two "),
        TextPiece("words"),
        ToolCallRequest("c1", "echo", {"a": 1}),
        LlmFinished("tool_calls"),
    ]


async def test_chunk_lists_repeats_and_exhaustion(tmp_path: Path) -> None:
    p = script(tmp_path, [{"text": ["a", {"repeat": "x", "count": 3}, "b "]}, {"text": "end"}])
    assert [e.text for e in await reply(p) if isinstance(e, TextPiece)] == [
        "a",
        "x",
        "x",
        "x",
        "b ",
    ]
    assert await reply(p) == [TextPiece("end"), LlmFinished("stop")]
    assert await reply(p) == [TextPiece(EXHAUSTED), LlmFinished("stop")]


async def test_big_repeat_streams_every_chunk(tmp_path: Path) -> None:
    p = script(tmp_path, [{"text": {"repeat": "tok ", "count": 20000}}])
    events = await reply(p)
    assert len(events) == 20001 and events[-1] == LlmFinished("stop")


async def test_match_picks_a_response_by_the_last_user_message(tmp_path: Path) -> None:
    p = script(tmp_path, [{"match": "READ", "text": "reading"}, {"text": "plain"}])
    assert (await reply(p, "hello"))[0] == TextPiece("plain")
    assert (await reply(p, "please read it"))[0] == TextPiece("reading")


async def test_errors_finish_and_usage(tmp_path: Path) -> None:
    p = script(
        tmp_path,
        [{"error": "transient", "message": "busy"}, {"error": "fatal"},
         {"text": "cut", "finish": "length", "usage": {"input_tokens": 3, "output_tokens": 4}}],
    )  # fmt: skip
    with pytest.raises(LlmError) as info:
        await reply(p)
    assert info.value.transient and str(info.value) == "busy"
    with pytest.raises(LlmError) as info:
        await reply(p)
    assert not info.value.transient
    finished = (await reply(p))[-1]
    assert finished.finish_reason == "length" and finished.usage.total_tokens == 7


@pytest.mark.parametrize(
    "data",
    [{"responses": [{"txt": "typo"}]}, [{"error": "sometimes"}], {"nope": 1}, "not json"],
)
def test_bad_scripts_say_what_is_wrong(tmp_path: Path, data: object) -> None:
    path = tmp_path / "bad.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    with pytest.raises(LlmError) as info:
        ScriptedProvider.from_file(path)
    assert info.value.reason == "bad_script" and "bad.json" in str(info.value)


async def test_demo_script_plays_plan_write_then_read() -> None:
    config = resolve_provider("scripted", {"LLM_PROVIDER": "SCRIPTED", "AGENTAO_SCRIPT": str(DEMO)})
    assert config.model_value == "scripted/demo"
    p = make_provider(config)
    calls = []
    for _ in range(6):
        events = [e async for e in p.stream(LlmRequest(config.model, (UserMessage("go"),)))]
        calls += [(e.name, sorted(e.arguments)) for e in events if isinstance(e, ToolCallRequest)]
    assert calls == [
        ("todo_write", ["todos"]),
        ("write_file", ["content", "file_path"]),
        ("todo_write", ["todos"]),
        ("read_file", ["file_path"]),
    ]
