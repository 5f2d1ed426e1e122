"""Fixtures shared by every test suite. Keep this small and generic."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentao.agent.sandbox import Sandbox
from tests.bytecode import compile_package
from tests.fakes.fake_llm import FakeLLM
from tests.npm_peers import NpmPeers, find_peers
from tests.postgres import PostgresServer, find_bindir


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # once, before the xdist workers start
        compile_package()


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """An OpenAI/Anthropic-compatible HTTP server on 127.0.0.1 (see tests/fakes/fake_llm.py)."""
    with FakeLLM() as fake:
        yield fake


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace `ws` (with `sub/data.txt`) and, beside it, `out` holding a secret that
    `ws/alt`, a symlink, points to: what the escape tests of the file paths try to reach."""
    base = Path(os.path.realpath(tmp_path))
    ws, out = base / "ws", base / "out"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "data.txt").write_text("INSIDE\n")
    out.mkdir()
    (out / "data.txt").write_text("TOP-SECRET\n")
    (ws / "alt").symlink_to(out)
    return ws, out


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


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A real PostgreSQL cluster on 127.0.0.1 for the whole session (see tests/postgres.py).
    Skipped only where PostgreSQL is not installed, except in CI (`.ci/run` installs it)."""
    server = PostgresServer.start(postgres_bindir())
    yield server
    server.stop()


def postgres_bindir() -> Path:
    """Where initdb and pg_ctl are; without them the test is skipped, or fails in CI
    (`.ci/run` installs PostgreSQL)."""
    bindir = find_bindir()
    if bindir is None:
        if os.environ.get("CI"):
            pytest.fail("CI must be able to run PostgreSQL: initdb/pg_ctl not found")
        pytest.skip("PostgreSQL is not installed here (no initdb/pg_ctl)")
    return bindir


@pytest.fixture
def pg_url(postgres_server: PostgresServer) -> str:
    """The URL of a new, empty database of its own for this test."""
    return postgres_server.create_database()


@pytest.fixture(scope="session")
def v2_peers() -> NpmPeers:
    """The real v2 peers from npm (tests/npm_peers.py): skipped where tests/peers is not
    installed, except in CI (`.ci/run` runs `npm ci` there), where that is a failure."""
    found = find_peers()
    if isinstance(found, str):
        if os.environ.get("CI"):
            pytest.fail(f"CI must be able to run the v2 peers: {found}")
        pytest.skip(found)
    return found
