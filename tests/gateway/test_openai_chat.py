"""`/v1/chat/completions` through the real `openai` SDK, against our scripted agent."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from websockets.sync.client import connect

from tests.fakes.fake_llm import FakeLLM
from tests.gateway.conftest import LiveGateway, llm_spec


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, str]:
    return {"role": "assistant", "content": text}


def wait_for_end(gw: LiveGateway, task_id: str) -> dict[str, Any]:
    """The task's terminal frame: its stream sends every stored frame, then live ones, and
    closes after the end."""
    with connect(gw.ws_url(f"/v1/tasks/{task_id}/stream")) as ws:
        frames = [json.loads(m) for m in ws]
    assert frames[-1]["type"] in ("task-ended", "task-error"), frames[-1]
    return frames[-1]


def test_not_streaming_maps_text_reasoning_finish_and_usage(shared_gateway: LiveGateway) -> None:
    raw = shared_gateway.openai().chat.completions.with_raw_response.create(
        model="agentao", messages=[user("hello")]
    )
    reply = raw.parse()
    choice = reply.choices[0]
    assert choice.message.content == "Answer one."
    assert choice.message.reasoning_content == "Thinking it over."
    assert choice.finish_reason == "stop"
    assert choice.message.tool_calls is None
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens
    assert reply.usage.x_estimated is True  # the scripted agent reports no usage
    assert raw.headers["x-session-id"].startswith("conv_")


def test_streaming_chunks_then_usage_then_done(shared_gateway: LiveGateway) -> None:
    stream = shared_gateway.openai().chat.completions.create(
        model="agentao",
        messages=[user("hello")],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    reasoning = "".join(
        getattr(c.choices[0].delta, "reasoning_content", None) or "" for c in chunks if c.choices
    )
    assert text == "Answer one."
    assert reasoning == "Thinking it over."
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop" and finishes.count("stop") == 1
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens > 0


def test_transcript_prefix_continues_the_same_session(shared_gateway: LiveGateway) -> None:
    client = shared_gateway.openai()
    first = client.chat.completions.create(model="agentao", messages=[user("my first")])
    assert first.choices[0].message.content == "Answer one."
    history = [user("my first"), assistant("Answer one."), user("and then?")]
    second = client.chat.completions.create(model="agentao", messages=history)
    assert second.choices[0].message.content == "Answer two."  # the same ACP session
    history += [assistant("Answer two.\n"), user("more")]  # echoed back with a newline
    third = client.chat.completions.create(model="agentao", messages=history)
    assert third.choices[0].message.content == "Answer three."
    fresh = client.chat.completions.create(model="agentao", messages=[user("and then?")])
    assert fresh.choices[0].message.content == "Answer one."  # a new conversation


def test_explicit_session_key_sends_only_new_messages(
    gateway_factory: Callable[..., LiveGateway], fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """With a key, the agent is given only what is new: whether the caller resends the whole
    transcript or only its new message, the LLM behind the agent sees each user message once
    (the agent's own memory, then the new one), never the transcript pasted into a prompt."""
    gw = gateway_factory(agents=(llm_spec(tmp_path, fake_llm.env()),))
    client, key = gw.openai(), "key-" + uuid.uuid4().hex
    for answer in ("Answer one.", "Answer two.", "Answer three."):
        fake_llm.reply(answer)
    first = client.chat.completions.create(
        model="agentao", messages=[user("question 0")], extra_headers={"X-Session-Id": key}
    )
    resent = [user("question 0"), assistant(first.choices[0].message.content), user("question 1")]
    second = client.chat.completions.create(
        model="agentao", messages=resent, extra_headers={"X-Session-Id": key}
    )
    third = client.chat.completions.create(  # the key in the body, only the new message
        model="agentao", messages=[user("question 2")], extra_body={"x_session_id": key}
    )
    answers = [r.choices[0].message.content for r in (first, second, third)]
    assert answers == ["Answer one.", "Answer two.", "Answer three."]
    said = [("user", "question 0"), ("assistant", "Answer one."), ("user", "question 1")]
    said += [("assistant", "Answer two."), ("user", "question 2")]
    assert [conversation(r.body) for r in fake_llm.requests] == [said[:1], said[:3], said]


def conversation(llm_request: dict[str, Any]) -> list[tuple[str, Any]]:
    """(role, content) of each message the agent sent its LLM, but the system prompt."""
    return [(m["role"], m["content"]) for m in llm_request["messages"] if m["role"] != "system"]


@pytest.mark.parametrize(
    ("params", "param"),
    [
        ({"n": 2}, "n"),
        ({"functions": [{"name": "f", "parameters": {}}]}, "functions"),
        ({"tools": [{"type": "custom", "custom": {"name": "f"}}]}, "tools[0].type"),
        ({"tool_choice": "required"}, "tool_choice"),
        ({"stop": ["\n"]}, "stop"),
        ({"logprobs": True}, "logprobs"),
        ({"response_format": {"type": "json_object"}}, "response_format"),
        ({"messages": [{"role": "function", "content": "x", "name": "f"}]}, "messages[0].role"),
        (
            {"messages": [{"role": "user", "content": [{"type": "input_audio"}]}]},
            "messages[0].content[0].type",
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "see"},
                            {
                                "type": "image_url",
                                "image_url": {"url": "data:image/png;base64,AA=="},
                            },
                        ],
                    }
                ]
            },
            "messages[0].content[1]",
        ),
    ],
)
def test_unsupported_parameters_are_a_400_naming_them(
    shared_gateway: LiveGateway, params: dict[str, Any], param: str
) -> None:
    args: dict[str, Any] = {"model": "agentao", "messages": [user("hi")], **params}
    with pytest.raises(openai.BadRequestError) as info:
        shared_gateway.openai().chat.completions.create(**args)
    error = info.value.body
    assert error["param"] == param
    assert error["code"] == "unsupported_parameter"
    assert param.split("[")[0].split(".")[0] in error["message"]


