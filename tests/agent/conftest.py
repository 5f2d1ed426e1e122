"""Fixtures every agent test shares: a workspace, and a tool context in it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentao.agent.tools.base import ToolContext
from tests.agent.doubles import make_ctx


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """An empty workspace directory, by its real path (tmp may sit behind a symlink)."""
    root = Path(os.path.realpath(tmp_path)) / "ws"
    root.mkdir()
    return root


@pytest.fixture
def ctx(ws: Path) -> ToolContext:
    return make_ctx(ws)
