"""Fixtures the end-to-end tests share."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """An empty workspace directory for the agent's session (a test that needs files in it
    defines its own `ws`)."""
    path = tmp_path / "ws"
    path.mkdir()
    return path
