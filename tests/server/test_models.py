"""A session's window budget (server/models.py)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from agentao.agent.catalog import Catalog
from agentao.agent.config import LlmConfig
from agentao.agent.context import ContextSettings
from agentao.server.models import budget_for


def test_a_models_window_is_logged_when_first_known_or_changed_not_per_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("AGENTAO_HOME", str(tmp_path))
    llm = LlmConfig("OPENAI", f"window-log-{tmp_path.name}")  # no other test's model
    caplog.set_level(logging.INFO, logger="agentao.server")

    def lines() -> list[str]:
        return [r.getMessage() for r in caplog.records if "context window" in r.getMessage()]

    for _ in range(3):  # three sessions open on the model
        assert budget_for(llm, Catalog(), ContextSettings()).window.tokens == 128_000
    assert lines() == [f"{llm.model_value}: context window 128000 tokens (default)"]
    budget_for(llm, Catalog(), ContextSettings(window_tokens=5000))
    budget_for(llm, Catalog(), ContextSettings())
    assert lines()[1:] == [
        f"{llm.model_value}: context window 5000 tokens (AGENTAO_CONTEXT_TOKENS)",
        f"{llm.model_value}: context window 128000 tokens (default)",
    ]