def test_unknown_model_is_404_and_sampling_knobs_are_accepted(shared_gateway: LiveGateway) -> None:
    client = shared_gateway.openai()
    with pytest.raises(openai.NotFoundError) as info:
        client.chat.completions.create(model="nope", messages=[user("hi")])
    assert info.value.body["param"] == "model"
    reply = client.chat.completions.create(
        model="agentao", messages=[user("hi")], temperature=0.2, top_p=0.5, max_tokens=10, n=1
    )
    assert reply.choices[0].message.content == "Answer one."


def test_agent_tools_become_reasoning_never_tool_calls(shared_gateway: LiveGateway) -> None:
    stream = shared_gateway.openai().chat.completions.create(
        model="agentao",
        messages=[user("please write the file")],
        stream=True,
        extra_body={"x_acp": True, "x_permission_policy": "all"},
    )
    chunks = list(stream)
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert all(d.tool_calls is None for d in deltas)
    reasoning = "".join(getattr(d, "reasoning_content", None) or "" for d in deltas)
    assert "Running: " in reasoning and "Done: " in reasoning
    assert "hello.txt (+1 -0)" in reasoning
    assert "".join(d.content or "" for d in deltas) == "Wrote hello.txt."
    raw = [d.x_acp for d in deltas if getattr(d, "x_acp", None)]
    kinds = [u["sessionUpdate"] for u in raw]
    assert "tool_call" in kinds and "tool_call_update" in kinds
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"


def test_reasoning_inline_uses_the_seed_prefixes(shared_gateway: LiveGateway) -> None:
    reply = shared_gateway.openai().chat.completions.create(
        model="agentao", messages=[user("hi")], extra_body={"x_reasoning": "inline"}
    )
    message = reply.choices[0].message
    assert message.content == "[Thinking] Thinking it over.\n\nAnswer one."
    assert getattr(message, "reasoning_content", None) is None


