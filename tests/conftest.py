"""Fixtures shared by every test suite. Keep this small and generic."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.fake_llm import FakeLLM


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """An OpenAI/Anthropic-compatible HTTP server on 127.0.0.1 (see tests/fakes/fake_llm.py)."""
    with FakeLLM() as fake:
        yield fake
