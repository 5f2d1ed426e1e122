"""Our agent takes a client's `systemPrompt` (ACP unstable: `append` and `override`), over
real pipes with the fake LLM: it reaches the model's system message, is kept with the
session (a `session/load` without one keeps it, a new process included), and a bad one is
-32602 before any session exists (server/client_prompt.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentao.server.client_prompt import APPEND_HEADING
from tests.e2e.agent_process import agent_env, running
from tests.fakes.fake_llm import FakeLLM

pytestmark = pytest.mark.timeout(60)


def system_of(body: dict) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "system")


def prompt_of(text: str, mode: str = "append") -> dict:
    return {"mode": mode, "content": [{"type": "text", "text": text}]}


async def test_append_reaches_the_model_and_a_load_keeps_it(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    env = agent_env(tmp_path / "home", **fake_llm.env())
    params = {"cwd": str(tmp_path), "mcpServers": [], "systemPrompt": prompt_of("Be a pirate.")}
    async with running(env) as agent:
        init = agent.received[0]["result"]
        assert init["agentCapabilities"]["sessionCapabilities"]["systemPrompt"] == {
            "mode": {"override": {}}
        }
        sid = (await agent.call("session/new", params))["sessionId"]
        assert (await agent.prompt(sid, "hello"))["result"]["stopReason"] == "end_turn"
    system = system_of(fake_llm.requests[0].body)
    assert f"{APPEND_HEADING}\nBe a pirate." in system
    assert system.index(APPEND_HEADING) > 100  # after our own instructions, not instead
    async with running(env) as agent:  # a new process: the stored session keeps it
        await agent.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        assert (await agent.prompt(sid, "again"))["result"]["stopReason"] == "end_turn"
    assert "Be a pirate." in system_of(fake_llm.requests[-1].body)


async def test_override_replaces_our_instructions(tmp_path: Path, fake_llm: FakeLLM) -> None:
    env = agent_env(tmp_path / "home", **fake_llm.env())
    params = {
        "cwd": str(tmp_path),
        "mcpServers": [],
        "systemPrompt": prompt_of("Only this.", "override"),
    }
    async with running(env) as agent:
        sid = (await agent.call("session/new", params))["sessionId"]
        await agent.prompt(sid, "hello")
    assert system_of(fake_llm.requests[0].body).strip() == "Only this."


@pytest.mark.parametrize(
    ("prompt", "says"),
    [
        ({"mode": "replace", "content": [{"type": "text", "text": "x"}]}, "mode 'replace'"),
        ({"mode": "append", "content": []}, "non-empty list"),
        (
            {"mode": "append", "content": [{"type": "image", "data": "", "mimeType": "image/png"}]},
            "not a text block",
        ),
        ("be nice", "systemPrompt"),  # the typed decoding says so first
    ],
)
async def test_a_bad_system_prompt_is_32602_and_makes_no_session(
    tmp_path: Path, prompt: object, says: str
) -> None:
    env = agent_env(tmp_path / "home", LLM_PROVIDER="OPENAI", OPENAI_API_KEY="test")
    async with running(env) as agent:
        reply = await agent.request(
            "session/new", {"cwd": str(tmp_path), "mcpServers": [], "systemPrompt": prompt}
        )
        listed = await agent.call("session/list", {})
    assert reply["error"]["code"] == -32602 and says in reply["error"]["message"]
    assert listed["sessions"] == []