def test_busy_session_is_409_with_retry_after(shared_gateway: LiveGateway) -> None:
    client = shared_gateway.openai()
    key = {"X-Session-Id": "busy-" + uuid.uuid4().hex}
    stream = client.chat.completions.create(
        model="agentao", messages=[user("slow please")], stream=True, extra_headers=key
    )
    next(iter(stream))
    with pytest.raises(openai.ConflictError) as info:
        client.chat.completions.create(model="agentao", messages=[user("hi")], extra_headers=key)
    assert info.value.response.headers["retry-after"] == "1"
    assert info.value.body["code"] == "session_busy"
    stream.close()


def test_disconnect_cancels_the_turn_and_nothing_leaks(shared_gateway: LiveGateway) -> None:
    client = shared_gateway.openai()
    key = {"X-Session-Id": "gone-" + uuid.uuid4().hex}
    raw = client.chat.completions.with_raw_response.create(
        model="agentao", messages=[user("slow please")], stream=True, extra_headers=key
    )
    task_id = raw.headers["x-task-id"]
    stream = raw.parse()
    seen = ""
    for chunk in stream:
        seen += chunk.choices[0].delta.content or ""
        if seen.count("tick") >= 3:
            break
    stream.close()  # the HTTP client goes away mid-turn
    end = wait_for_end(shared_gateway, task_id)
    # The agent answered `cancelled`: it got session/cancel. (How soon: bench/gateway.py.)
    assert end["stopReason"] == "cancelled"
    after = client.chat.completions.create(
        model="agentao", messages=[user("what now?")], extra_headers=key
    )
    assert after.choices[0].message.content == "Answer one."  # nothing of the slow turn


def test_non_streaming_disconnect_cancels_too(shared_gateway: LiveGateway) -> None:
    with shared_gateway.http() as http, pytest.raises(httpx.ReadTimeout):
        http.post(
            "/v1/chat/completions",
            json={"model": "agentao", "messages": [user("slow please")]},
            headers={"X-Session-Id": "nonstream-" + uuid.uuid4().hex},
            timeout=0.5,
        )
    with shared_gateway.http() as http:
        convs = http.get("/v1/conversations").json()["data"]
        conv = next(c for c in convs if c["title"] == "slow please")
        tasks = http.get(f"/v1/conversations/{conv['id']}/tasks").json()["data"]
    assert wait_for_end(shared_gateway, tasks[-1]["id"])["stopReason"] == "cancelled"


def test_written_file_lands_in_the_agent_workspace(shared_gateway: LiveGateway) -> None:
    work = Path(shared_gateway.config.agents[0].cwd)
    shared_gateway.openai().chat.completions.create(
        model="agentao",
        messages=[user("write it")],
        extra_headers={"X-Permission-Policy": "all"},
    )
    assert (work / "hello.txt").read_text() == "hi\n"


def test_models_lists_agents_and_their_own_models(shared_gateway: LiveGateway) -> None:
    client = shared_gateway.openai()
    client.chat.completions.create(model="agentao", messages=[user("hi")])  # a first session
    ids = [m.id for m in client.models.list()]
    assert ids == ["agentao", "agentao/scripted/agentao-script"]
    assert client.models.retrieve("agentao/scripted/agentao-script").owned_by == "agentao"
    reply = client.chat.completions.create(
        model="agentao/scripted/agentao-script", messages=[user("hi")]
    )
    assert reply.model == "agentao/scripted/agentao-script"
    assert reply.choices[0].message.content == "Answer one."


def test_a_body_above_the_limit_is_413(shared_gateway: LiveGateway) -> None:
    huge = "x" * (16 * 1024 * 1024 + 1)
    with pytest.raises(openai.APIStatusError) as info:
        shared_gateway.openai().chat.completions.create(model="agentao", messages=[user(huge)])
    assert info.value.status_code == 413
