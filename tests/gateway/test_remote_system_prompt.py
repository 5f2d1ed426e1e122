"""A remote ACP client's `systemPrompt` (ACP unstable) reaches the agent through the
gateway (gateway/remote/limits.py): our client over HTTP/SSE and WebSocket, ACP v1 and
v2, our agent on the fake LLM, whose request shows the instructions in the model's
system message; a reopened session carries them again; a bad one, or one for an agent
that does not take it, is -32602 naming `systemPrompt` before any session is made."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agentao.client import AgentError, AgentUrl, Client
from agentao.gateway.agent_protocol import takes_system_prompt
from agentao.gateway.config import AgentSpec
from agentao.server.client_prompt import APPEND_HEADING
from tests.fakes.fake_llm import FakeLLM
from tests.gateway.conftest import LiveGateway, llm_spec

pytestmark = pytest.mark.timeout(90)
RAW_AGENT = Path(__file__).with_name("raw_agent.py")  # an agent that is not ours
RULE = "Answer in the voice of a ship's captain."


def instructions(text: str, mode: str = "append") -> dict[str, Any]:
    return {"mode": mode, "content": [{"type": "text", "text": text}]}


def system_of(body: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "system")


def acp(gw: LiveGateway, scheme: str) -> AgentUrl:
    return AgentUrl(f"{scheme}://127.0.0.1:{gw.port}/acp")


@pytest.mark.parametrize(("scheme", "protocol"), [("http", 1), ("ws", 2)])
async def test_a_remote_client_s_system_prompt_reaches_the_agent_s_model(
    gateway_factory: Callable[..., LiveGateway],
    fake_llm: FakeLLM,
    tmp_path: Path,
    scheme: str,
    protocol: int,
) -> None:
    gw = gateway_factory(agents=(llm_spec(tmp_path, fake_llm.env()),))
    cwd = gw.config.agents[0].cwd
    async with Client(acp(gw, scheme), protocol=protocol) as client:
        assert takes_system_prompt(client)  # our agent's capability, passed on
        session = await client.new_session(cwd, system_prompt=instructions(RULE))
        async for _event in session.prompt("hello"):
            pass
    assert f"{APPEND_HEADING}\n{RULE}" in system_of(fake_llm.requests[-1].body)
    # The conversation keeps it: its session opened again on a new agent process has it.
    conv = gw.run(gw.gateway.conversations.by_session("agentao", session.id))
    assert conv.record.session_params["systemPrompt"] == instructions(RULE)


async def test_a_system_prompt_the_gateway_cannot_pass_is_refused(
    gateway_factory: Callable[..., LiveGateway], fake_llm: FakeLLM, tmp_path: Path
) -> None:
    raw = AgentSpec("raw", (sys.executable, str(RAW_AGENT)), cwd=str(tmp_path))
    ours = replace(llm_spec(tmp_path, fake_llm.env()), name="agentao")
    gw = gateway_factory(agents=(ours, raw))
    async with Client(acp(gw, "http")) as client:
        with pytest.raises(AgentError, match=r"at `\$\.systemPrompt`") as bad:
            await client.new_session(str(tmp_path / "work"), system_prompt="be nice")  # type: ignore[arg-type]
        assert bad.value.code == -32602  # the schema's check, before the gateway's own
    async with Client(AgentUrl(f"http://127.0.0.1:{gw.port}/agents/raw/acp")) as client:
        assert not takes_system_prompt(client)
        with pytest.raises(AgentError, match="does not take a systemPrompt") as refused:
            await client.new_session(str(tmp_path), system_prompt=instructions(RULE))
        assert refused.value.data == {"field": "systemPrompt"}
    assert gw.run(gw.gateway.store.list_conversations("local", 10)) == []  # none was made
