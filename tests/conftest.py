"""Fixtures shared by every test suite. Keep this small and generic."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from agentao.agent.sandbox import Sandbox
from tests.fakes.fake_llm import FakeLLM


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """An OpenAI/Anthropic-compatible HTTP server on 127.0.0.1 (see tests/fakes/fake_llm.py)."""
    with FakeLLM() as fake:
        yield fake


@pytest.fixture(scope="session")
def sandbox() -> Sandbox:
    """The real bubblewrap sandbox. Where none can run the test is skipped, except in CI
    (`.ci/run` installs bubblewrap), where a missing sandbox is a failure."""
    real = Sandbox()
    status = real.status()
    if not status.available:
        if os.environ.get("CI"):
            pytest.fail(f"CI must be able to run the sandbox: {status.reason}")
        pytest.skip(f"no sandbox here: {status.reason}")
    return real
