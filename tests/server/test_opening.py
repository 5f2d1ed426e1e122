"""Building a session's parts (server/opening.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentao.agent.config import LlmConfig
from agentao.agent.instructions import find_instructions
from agentao.agent.sandbox import Sandbox, SandboxSettings
from agentao.agent.session import AgentSession
from agentao.server import opening
from agentao.server.opening import SessionFactory
from agentao.server.settings import ServerSettings


async def test_the_system_prompt_asks_a_thread_only_for_the_instructions_once_the_sandbox_is_known(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sandbox probe's answer is known once a session opened: reading it needs no
    thread hop (each cost more than the rest of building the prompt)."""
    sandbox = Sandbox(SandboxSettings(mode="off"))
    sandbox.status()
    # The prompt needs the settings and the sandbox only (no client, outbox or store).
    factory = SessionFactory(None, None, None, None, ServerSettings(), sandbox)  # type: ignore[arg-type]
    hops: list[object] = []
    real = asyncio.to_thread
    monkeypatch.setattr(opening.asyncio, "to_thread", lambda f, *a: hops.append(f) or real(f, *a))
    agent = AgentSession.new(tmp_path, LlmConfig("SCRIPTED", "s"))
    prompt = await factory.system_prompt(agent)
    assert hops == [find_instructions]
    assert str(tmp_path) in prompt and "not in a git repository" in prompt
